"""BFCL's stateful backends as a toolproof world: the real classes, rebuilt from a call log.

A multi-turn task's world holds, in its records (``bfcl``), the entry's involved
classes, their initial configuration, the long-context flag and the log of every
call executed so far. The live instances of ``bfcl_eval``'s own backend classes
(GorillaFileSystem, MathAPI, MessageAPI, TwitterAPI, TicketAPI, TradingBot,
TravelAPI, VehicleControlAPI) are kept in ``world.extras`` beside it. Each tool
call runs the real method; when the log and the instances disagree (a snapshot
was restored, an episode resumed from a step), the instances are rebuilt from the
configuration and the log is replayed: the backends are deterministic given the
configuration (their random generators are seeded from it) and the flag.

Methods are called with keyword arguments, never through ``eval``; results are
turned into text the way ``execute_multi_turn_func_call`` turns them, and a
method that raises answers ``Error during execution: ...`` as it does in BFCL.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import json
from functools import cache
from typing import Any

from toolproof.tools import ToolContext, ToolError, tool_handler

from . import _bfcl_upstream as upstream

RECORDS_KEY = "bfcl"
"""The world records holding the backends' configuration and call log."""
EXTRAS_KEY = "bfcl.backends"
"""Where the live instances are kept in ``world.extras``."""
HANDLER = "bfcl.call"
"""The tool handler BFCL's multi-turn tools name."""


def _backend_config() -> tuple[dict[str, str], list[str]]:
    upstream.require()
    from bfcl_eval.constants.executable_backend_config import (
        CLASS_FILE_PATH_MAPPING,
        STATELESS_CLASSES,
    )

    return dict(CLASS_FILE_PATH_MAPPING), list(STATELESS_CLASSES)


def _backend_class(path: str, name: str) -> Any:
    """One of BFCL's backend classes.

    Raises:
        UpstreamMissing: a module the backend imports is missing (MathAPI needs mpmath).
    """
    try:
        module = importlib.import_module(path)
    except ImportError as exc:
        raise upstream.UpstreamMissing(
            f"BFCL's {name} backend needs {exc.name}: {upstream.EXTRA_HINT}"
        ) from None
    return getattr(module, name)


def initial_records(entry: dict[str, Any]) -> dict[str, Any]:
    """The world records of a multi-turn entry (configuration and an empty call log)."""
    classes = list(entry["involved_classes"])
    config = entry.get("initial_config", {})
    return {
        RECORDS_KEY: {
            "classes": classes,
            "config": {name: config[name] for name in classes if name in config},
            "long_context": "long_context" in str(entry["id"]),
            "calls": [],
        }
    }


def result_text(value: Any) -> str:
    """A method's return value as BFCL's executor hands it to the model."""
    if type(value) is str:
        return value
    if type(value) is dict:
        try:
            return json.dumps(value)
        except (TypeError, ValueError):
            return str(value)
    return str(value)


class Backends:
    """The live backend instances of one episode and the calls applied to them."""

    def __init__(self, classes: list[str], config: dict[str, Any], long_context: bool) -> None:
        paths, stateless = _backend_config()
        self.instances: dict[str, Any] = {}
        self.methods: dict[str, Any] = {}
        for name in classes:
            if name not in paths:
                raise ValueError(f"{name!r} is not one of BFCL's backend classes")
            instance = _backend_class(paths[name], name)()
            if name not in stateless:
                instance._load_scenario(
                    copy.deepcopy(config.get(name, {})), long_context=long_context
                )
            self.instances[name] = instance
            for method_name, method in inspect.getmembers(instance, predicate=inspect.ismethod):
                if not method_name.startswith("_"):
                    self.methods[method_name] = method
        self.applied: list[dict[str, Any]] = []

    def run(self, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
        """``(ok, text)``: run one method with keyword arguments, as BFCL runs it."""
        self.applied.append({"name": name, "arguments": copy.deepcopy(arguments)})
        method = self.methods.get(name)
        if method is None:
            return False, f"Error during execution: name {name!r} is not defined"
        try:
            return True, result_text(method(**copy.deepcopy(arguments)))
        except Exception as exc:  # the agent's arguments made the backend fail, as in BFCL
            return False, f"Error during execution: {exc}"


def backends(state: dict[str, Any], extras: dict[str, Any]) -> Backends:
    """The live instances for ``state``, rebuilt and replayed when they have drifted from it."""
    live = extras.get(EXTRAS_KEY)
    calls = state.get("calls", [])
    if not isinstance(live, Backends) or live.applied != calls:
        live = Backends(
            list(state["classes"]), state.get("config", {}), bool(state["long_context"])
        )
        for call in calls:
            live.run(call["name"], call["arguments"])
        extras[EXTRAS_KEY] = live
    return live


def method_parameters(classes: list[str]) -> dict[str, list[str]]:
    """Each public method's parameter names, in order (to read positional ground truth)."""
    out: dict[str, list[str]] = {}
    for name in classes:
        out.update({k: list(v) for k, v in _class_parameters(name).items()})
    return out


@cache
def _class_parameters(name: str) -> dict[str, tuple[str, ...]]:
    paths, _ = _backend_config()
    cls = _backend_class(paths[name], name)
    return {
        method_name: tuple(inspect.signature(fn).parameters)[1:]  # without self
        for method_name, fn in inspect.getmembers(cls, predicate=inspect.isfunction)
        if not method_name.startswith("_")
    }


@tool_handler(HANDLER)
def call(ctx: ToolContext, name: str, arguments: dict[str, Any]) -> str:
    """Run one BFCL tool call on the episode's backends and log it in the records.

    Raises:
        ToolError: the method raised (BFCL's ``Error during execution`` text), or the
            task's world holds no BFCL backends.
    """
    state = ctx.world.records.get(RECORDS_KEY)
    if not isinstance(state, dict) or "classes" not in state:
        raise ToolError(f"this world has no {RECORDS_KEY!r} records: not a BFCL multi-turn task")
    live = backends(state, ctx.world.extras)
    ok, text = live.run(name, arguments)
    state.setdefault("calls", []).append(copy.deepcopy(live.applied[-1]))
    ctx.world.touch()
    if not ok:
        raise ToolError(text)
    return text
