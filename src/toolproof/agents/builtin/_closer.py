"""Whether a user's agent has a ``close`` or ``aclose``, found without running its code.

The harness asks at the end of every episode, on its own loop, so the answer comes from
the class and instance dictionaries (``inspect.getattr_static``), never from the agent's
attribute lookup. What depends on the class alone is worked out once per class (it was
some 20 microseconds of the harness loop per episode): whether the class or its
``__getattr__``/``__getattribute__`` may provide one, and whether its instances keep
their attributes in a plain ``__dict__``; then an episode's agent costs two dict lookups.
"""

from __future__ import annotations

import inspect
import types
from typing import Any

_NAMES = ("aclose", "close")
_DYNAMIC = ("__getattr__", "__getattribute__")
_MRO = type.__dict__["__mro__"]
_VARS = type.__dict__["__dict__"]
_MAX_CLASSES = 1024

_Facts = tuple[bool, tuple[tuple[bool, bool], ...], bool]
"""A class's part of the answer: whether its ``__getattr__``/``__getattribute__`` may give
anything; for each of :data:`_NAMES`, whether the class gives a value that is not None and
whether that is a data descriptor (which wins over an instance's own value); whether its
instances' ``__dict__`` is the plain one."""

_by_class: dict[int, tuple[type, _Facts]] = {}
"""``id(class)`` -> (the class, its facts). Keyed by identity: a class's own ``__hash__``
and ``__eq__`` (its metaclass's) are agent code. The class is held, so its id stays its own."""
_MISSING = object()


def has_closer(agent: object) -> bool:
    """Whether the agent may have ``aclose`` or ``close`` (what ``inspect.getattr_static``
    finds, not None); a class with its own ``__getattr__`` or ``__getattribute__`` may have
    anything, so it is asked on its thread."""
    kind = type(agent)
    known = _by_class.get(id(kind))
    if known is None or known[0] is not kind:
        known = (kind, _class_facts(kind))
        if len(_by_class) >= _MAX_CLASSES:
            _by_class.clear()
        _by_class[id(kind)] = known
    dynamic, names, plain = known[1]
    if dynamic:
        return True
    if not plain:  # an unusual __dict__: the full static lookup
        return any(inspect.getattr_static(agent, name, None) is not None for name in _NAMES)
    try:
        own = object.__getattribute__(agent, "__dict__")  # the plain getset: no agent code
    except AttributeError:  # __slots__ only
        own = {}
    for name, (on_class, data) in zip(_NAMES, names, strict=True):
        mine = dict.get(own, name, _MISSING)
        if on_class if data or mine is _MISSING else mine is not None:
            return True
    return False


def _class_facts(kind: type) -> _Facts:
    dynamic = any(
        inspect.getattr_static(kind, name, None) not in (None, getattr(object, name, None))
        for name in _DYNAMIC
    )
    mro = _MRO.__get__(kind)
    names = tuple(_on_class(mro, name) for name in _NAMES)
    return dynamic, names, all(_plain_dict(entry) for entry in mro)


def _lookup(mro: tuple[type, ...], name: str) -> Any:
    for entry in mro:
        namespace = _VARS.__get__(entry)
        if name in namespace:
            return namespace[name]
    return _MISSING


def _on_class(mro: tuple[type, ...], name: str) -> tuple[bool, bool]:
    """(the class gives a value that is not None, that value is a data descriptor)."""
    found = _lookup(mro, name)
    if found is _MISSING:
        return False, False
    kinds = _MRO.__get__(type(found))
    data = _lookup(kinds, "__get__") is not _MISSING and (
        _lookup(kinds, "__set__") is not _MISSING or _lookup(kinds, "__delete__") is not _MISSING
    )
    return found is not None, data


def _plain_dict(entry: type) -> bool:
    """Whether ``entry`` leaves ``__dict__`` to the standard descriptor (as
    ``inspect._shadowed_dict`` checks)."""
    namespace = _VARS.__get__(entry)
    if "__dict__" not in namespace:
        return True
    found = namespace["__dict__"]
    return (
        type(found) is types.GetSetDescriptorType
        and found.__name__ == "__dict__"
        and found.__objclass__ is entry
    )


def closer(agent: object) -> Any:
    """Call the agent's ``aclose`` or ``close`` (on its thread), returning what it returns."""
    for name in _NAMES:
        method = getattr(agent, name, None)
        if callable(method):
            return method()
    return None
