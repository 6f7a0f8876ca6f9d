"""A calendar of events, kept in the records under ``events``.

Record layout: ``events: {ID: {title, date, start, end, attendees, location, status}}``
with dates as ``YYYY-MM-DD`` and times as ``HH:MM`` (24 h). ``status`` is
``confirmed`` when absent; cancelling sets it to ``cancelled`` and keeps the
event, so a grader can see what was cancelled. Two events that are not
cancelled conflict when they share a date and their times overlap; creating or
moving an event into a conflict is refused. New events get the first free id
``E<n>`` counting from the number of events plus one.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from toolproof.trajectory import ToolKind

from ..base import ToolContext, ToolError, tool

_TIME = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)$")


def _events(ctx: ToolContext) -> dict[str, Any]:
    events = ctx.world.records.setdefault("events", {})
    assert isinstance(events, dict)
    return events


def _event(ctx: ToolContext, event_id: str) -> dict[str, Any]:
    events = _events(ctx)
    if event_id not in events:
        raise ToolError(f"no event with id {event_id!r}; list_events shows the ids")
    item = events[event_id]
    assert isinstance(item, dict)
    return item


def _minutes(value: str, field: str) -> int:
    match = _TIME.match(value.strip())
    if match is None:
        raise ToolError(f"{field} must be a time like '09:30' (24 h), got {value!r}")
    return int(match.group(1)) * 60 + int(match.group(2))


def _clock(minutes: int) -> str:
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def _date(value: str, field: str = "date") -> str:
    try:
        return dt.date.fromisoformat(value.strip()).isoformat()
    except ValueError:
        raise ToolError(f"{field} must be a date like '2026-03-02', got {value!r}") from None


def _active(item: dict[str, Any]) -> bool:
    return str(item.get("status", "confirmed")) != "cancelled"


def _view(event_id: str, item: dict[str, Any]) -> dict[str, Any]:
    weekday = dt.date.fromisoformat(str(item["date"])).strftime("%A")
    return {
        "event_id": event_id,
        "title": item.get("title"),
        "date": item.get("date"),
        "weekday": weekday,
        "start": item.get("start"),
        "end": item.get("end"),
        "attendees": item.get("attendees", []),
        "location": item.get("location", ""),
        "status": item.get("status", "confirmed"),
    }


def _conflicts(
    ctx: ToolContext, date: str, start: int, end: int, ignore: str | None = None
) -> list[str]:
    found = []
    for eid, item in sorted(_events(ctx).items()):
        if eid == ignore or not _active(item) or item.get("date") != date:
            continue
        other_start = _minutes(str(item.get("start")), "start")
        other_end = _minutes(str(item.get("end")), "end")
        if start < other_end and other_start < end:
            found.append(f"{eid} {item.get('title')!r} {item.get('start')}-{item.get('end')}")
    return found


def _span(start: str, end: str) -> tuple[int, int]:
    first, last = _minutes(start, "start"), _minutes(end, "end")
    if last <= first:
        raise ToolError(f"end {end} must be after start {start}")
    return first, last


def _next_id(table: dict[str, Any], prefix: str) -> str:
    number = len(table) + 1
    while f"{prefix}{number}" in table:
        number += 1
    return f"{prefix}{number}"


@tool(kind=ToolKind.READ)
def list_events(
    ctx: ToolContext,
    date: str | None = None,
    end_date: str | None = None,
    attendee: str | None = None,
    include_cancelled: bool = False,
) -> list[dict[str, Any]]:
    """List calendar events in date and time order.

    Args:
        date: Only events on this day (YYYY-MM-DD), or from this day on when end_date is given.
        end_date: Last day of a date range (inclusive), e.g. "2026-03-06".
        attendee: Only events whose attendees include this text (name or email, any case).
        include_cancelled: Also list cancelled events.
    """
    first = _date(date) if date is not None else None
    last = _date(end_date, "end_date") if end_date is not None else first
    needle = attendee.strip().lower() if attendee else None
    out = []
    for eid, item in _events(ctx).items():
        day = str(item.get("date"))
        if first is not None and day < first:
            continue
        if last is not None and day > last:
            continue
        if not include_cancelled and not _active(item):
            continue
        if needle is not None and not any(
            needle in str(a).lower() for a in item.get("attendees", [])
        ):
            continue
        out.append(_view(eid, item))
    return sorted(out, key=lambda e: (e["date"], e["start"], e["event_id"]))


@tool(kind=ToolKind.READ)
def get_event(ctx: ToolContext, event_id: str) -> dict[str, Any]:
    """Return one event's details.

    Args:
        event_id: The event's id, e.g. "E3".
    """
    return _view(event_id, _event(ctx, event_id))


@tool(kind=ToolKind.READ)
def find_free_slots(
    ctx: ToolContext,
    date: str,
    duration_minutes: int,
    earliest: str = "09:00",
    latest: str = "17:00",
) -> list[dict[str, str]]:
    """Find free periods on a day that are long enough for a meeting.

    Args:
        date: The day, YYYY-MM-DD.
        duration_minutes: The meeting length in minutes, at least 5.
        earliest: Start of the working day, HH:MM.
        latest: End of the working day, HH:MM.
    """
    day = _date(date)
    if duration_minutes < 5:
        raise ToolError("duration_minutes must be at least 5")
    open_from, close_at = _span(earliest, latest)
    busy = sorted(
        (_minutes(str(i.get("start")), "start"), _minutes(str(i.get("end")), "end"))
        for i in _events(ctx).values()
        if _active(i) and i.get("date") == day
    )
    free: list[dict[str, str]] = []
    cursor = open_from
    for start, end in [*busy, (close_at, close_at)]:
        start, end = max(start, open_from), min(end, close_at)
        if start - cursor >= duration_minutes:
            free.append({"start": _clock(cursor), "end": _clock(start)})
        cursor = max(cursor, end)
    return free


@tool(kind=ToolKind.WRITE)
def create_event(
    ctx: ToolContext,
    title: str,
    date: str,
    start: str,
    end: str,
    attendees: list[str] | None = None,
    location: str = "",
) -> dict[str, Any]:
    """Add an event to the calendar. Refused when it overlaps an existing event.

    Args:
        title: What the event is, e.g. "Budget review".
        date: The day, YYYY-MM-DD.
        start: Start time, HH:MM (24 h).
        end: End time, HH:MM, after the start.
        attendees: Email addresses (or names) of the people invited.
        location: Where it takes place.
    """
    if not title.strip():
        raise ToolError("title must not be empty")
    day = _date(date)
    first, last = _span(start, end)
    clash = _conflicts(ctx, day, first, last)
    if clash:
        raise ToolError(
            f"conflicts with {'; '.join(clash)}; pick a free time (see find_free_slots)"
        )
    events = _events(ctx)
    event_id = _next_id(events, "E")
    events[event_id] = {
        "title": title.strip(),
        "date": day,
        "start": _clock(first),
        "end": _clock(last),
        "attendees": list(attendees or []),
        "location": location,
    }
    return _view(event_id, events[event_id])


@tool(kind=ToolKind.WRITE)
def move_event(
    ctx: ToolContext, event_id: str, date: str, start: str, end: str | None = None
) -> dict[str, Any]:
    """Move an event to another day or time. Refused when the new time overlaps another event.

    Args:
        event_id: The event to move, e.g. "E3".
        date: The new day, YYYY-MM-DD.
        start: The new start time, HH:MM.
        end: The new end time; by default the event keeps its length.
    """
    item = _event(ctx, event_id)
    if not _active(item):
        raise ToolError(f"event {event_id} is cancelled and cannot be moved")
    day = _date(date)
    first = _minutes(start, "start")
    if end is None:
        length = _minutes(str(item["end"]), "end") - _minutes(str(item["start"]), "start")
        last = first + length
        if last >= 24 * 60:
            raise ToolError(f"moving {event_id} to {start} would run past midnight")
    else:
        first, last = _span(start, end)
    clash = _conflicts(ctx, day, first, last, ignore=event_id)
    if clash:
        raise ToolError(
            f"conflicts with {'; '.join(clash)}; pick a free time (see find_free_slots)"
        )
    item.update(date=day, start=_clock(first), end=_clock(last))
    return _view(event_id, item)


@tool(kind=ToolKind.WRITE)
def cancel_event(ctx: ToolContext, event_id: str) -> dict[str, Any]:
    """Cancel an event (it stays in the calendar, marked cancelled).

    Args:
        event_id: The event to cancel, e.g. "E3".
    """
    item = _event(ctx, event_id)
    if not _active(item):
        raise ToolError(f"event {event_id} is already cancelled")
    item["status"] = "cancelled"
    return _view(event_id, item)


def has_event(
    ctx: Any,
    title: str,
    date: str,
    start: str | None = None,
    end: str | None = None,
    attendees: list[str] | None = None,
    count: int = 1,
) -> tuple[bool, str]:
    """Custom check: exactly ``count`` active events on ``date`` whose title contains ``title``.

    Args:
        ctx: The scoring context (anything with a ``final`` snapshot).
        title: Text the title must contain (any case).
        date: The day, YYYY-MM-DD.
        start: The start time every matching event must have.
        end: The end time every matching event must have.
        attendees: Addresses or names that must all be among each event's attendees.
        count: How many such events there must be (0: none).
    """
    events = ctx.final.records.get("events", {}) or {}
    found = {
        eid: item
        for eid, item in sorted(events.items())
        if _active(item)
        and item.get("date") == date
        and title.lower() in str(item.get("title", "")).lower()
    }
    if len(found) != count:
        names = ", ".join(f"{e} {i.get('start')}" for e, i in found.items()) or "none"
        return False, f"{len(found)} active {title!r} events on {date} ({names}), expected {count}"
    for eid, item in found.items():
        if start is not None and item.get("start") != start:
            return False, f"{eid} starts at {item.get('start')}, expected {start}"
        if end is not None and item.get("end") != end:
            return False, f"{eid} ends at {item.get('end')}, expected {end}"
        invited = {str(a).lower() for a in item.get("attendees", [])}
        missing = [a for a in attendees or [] if str(a).lower() not in invited]
        if missing:
            return False, f"{eid} does not invite {', '.join(missing)}"
    return True, f"{count} matching {title!r} events on {date}"
