"""Whether an agent has a closer: found statically, per class once, as the full lookup finds it."""

from __future__ import annotations

import inspect
import os
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof.agents.builtin._closer import has_closer

_EXAMPLES = int(os.environ.get("TOOLPROOF_FUZZ_EXAMPLES", "60"))


def _full_lookup(agent: object) -> bool:
    """The answer as it was worked out for every episode (two static lookups per name)."""
    kind = type(agent)
    if any(
        inspect.getattr_static(kind, name, None) not in (None, getattr(object, name, None))
        for name in ("__getattr__", "__getattribute__")
    ):
        return True
    return any(
        inspect.getattr_static(agent, name, None) is not None for name in ("aclose", "close")
    )


class _ShadowedDict:
    """A ``__dict__`` property: agent code, never to be run by the lookup."""

    def __get__(self, obj: Any, kind: Any = None) -> Any:
        raise AssertionError("the agent's __dict__ property ran")


def _make(shape: dict[str, Any]) -> object:
    namespace: dict[str, Any] = {"act": lambda self, observation: None}
    if shape["on_class"]:
        namespace[shape["on_class"]] = lambda self: None
    if shape["dynamic"]:
        namespace["__getattr__"] = lambda self, name: None
    if shape["slots"]:
        namespace["__slots__"] = ()
    if shape["shadowed"]:
        namespace["__dict__"] = _ShadowedDict()
    base: type = object
    if shape["inherits"]:
        base = type("Base", (), {"close": lambda self: None})
    kind = type("Agent", (base,), namespace)
    agent = kind()
    if shape["on_instance"] and not shape["slots"] and not shape["shadowed"]:
        name, value = shape["on_instance"]
        vars(agent)[name] = value
    return agent


_shapes = st.fixed_dictionaries(
    {
        "on_class": st.sampled_from([None, "close", "aclose"]),
        "dynamic": st.booleans(),
        "slots": st.booleans(),
        "shadowed": st.booleans(),
        "inherits": st.booleans(),
        "on_instance": st.sampled_from(
            [None, ("close", lambda: None), ("aclose", lambda: None), ("close", None)]
        ),
    }
)


@settings(max_examples=_EXAMPLES, derandomize=True, deadline=None)
@given(st.lists(_shapes, min_size=1, max_size=4))
def test_the_per_class_answer_is_the_full_lookups_for_every_instance(
    shapes: list[dict[str, Any]],
) -> None:
    for shape in shapes:
        agent = _make(shape)
        first = has_closer(agent)
        assert first == _full_lookup(agent), shape
        assert has_closer(agent) == first  # the class's facts from the cache: the same


def test_instances_of_one_class_are_each_looked_at() -> None:
    class Agent:
        def act(self, observation: Any) -> None:
            return None

    plain, given_one = Agent(), Agent()
    given_one.close = lambda: None  # type: ignore[attr-defined]
    assert not has_closer(plain)
    assert has_closer(given_one)
    assert not has_closer(Agent())
