"""``custom``: a user's Python function ``module:attr``, or a registered check function.

The function receives the :class:`ScoringContext` and the check's ``args`` and
returns a bool, a float in [0, 1], a ``(passed, detail)`` pair or a CheckResult.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from toolproof.spec import CustomCheck

from ..base import CheckResult, ScoringContext, check, result

CustomFunction = Callable[..., Any]
_FUNCTIONS: dict[str, CustomFunction] = {}


def check_function(name: str) -> Callable[[CustomFunction], CustomFunction]:
    """Register a function usable as ``{kind: custom, function: NAME}``.

    Raises:
        ValueError: the name is taken.
    """

    def register(fn: CustomFunction) -> CustomFunction:
        if name in _FUNCTIONS:
            raise ValueError(f"check function {name!r} is already registered")
        _FUNCTIONS[name] = fn
        return fn

    return register


def _load(ref: str) -> CustomFunction:
    if ref in _FUNCTIONS:
        return _FUNCTIONS[ref]
    module_name, _, attr = ref.partition(":")
    if not attr:
        known = ", ".join(sorted(_FUNCTIONS)) or "none"
        raise LookupError(f"no check function {ref!r}; use 'module:attr' or one of: {known}")
    fn = importlib.import_module(module_name)
    for part in attr.split("."):
        fn = getattr(fn, part)
    if not callable(fn):
        raise LookupError(f"{ref} is not callable")
    return fn


@check("custom")
def evaluate(spec: CustomCheck, ctx: ScoringContext, index: int = 0) -> CheckResult:
    """Run the function; an exception fails the check with the error as detail."""
    try:
        outcome = _load(spec.function)(ctx, **spec.args)
    except Exception as exc:
        return result(spec, index, False, f"{spec.function} raised {type(exc).__name__}: {exc}")
    if isinstance(outcome, CheckResult):
        return outcome
    if isinstance(outcome, tuple):
        passed, detail = bool(outcome[0]), str(outcome[1])
        return result(spec, index, passed, detail)
    if isinstance(outcome, bool):
        return result(spec, index, outcome, f"{spec.function} returned {outcome}")
    if isinstance(outcome, int | float):
        value = max(0.0, min(1.0, float(outcome)))
        return result(spec, index, value >= 1.0, f"{spec.function} scored {value:g}", score=value)
    return result(
        spec, index, False, f"{spec.function} returned {type(outcome).__name__}, not a score"
    )
