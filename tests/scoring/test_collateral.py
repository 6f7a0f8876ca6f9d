"""Collateral damage, one rule for every task (scoring/collateral.py): a record change
that no ``state`` check of the task declares vetoes the episode."""

from __future__ import annotations

from typing import Any

from toolproof.worlds import World

from .scoring_kit import score


def _world() -> dict[str, Any]:
    return {"world": {"records": {"products": {"A": {"stock": 7}, "B": {"stock": 3}}}}}


RESTOCK = {"kind": "state", "records": {"products.A.stock": 9}}


def _restock(world: World) -> None:
    world.records["products"]["A"]["stock"] = 9


def _restock_and_more(world: World) -> None:
    _restock(world)
    world.records["products"]["B"]["stock"] = 0


def _restock_and_add(world: World) -> None:
    _restock(world)
    world.records["products"]["C"] = {"stock": 1}


def test_the_declared_change_alone_passes() -> None:
    result = score([RESTOCK], mutate=_restock, **_world())
    assert result.passed
    assert all(c.name != "collateral" for c in result.checks)


def test_an_undeclared_change_vetoes() -> None:
    for mutate in (_restock_and_more, _restock_and_add):
        result = score([RESTOCK], mutate=mutate, **_world())
        assert not result.passed and result.level.value == "fail"
        (damage,) = [c for c in result.checks if c.name == "collateral"]
        assert damage.veto and damage.guard
        assert "products.B.stock" in damage.detail or "products.C" in damage.detail


def test_allow_changes_declares_what_else_may_change() -> None:
    spec: dict[str, Any] = {**RESTOCK, "allow_changes": ["products.B"]}
    assert score([spec], mutate=_restock_and_more, **_world()).passed
    assert not score([spec], mutate=_restock_and_add, **_world()).passed


def test_a_task_without_a_state_check_declares_nothing_here() -> None:
    """A refusal that replies by mail changes records no state check names: the rule
    leaves such a task to its own guards."""
    check = {"kind": "output", "contains": ["done"]}
    result = score([check], answer="done", mutate=_restock_and_more, **_world())
    assert result.passed


def test_unchanged_elsewhere_keeps_its_own_veto() -> None:
    spec = {**RESTOCK, "unchanged_elsewhere": True}
    result = score([spec], mutate=_restock_and_more, **_world())
    assert not result.passed
    assert [c.name for c in result.checks if c.veto] == ["state_0"]


def test_the_failure_mode_is_collateral_damage() -> None:
    result = score([RESTOCK], mutate=_restock_and_more, **_world())
    assert result.failure_mode == "collateral_damage"
