"""The gateway: every call is checked, faulted, policed, timed and turned into a result."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof.spec import Fault, WorldSpec
from toolproof.tools import (
    Tool,
    ToolContext,
    ToolCrash,
    ToolError,
    ToolGateway,
    schema_from_function,
)
from toolproof.tools.pool import ToolPool
from toolproof.trajectory import ToolCall, ToolKind, ToolResult
from toolproof.worlds import World

_EXAMPLES = int(os.environ.get("TOOLPROOF_FUZZ_EXAMPLES", "60"))


def get_stock(ctx: ToolContext, product_id: str) -> dict[str, Any]:
    """Stock of one product.

    Args:
        product_id: The product's id.
    """
    products = ctx.world.records["products"]
    if product_id not in products:
        raise ToolError(f"no product {product_id!r}")
    return {"product_id": product_id, "stock": products[product_id]}


def restock(ctx: ToolContext, product_id: str, units: int) -> int:
    """Add units (a WRITE that does not call touch() itself).

    Args:
        product_id: The product's id.
        units: How many.
    """
    ctx.world.records["products"][product_id] += units
    return int(ctx.world.records["products"][product_id])


def sneaky(ctx: ToolContext) -> str:
    """A READ tool that changes the records anyway."""
    ctx.world.records["products"]["A"] = -1
    return "done"


def crash(ctx: ToolContext) -> str:
    """Fails with a bug."""
    raise KeyError("a bug in the tool")


def refuse(ctx: ToolContext) -> str:
    """Fails the way a tool should, with its own error kind."""
    raise ToolError("quota exhausted", kind="resource_limit")


async def slow(ctx: ToolContext, seconds: float) -> str:
    """Waits.

    Args:
        seconds: How long.
    """
    await asyncio.sleep(seconds)
    return "slept"


def blocking_sleep(ctx: ToolContext, seconds: float) -> str:
    """Blocks a thread.

    Args:
        seconds: How long.
    """
    time.sleep(seconds)
    return "slept"


def _tool(fn: Callable[..., Any], kind: ToolKind = ToolKind.READ, blocking: bool = False) -> Tool:
    schema = schema_from_function(fn, name=fn.__name__, kind=kind)
    return Tool(fn=fn, schema=schema, toolkit="test", blocking=blocking)


TOOLS = [
    _tool(get_stock),
    _tool(restock, ToolKind.WRITE),
    _tool(sneaky),
    _tool(crash),
    _tool(refuse),
    _tool(slow),
    _tool(blocking_sleep, blocking=True),
]


@pytest.fixture
def world() -> World:
    return World(WorldSpec(records={"products": {"A": 5, "B": 0}}))


def _gateway(world: World, **kwargs: Any) -> ToolGateway:
    return ToolGateway(TOOLS, ToolContext(world=world), **kwargs)


_ids = iter(range(10**6))


def _call(name: str, arguments: dict[str, Any] | None = None, raw: str | None = None) -> ToolCall:
    return ToolCall(id=f"c{next(_ids)}", name=name, arguments=arguments or {}, raw_arguments=raw)


async def test_a_valid_call_returns_json_content(world: World) -> None:
    call = _call("get_stock", {"product_id": "A"})
    result = await _gateway(world).call(call)
    assert result == ToolResult(
        call_id=call.id,
        name="get_stock",
        content='{"product_id": "A", "stock": 5}',
        duration_s=result.duration_s,
    )
    assert result.duration_s >= 0


async def test_unknown_tool_lists_the_tools(world: World) -> None:
    result = await _gateway(world).call(_call("get_stok", {"product_id": "A"}))
    assert result.is_error and result.error_kind == "unknown_tool"
    assert "no tool named 'get_stok'" in result.content
    assert "get_stock" in result.content and "restock" in result.content


async def test_arguments_that_are_not_json(world: World) -> None:
    result = await _gateway(world).call(_call("get_stock", raw='{"product_id": "A"'))
    assert result.is_error and result.error_kind == "invalid_arguments"
    assert "not valid JSON" in result.content and '{"product_id": "A"' in result.content


@pytest.mark.parametrize(
    ("arguments", "said"),
    [
        ({}, "'product_id' is a required property"),
        ({"product_id": 7}, "product_id: 7 is not of type 'string'"),
        ({"product_id": "A", "colour": "red"}, "Additional properties are not allowed"),
    ],
)
async def test_schema_invalid_arguments(world: World, arguments: dict[str, Any], said: str) -> None:
    result = await _gateway(world).call(_call("get_stock", arguments))
    assert result.is_error and result.error_kind == "invalid_arguments"
    assert said in result.content


async def test_tool_errors_become_error_results(world: World) -> None:
    gateway = _gateway(world)
    result = await gateway.call(_call("get_stock", {"product_id": "Z"}))
    assert (result.is_error, result.error_kind, result.content) == (
        True,
        "tool_error",
        "error: no product 'Z'",
    )
    own_kind = await gateway.call(_call("refuse"))
    assert own_kind.error_kind == "resource_limit"


async def test_a_crashing_tool_is_a_harness_failure(world: World) -> None:
    with pytest.raises(ToolCrash, match="tool 'crash' crashed: KeyError"):
        await _gateway(world).call(_call("crash"))


async def test_write_tools_mark_the_world_changed(world: World) -> None:
    gateway = _gateway(world)
    before = world.records_digest()
    await gateway.call(_call("sneaky"))  # a READ tool: the cached digest is not refreshed
    assert world.records_digest() == before
    await gateway.call(_call("restock", {"product_id": "B", "units": 2}))
    assert world.records_digest() != before
    assert world.records["products"]["B"] == 2
    assert gateway.kind("restock") is ToolKind.WRITE and gateway.kind("nope") is None


@pytest.mark.parametrize(
    ("error", "kind", "said"),
    [
        ("server_error", "fault", "HTTP 500"),
        ("timeout", "fault", "timed out"),
        ("rate_limit", "fault", "HTTP 429"),
    ],
)
async def test_error_faults(world: World, error: str, kind: str, said: str) -> None:
    gateway = _gateway(world, faults=[Fault(tool="get_stock", error=error)])  # type: ignore[arg-type]
    first = await gateway.call(_call("get_stock", {"product_id": "A"}))
    assert first.is_error and first.error_kind == kind and said in first.content
    second = await gateway.call(_call("get_stock", {"product_id": "A"}))
    assert not second.is_error and '"stock": 5' in second.content  # calls: [1] fails once


async def test_malformed_and_stale_faults_return_bogus_results(world: World) -> None:
    gateway = _gateway(
        world,
        faults=[
            Fault(tool="get_stock", when={"product_id": "A"}, error="malformed"),
            Fault(tool="get_stock", when={"product_id": "B"}, error="stale", result={"stock": 99}),
        ],
    )
    malformed = await gateway.call(_call("get_stock", {"product_id": "A"}))
    assert not malformed.is_error and malformed.content == '{"status": ok, "data": [}'
    stale = await gateway.call(_call("get_stock", {"product_id": "B"}))
    assert not stale.is_error and stale.content == '{"stock": 99}'


async def test_custom_fault_message_and_chosen_calls(world: World) -> None:
    fault = Fault(
        tool="get_stock", error="custom", message="error: warehouse offline", calls=[2, 3]
    )
    gateway = _gateway(world, faults=[fault])
    outcomes = [await gateway.call(_call("get_stock", {"product_id": "A"})) for _ in range(4)]
    assert [r.is_error for r in outcomes] == [False, True, True, False]
    assert outcomes[1].content == "error: warehouse offline"


async def test_when_filters_which_calls_count(world: World) -> None:
    gateway = _gateway(world, faults=[Fault(tool="get_stock", when={"product_id": "B"})])
    assert not (await gateway.call(_call("get_stock", {"product_id": "A"}))).is_error
    assert not (await gateway.call(_call("get_stock", {"product_id": "A"}))).is_error
    assert (await gateway.call(_call("get_stock", {"product_id": "B"}))).is_error
    assert not (await gateway.call(_call("get_stock", {"product_id": "B"}))).is_error


async def test_faults_apply_after_validation(world: World) -> None:
    gateway = _gateway(world, faults=[Fault(tool="get_stock")])
    invalid = await gateway.call(_call("get_stock", {}))
    assert invalid.error_kind == "invalid_arguments"
    faulted = await gateway.call(_call("get_stock", {"product_id": "A"}))
    assert faulted.error_kind == "fault"  # the invalid call did not use up the fault


async def test_policies_refuse_calls_before_they_run(world: World) -> None:
    def no_restock(call: ToolCall) -> str | None:
        return "restocking is not allowed in this track" if call.name == "restock" else None

    gateway = _gateway(world, policies=[no_restock])
    refused = await gateway.call(_call("restock", {"product_id": "A", "units": 1}))
    assert refused.is_error and refused.error_kind == "policy_violation"
    assert refused.content == "refused: restocking is not allowed in this track"
    assert world.records["products"]["A"] == 5
    assert not (await gateway.call(_call("get_stock", {"product_id": "A"}))).is_error


async def test_slow_tools_time_out(world: World) -> None:
    gateway = _gateway(world, timeout_s=0.2)
    started = time.monotonic()
    result = await gateway.call(_call("slow", {"seconds": 5}))
    assert result.is_error and result.error_kind == "timeout"
    assert "longer than 0.2s" in result.content
    assert time.monotonic() - started < 4
    blocked = await gateway.call(_call("blocking_sleep", {"seconds": 1.0}))
    assert blocked.error_kind == "timeout"  # a blocking tool runs in a thread, timed too
    ok = await _gateway(world, timeout_s=30).call(_call("blocking_sleep", {"seconds": 0.01}))
    assert ok.content == "slept"


def test_schemas_in_tool_order(world: World) -> None:
    assert [s.name for s in _gateway(world).schemas] == [t.name for t in TOOLS]


async def test_queue_wait_for_a_worker_is_not_charged_to_the_call(world: World) -> None:
    # 16 calls of 0.2 s on 2 threads: the last waits ~1.4 s for a thread, longer than the
    # 1 s timeout, yet each runs 0.2 s and none times out.
    pool = ToolPool(2)
    gateway = _gateway(world, timeout_s=1.0, pool=pool)
    try:
        results = await asyncio.gather(
            *(gateway.call(_call("blocking_sleep", {"seconds": 0.2})) for _ in range(16))
        )
    finally:
        pool.close()
    assert [r.error_kind for r in results] == [None] * 16
    assert all(r.content == "slept" for r in results)
    assert gateway.queue_s > 1.0  # the waits are counted, apart
    assert max(r.duration_s for r in results) < 1.0  # each call's time is the time it ran


async def test_a_call_cancelled_while_it_waits_for_a_worker_never_runs(world: World) -> None:
    pool = ToolPool(1)
    gateway = _gateway(world, timeout_s=30, pool=pool)
    ran: list[str] = []

    def mark(ctx: ToolContext) -> str:
        """Notes that it ran."""
        ran.append("ran")
        return "ran"

    marker = ToolGateway([_tool(mark, blocking=True)], ToolContext(world=world), pool=pool)
    try:
        busy = asyncio.ensure_future(gateway.call(_call("blocking_sleep", {"seconds": 0.5})))
        queued = asyncio.ensure_future(marker.call(_call("mark")))
        await asyncio.sleep(0.1)
        queued.cancel()
        with pytest.raises(asyncio.CancelledError):
            await queued
        assert (await busy).content == "slept"
    finally:
        pool.close()
    assert ran == []


async def test_a_result_that_cannot_be_shown_is_an_error_result(world: World) -> None:
    def huge(ctx: ToolContext) -> int:
        """A number too long to print."""
        return 10**5000

    gateway = ToolGateway([_tool(huge)], ToolContext(world=world))
    result = await gateway.call(_call("huge"))
    assert result.is_error and result.error_kind == "tool_error"
    assert "the tool's result cannot be shown (ValueError" in result.content
    assert gateway.crash is None


async def test_arguments_nested_past_the_validator_are_invalid(world: World) -> None:
    value: Any = "A"
    for _ in range(5000):
        value = [value]
    result = await _gateway(world).call(_call("get_stock", {"product_id": value}))
    assert result.error_kind == "invalid_arguments"


async def test_a_crash_is_kept_by_the_gateway(world: World) -> None:
    gateway = _gateway(world)
    with pytest.raises(ToolCrash):
        await gateway.call(_call("crash"))
    assert gateway.crash == "tool 'crash' crashed: KeyError: 'a bug in the tool'"


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=8,
)


@settings(max_examples=_EXAMPLES, derandomize=True, deadline=None)
@given(
    arguments=st.dictionaries(
        st.sampled_from(["product_id", "units", "x", "b", "a"]), _JSON, max_size=4
    )
)
def test_a_kept_verdict_is_the_validators_own(arguments: dict[str, Any]) -> None:
    """The gateway keeps the argument check's verdict per tool and argument JSON: asked
    again (same object, an equal copy, the same keys in another order) it says exactly
    what the validator says for those arguments."""
    from toolproof.tools.gateway import _argument_errors

    tool = _tool(restock, ToolKind.WRITE)

    def direct(args: dict[str, Any]) -> str:
        errors = sorted(tool.validator().iter_errors(args), key=lambda e: list(e.path))
        return "; ".join(
            f"{'.'.join(str(p) for p in e.path) or 'arguments'}: {e.message}" for e in errors
        )

    reordered = dict(reversed(list(arguments.items())))
    for args in (arguments, dict(arguments), reordered, arguments):
        assert _argument_errors(tool, args) == direct(args)
