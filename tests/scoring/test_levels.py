"""Levels: perfect, acceptable, partial, fail; progress versus guards, vetoes, terminations."""

from __future__ import annotations

from typing import Any

import pytest

from toolproof.scoring import Level
from toolproof.trajectory import Termination
from toolproof.worlds import World

from .scoring_kit import score

SAYS_7 = {"kind": "output", "name": "says_7", "number": 7}
SAYS_BOLT = {"kind": "output", "name": "says_bolt", "contains": ["bolt"]}
LOOKED_UP = {"kind": "process", "name": "looked_up", "must_call": ["get_stock"]}
NO_ADJUST = {"kind": "process", "name": "no_adjust", "must_not_call": ["adjust_stock"]}
KEPT = {"kind": "state", "name": "kept", "unchanged_elsewhere": True}
STOCK_10 = {"kind": "state", "name": "stock_10", "records": {"products.A.stock": 10}}
LOOKUP: Any = ("get_stock", {"product_id": "A"})
ADJUST: Any = ("adjust_stock", {"product_id": "A", "delta": 3})
TWO = {"world": {"records": {"products": {"A": {"stock": 7}, "B": {"stock": 1}}}}}


def _set(path: str, value: Any) -> Any:
    def mutate(world: World) -> None:
        world.records.setdefault("products", {}).setdefault(path, {})["stock"] = value

    return mutate


def test_all_checks_and_efficient_is_perfect() -> None:
    result = score([SAYS_7, LOOKED_UP], answer="7", calls=[LOOKUP])
    assert (result.level, result.passed, result.fraction) == (Level.PERFECT, True, 1.0)
    assert result.tool_calls == 1 and result.termination is Termination.COMPLETED
    assert [c.name for c in result.checks] == ["says_7", "looked_up"]
    assert not result.task_error


def test_all_checks_but_wasteful_is_acceptable() -> None:
    # One reference call: perfect allows 1 + ceil(1 / 2) = 2 calls.
    assert score([SAYS_7], answer="7", calls=[LOOKUP] * 2).level is Level.PERFECT
    result = score([SAYS_7], answer="7", calls=[LOOKUP] * 3)
    assert (result.level, result.passed) == (Level.ACCEPTABLE, True)


def test_half_the_progress_weight_is_partial_and_less_is_fail() -> None:
    result = score([SAYS_7, SAYS_BOLT], answer="7")
    assert (result.level, result.passed, result.fraction) == (Level.PARTIAL, False, 0.5)
    heavy = {**SAYS_BOLT, "weight": 3}
    result = score([SAYS_7, heavy], answer="7")
    assert (result.level, result.fraction) == (Level.FAIL, 0.25)
    assert score([SAYS_7], answer="8").level is Level.FAIL


def test_guards_that_pass_give_no_credit() -> None:
    """Doing nothing passes every guard, so guards alone are worth nothing."""
    result = score([SAYS_7, LOOKED_UP, NO_ADJUST, KEPT], answer="")
    assert (result.level, result.fraction) == (Level.FAIL, 0.0)
    guards = {c.name: c.guard for c in result.checks}
    assert guards == {"says_7": False, "looked_up": True, "no_adjust": True, "kept": True}
    # A passing guard does not dilute real progress either.
    assert score([SAYS_7, SAYS_BOLT, KEPT], answer="7").fraction == 0.5


def test_a_failed_guard_keeps_the_episode_from_passing() -> None:
    result = score([SAYS_7, LOOKED_UP], answer="7")
    assert (result.level, result.passed, result.fraction) == (Level.PARTIAL, False, 1.0)


def test_a_state_check_credits_only_required_changes() -> None:
    """A listed value that already held at the start is a guard, not progress."""
    both = {"kind": "state", "records": {"products.A.stock": 10, "products.B.stock": 1}}
    idle = score([both], answer="", **TWO)
    assert (idle.level, idle.fraction, idle.checks[0].score) == (Level.FAIL, 0.0, 0.0)
    done = score([both], answer="", mutate=_set("A", 10), **TWO)
    assert (done.level, done.fraction) == (Level.PERFECT, 1.0)
    only_kept = {"kind": "state", "records": {"products.B.stock": 1}}
    assert score([only_kept, SAYS_7], answer="7", **TWO).checks[0].guard


