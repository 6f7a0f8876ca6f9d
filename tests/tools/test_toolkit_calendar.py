"""The calendar toolkit: events with conflicts, free slots, and the has_event check."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from toolproof.spec import WorldSpec
from toolproof.tools import ToolContext, ToolGateway, load_builtin, registry
from toolproof.tools.toolkits.calendar import has_event
from toolproof.trajectory import ToolCall, ToolResult
from toolproof.worlds import World

TOOLS = [
    "list_events",
    "get_event",
    "find_free_slots",
    "create_event",
    "move_event",
    "cancel_event",
]


def make_world() -> World:
    return World(
        WorldSpec(
            records={
                "events": {
                    "A1": {
                        "title": "Standup",
                        "date": "2026-03-02",
                        "start": "09:00",
                        "end": "09:15",
                        "attendees": ["team@acme.test"],
                    },
                    "A2": {
                        "title": "Review",
                        "date": "2026-03-02",
                        "start": "10:00",
                        "end": "11:00",
                        "attendees": ["noor@acme.test"],
                        "location": "Room A",
                    },
                    "A3": {
                        "title": "Old sync",
                        "date": "2026-03-02",
                        "start": "11:00",
                        "end": "11:30",
                        "attendees": ["noor@acme.test"],
                        "status": "cancelled",
                    },
                    "A4": {
                        "title": "Retro",
                        "date": "2026-03-04",
                        "start": "16:00",
                        "end": "17:00",
                        "attendees": [],
                    },
                }
            }
        )
    )


@pytest.fixture
def world() -> World:
    return make_world()


async def call(world: World, tool: str, /, **arguments: Any) -> ToolResult:
    load_builtin()
    gateway = ToolGateway([registry()[n] for n in TOOLS], ToolContext(world=world))
    return await gateway.call(ToolCall(id="c", name=tool, arguments=arguments))


async def ok(world: World, tool: str, /, **arguments: Any) -> Any:
    result = await call(world, tool, **arguments)
    assert not result.is_error, result.content
    return json.loads(result.content)


async def error(world: World, tool: str, /, **arguments: Any) -> str:
    result = await call(world, tool, **arguments)
    assert result.is_error, result.content
    return result.content


async def test_list_events_filters_and_hides_cancelled(world: World) -> None:
    day = await ok(world, "list_events", date="2026-03-02")
    assert [e["event_id"] for e in day] == ["A1", "A2"]
    assert day[0]["weekday"] == "Monday" and day[1]["location"] == "Room A"
    week = await ok(
        world, "list_events", date="2026-03-02", end_date="2026-03-06", include_cancelled=True
    )
    assert [e["event_id"] for e in week] == ["A1", "A2", "A3", "A4"]
    assert [e["event_id"] for e in await ok(world, "list_events", attendee="NOOR")] == ["A2"]
    assert len(await ok(world, "list_events")) == 3
    assert "date must be a date" in await error(world, "list_events", date="March 2")


async def test_get_event_and_unknown_ids(world: World) -> None:
    assert (await ok(world, "get_event", event_id="A4"))["title"] == "Retro"
    assert "no event with id 'Z9'" in await error(world, "get_event", event_id="Z9")


async def test_create_event_gets_the_next_free_id_and_refuses_conflicts(world: World) -> None:
    made = await ok(
        world,
        "create_event",
        title="Lunch",
        date="2026-03-02",
        start="12:00",
        end="13:00",
        attendees=["kim@acme.test"],
    )
    assert made["event_id"] == "E5"
    assert world.records["events"]["E5"]["attendees"] == ["kim@acme.test"]
    clash = await error(
        world, "create_event", title="X", date="2026-03-02", start="10:30", end="11:15"
    )
    assert "conflicts with A2 'Review' 10:00-11:00" in clash
    # a cancelled event does not block its time; back-to-back is no conflict
    assert (
        await ok(world, "create_event", title="Y", date="2026-03-02", start="11:00", end="11:30")
    )["event_id"] == "E6"
    assert "end 09:00 must be after start 10:00" in await error(
        world, "create_event", title="Z", date="2026-03-03", start="10:00", end="09:00"
    )
    assert "start must be a time" in await error(
        world, "create_event", title="Z", date="2026-03-03", start="9am", end="10:00"
    )
    assert "title must not be empty" in await error(
        world, "create_event", title=" ", date="2026-03-03", start="09:00", end="10:00"
    )


async def test_move_event_keeps_the_length_and_checks_conflicts(world: World) -> None:
    moved = await ok(world, "move_event", event_id="A2", date="2026-03-03", start="14:30")
    assert (moved["date"], moved["start"], moved["end"]) == ("2026-03-03", "14:30", "15:30")
    stretched = await ok(
        world, "move_event", event_id="A2", date="2026-03-03", start="14:00", end="16:00"
    )
    assert stretched["end"] == "16:00"
    assert "conflicts with A4" in await error(
        world, "move_event", event_id="A1", date="2026-03-04", start="16:10"
    )
    assert "cancelled and cannot be moved" in await error(
        world, "move_event", event_id="A3", date="2026-03-05", start="10:00"
    )
    assert "past midnight" in await error(
        world, "move_event", event_id="A4", date="2026-03-05", start="23:30"
    )


async def test_cancel_event_marks_it_and_refuses_twice(world: World) -> None:
    assert (await ok(world, "cancel_event", event_id="A2"))["status"] == "cancelled"
    assert world.records["events"]["A2"]["status"] == "cancelled"
    assert "already cancelled" in await error(world, "cancel_event", event_id="A2")


async def test_find_free_slots(world: World) -> None:
    slots = await ok(world, "find_free_slots", date="2026-03-02", duration_minutes=30)
    assert slots == [
        {"start": "09:15", "end": "10:00"},
        {"start": "11:00", "end": "17:00"},
    ]
    late = await ok(
        world,
        "find_free_slots",
        date="2026-03-04",
        duration_minutes=60,
        earliest="13:00",
        latest="18:00",
    )
    assert late == [{"start": "13:00", "end": "16:00"}, {"start": "17:00", "end": "18:00"}]
    assert "at least 5" in await error(
        world, "find_free_slots", date="2026-03-02", duration_minutes=2
    )


def test_has_event_counts_active_matching_events(world: World) -> None:
    final = SimpleNamespace(final=world.snapshot())
    assert has_event(
        final, title="review", date="2026-03-02", start="10:00", attendees=["Noor@acme.test"]
    )[0]
    assert has_event(final, title="Old sync", date="2026-03-02", count=0)[0]
    passed, detail = has_event(final, title="Review", date="2026-03-02", start="10:30")
    assert not passed and "starts at 10:00" in detail
    passed, detail = has_event(final, title="Review", date="2026-03-02", end="10:30")
    assert not passed and "ends at 11:00" in detail
    passed, detail = has_event(final, title="Review", date="2026-03-02", attendees=["kim@x.test"])
    assert not passed and "does not invite kim@x.test" in detail
    passed, detail = has_event(final, title="Standup", date="2026-03-03")
    assert not passed and "0 active 'Standup' events" in detail
