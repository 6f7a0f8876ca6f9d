"""Levels: perfect, acceptable, partial, fail; defaults, task rules, vetoes and terminations."""

from __future__ import annotations

from typing import Any

import pytest

from toolproof.scoring import Level
from toolproof.trajectory import Termination

from .scoring_kit import score

SAYS_7 = {"kind": "output", "name": "says_7", "number": 7}
LOOKED_UP = {"kind": "process", "name": "looked_up", "must_call": ["get_stock"]}
LOOKUP: Any = ("get_stock", {"product_id": "A"})


def test_all_checks_and_efficient_is_perfect() -> None:
    result = score([SAYS_7, LOOKED_UP], answer="7", calls=[LOOKUP])
    assert (result.level, result.passed, result.fraction) == (Level.PERFECT, True, 1.0)
    assert result.tool_calls == 1 and result.termination is Termination.COMPLETED
    assert [c.name for c in result.checks] == ["says_7", "looked_up"]


def test_all_checks_but_wasteful_is_acceptable() -> None:
    # One reference call: perfect allows 1 + ceil(1 / 2) = 2 calls.
    assert score([SAYS_7], answer="7", calls=[LOOKUP] * 2).level is Level.PERFECT
    result = score([SAYS_7], answer="7", calls=[LOOKUP] * 3)
    assert (result.level, result.passed) == (Level.ACCEPTABLE, True)


def test_half_the_weight_is_partial_and_less_is_fail() -> None:
    result = score([SAYS_7, LOOKED_UP], answer="7")
    assert (result.level, result.passed, result.fraction) == (Level.PARTIAL, False, 0.5)
    heavy = {**LOOKED_UP, "weight": 3}
    result = score([SAYS_7, heavy], answer="7")
    assert (result.level, result.fraction) == (Level.FAIL, 0.25)
    assert score([SAYS_7], answer="8").level is Level.FAIL


def test_a_veto_fails_even_when_everything_else_passes() -> None:
    forbid = {"kind": "evidence", "forbid": ["B"]}
    result = score([SAYS_7, LOOKED_UP, forbid], answer="7, not B", calls=[LOOKUP])
    assert (result.level, result.passed, result.fraction) == (Level.FAIL, False, 0.0)


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
        "partial": {"checks": ["looked_up"], "min_fraction": 0.4},
    }
    # Only says_7 matters for perfect; two steps (one call and the answer) fit.
    assert score([SAYS_7, LOOKED_UP], answer="7", levels=levels).level is Level.PERFECT
    result = score([SAYS_7, LOOKED_UP], answer="7", calls=[LOOKUP] * 2, levels=levels)
    assert result.level is Level.ACCEPTABLE  # three steps is too many for perfect
    partial = score([SAYS_7, LOOKED_UP], answer="8", calls=[LOOKUP], levels=levels)
    assert (partial.level, partial.fraction) == (Level.PARTIAL, 0.5)
    assert (
        score(
            [SAYS_7, LOOKED_UP], answer="7", levels=levels | {"perfect": {"min_fraction": 1}}
        ).level
        is Level.ACCEPTABLE
    )


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