@pytest.mark.parametrize(
    ("checks", "kwargs", "why"),
    [
        ([SAYS_7, {"kind": "evidence", "forbid": ["B"]}], {"answer": "7, not B"}, "forbidden"),
        ([SAYS_7, NO_ADJUST], {"answer": "7", "calls": [ADJUST]}, "not allowed"),
        ([SAYS_7, KEPT], {"answer": "7", "mutate": _set("A", 8)}, "unexpected change"),
        (
            [SAYS_7, {"kind": "state", "records": {"products.B.stock": 1}}],
            {"answer": "7", "mutate": _set("B", 0), **TWO},
            "products.B.stock is 0",
        ),
    ],
    ids=["leaked", "forbidden-call", "collateral", "broke-what-had-to-stay"],
)
def test_a_veto_fails_even_when_everything_else_passes(
    checks: list[dict[str, Any]], kwargs: dict[str, Any], why: str
) -> None:
    result = score(checks, **kwargs)
    assert (result.level, result.passed, result.fraction) == (Level.FAIL, False, 0.0)
    vetoes = [c for c in result.checks if c.veto]
    assert len(vetoes) == 1 and why in vetoes[0].detail, vetoes


@pytest.mark.parametrize(
    "termination",
    [Termination.GAVE_UP, Termination.STEP_LIMIT, Termination.TIMEOUT, Termination.LOOP],
)
def test_an_episode_that_did_not_complete_is_at_best_partial(termination: Termination) -> None:
    result = score([SAYS_7, LOOKED_UP], answer="7", calls=[LOOKUP], termination=termination)
    assert (result.level, result.passed, result.termination) == (Level.PARTIAL, False, termination)


def test_infra_errors_are_fail() -> None:
    result = score([SAYS_7], answer="7", termination=Termination.INFRA_ERROR)
    assert (result.level, result.passed) == (Level.FAIL, False)


def test_custom_level_rules() -> None:
    levels = {
        "perfect": {"checks": ["says_7"], "max_steps": 2},
        "acceptable": {"checks": ["says_7"]},
        "partial": {"checks": ["says_bolt"], "min_fraction": 0.4},
    }
    checks = [SAYS_7, SAYS_BOLT]
    # Only says_7 matters for perfect; two steps (one call and the answer) fit.
    assert score(checks, answer="7", calls=[LOOKUP], levels=levels).level is Level.PERFECT
    result = score(checks, answer="7", calls=[LOOKUP] * 2, levels=levels)
    assert result.level is Level.ACCEPTABLE  # three steps is too many for perfect
    partial = score(checks, answer="8 bolts", calls=[LOOKUP], levels=levels)
    assert (partial.level, partial.fraction) == (Level.PARTIAL, 0.5)
    strict = levels | {"perfect": {"min_fraction": 1}}
    assert score(checks, answer="7", levels=strict).level is Level.ACCEPTABLE


def test_a_rule_naming_only_guards_still_needs_progress() -> None:
    """Even a rule that validation would refuse cannot credit doing nothing."""
    levels = {"acceptable": {"checks": ["looked_up"]}, "partial": {"checks": []}}
    result = score([SAYS_7, LOOKED_UP], answer="", calls=[LOOKUP], levels=levels)
    assert (result.level, result.fraction) == (Level.FAIL, 0.0)


def test_max_tool_calls_rule() -> None:
    levels = {"perfect": {"max_tool_calls": 0}}
    assert score([SAYS_7], answer="7", levels=levels).level is Level.PERFECT
    assert score([SAYS_7], answer="7", calls=[LOOKUP], levels=levels).level is Level.ACCEPTABLE


def test_a_crashing_check_fails_alone() -> None:
    crashing = {"kind": "state", "files": {"../../etc/passwd": "x"}, "unchanged_elsewhere": True}
    result = score([SAYS_7, crashing], answer="7", world={"workspace": True})
    names = {c.name: c for c in result.checks}
    assert names["says_7"].passed
    assert not names["state_1"].passed
    assert "check crashed: PathEscapeError" in names["state_1"].detail
    assert result.level is Level.PARTIAL


def test_a_broken_custom_check_makes_the_episode_a_task_error() -> None:
    broken = {"kind": "custom", "function": "toolproof_no_such_module:f"}
    result = score([SAYS_7, broken], answer="7", calls=[LOOKUP])
    assert (result.task_error, result.passed, result.level) == (True, False, Level.FAIL)
    assert result.failure_mode is None  # nothing is blamed on the agent


def test_vetoes_keep_their_failure_modes() -> None:
    collateral = score([SAYS_7, KEPT], answer="7", mutate=_set("A", 8))
    assert collateral.failure_mode == "collateral_damage"
    broken = {"kind": "state", "records": {"products.B.stock": 1}}
    damaged = score([SAYS_7, broken], answer="7", mutate=_set("B", 0), **TWO)
    assert damaged.failure_mode == "collateral_damage"
    forbidden = score([SAYS_7, NO_ADJUST], answer="7", calls=[LOOKUP, ADJUST])
    assert (forbidden.failure_mode, forbidden.failure_step) == ("forbidden_action_or_output", 1)
