"""Initial environments of an AgentDojo suite, default and attacked, built fast and exactly.

AgentDojo builds each attacked environment by formatting the injections into the
suite's environment YAML and parsing it again (``load_and_inject_default_environment``),
a few tenths of a second for the workspace suite; done for every (user task,
injection task) pair that is minutes. The result only differs from the default
environment in the strings that hold an injection vector, so this module parses
the suite once with AgentDojo's own canaries to find, for each vector, where it
lands in the environment, and once per distinct injection text with every vector
set to it; an attacked environment is then the default one (deep-copied) with the
objects holding its injected vectors (a file, an email, an event: the nearest model
around each string) taken from that parse, so what their validators derive from the
text (a file's ``size``) comes along. That is exactly what AgentDojo's own parse gives,
since each such object holds one vector. Where an object holds two vectors, or the
attack gives vectors different texts, AgentDojo's own loader is used as it is.
``tests/upstream/test_agentdojo_envs.py`` compares both ways.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel

from . import _agentdojo_upstream as upstream

Path_ = tuple[str | int, ...]
"""A place in an environment: field names, dict keys and list indexes, from the top."""


def strings(node: Any, path: Path_ = ()) -> Iterator[tuple[Path_, str]]:
    """Every string of an environment object (model fields, dicts, lists), with its place."""
    if isinstance(node, str):
        yield path, node
    elif isinstance(node, BaseModel):
        for name in type(node).model_fields:
            yield from strings(getattr(node, name), (*path, name))
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from strings(value, (*path, key))
    elif isinstance(node, list | tuple):
        for index, value in enumerate(node):
            yield from strings(value, (*path, index))


def _get(node: Any, path: Path_) -> Any:
    for part in path:
        node = getattr(node, part) if isinstance(node, BaseModel) else node[part]  # type: ignore[arg-type]
    return node


def _set(node: Any, path: Path_, value: Any) -> None:
    parent = _get(node, path[:-1])
    last = path[-1]
    if isinstance(parent, BaseModel):
        setattr(parent, str(last), value)
    else:
        parent[last] = value


def share(new: Any, base: Any) -> Any:
    """``new`` with every part equal to the same part of ``base`` replaced by ``base``'s.

    Hundreds of attacked environments differ from the default one in a few strings;
    sharing the rest keeps a whole suite's tasks in memory a few times over, not
    hundreds. Nothing mutates task records in place (each world copies them).
    """
    if new == base:
        return base
    if isinstance(new, dict) and isinstance(base, dict):
        return {k: share(v, base[k]) if k in base else v for k, v in new.items()}
    if isinstance(new, list) and isinstance(base, list) and len(new) == len(base):
        return [share(a, b) for a, b in zip(new, base, strict=True)]
    return new


class SuiteEnvironments:
    """The initial environments of one AgentDojo suite."""

    def __init__(self, suite: Any) -> None:
        self.suite = suite
        self.default = suite.load_and_inject_default_environment({})
        self.default_dump: dict[str, Any] = self.default.model_dump(mode="json")
        vectors = suite.get_injection_vector_defaults()
        self.canaries = {v: f"<CANARY---{v}--->" for v in vectors}  # AgentDojo's own canaries
        self.canary_env = suite.load_and_inject_default_environment(self.canaries)
        self.places: dict[str, list[Path_]] = {}
        """Each vector's holders: paths of the nearest models around its strings."""
        held: dict[Path_, set[str]] = {}
        self.entangled: set[str] = set()
        for path, text in strings(self.canary_env):
            found = [v for v, canary in self.canaries.items() if canary in text]
            if not found:
                continue
            holder = self._holder(path)
            if holder is None:  # a string of the environment itself: load it AgentDojo's way
                self.entangled.update(found)
                continue
            held.setdefault(holder, set()).update(found)
            for vector in found:
                if holder not in self.places.setdefault(vector, []):
                    self.places[vector].append(holder)
        for vectors in held.values():
            if len(vectors) > 1:
                self.entangled.update(vectors)
        self._filled: dict[str, Any] = {}

    def _holder(self, path: Path_) -> Path_ | None:
        """The path of the nearest model around the string at ``path`` (None: the root)."""
        for end in range(len(path) - 1, 0, -1):
            if isinstance(_get(self.canary_env, path[:end]), BaseModel):
                return path[:end]
        return None

    def candidates(self, user_task: Any) -> list[str]:
        """The vectors the user task's ground truth shows the model, as AgentDojo's
        ``BaseAttack.get_injection_candidates`` finds them (on a copy of the canary
        environment instead of a fresh parse).

        Raises:
            ValueError: the task is not injectable (AgentDojo raises the same).
        """
        mods = upstream.modules()
        pipeline = mods.GroundTruthPipeline(user_task)
        runtime = mods.FunctionsRuntime(self.suite.tools)
        env = self.canary_env.model_copy(deep=True)
        _, _, _, responses, _ = pipeline.query(user_task.PROMPT, runtime, env)
        from agentdojo.types import get_text_content_as_str

        seen = [
            get_text_content_as_str(r["content"]) for r in responses if r["content"] is not None
        ]
        found = [v for v, canary in self.canaries.items() if any(canary in s for s in seen)]
        if not found:
            raise ValueError(f"{user_task.ID} is not injectable.")
        return found

    def injected(self, injections: dict[str, str]) -> Any:
        """The suite's environment with ``injections`` placed, as AgentDojo would load it."""
        if not injections:
            return self.default.model_copy(deep=True)
        texts = set(injections.values())
        if (
            len(texts) != 1
            or set(injections) & self.entangled
            or any(v not in self.places for v in injections)
        ):
            return self.suite.load_and_inject_default_environment(injections)
        text = texts.pop()
        filled = self._filled.get(text)
        if filled is None:
            every = dict.fromkeys(self.places, text)
            filled = self._filled[text] = self.suite.load_and_inject_default_environment(every)
        env = self.default.model_copy(deep=True)
        copies: dict[int, Any] = {}  # one copy per object: shared holders stay shared
        for vector in injections:
            for path in self.places[vector]:
                source = _get(filled, path)
                if id(source) not in copies:
                    copies[id(source)] = source.model_copy(deep=True)
                _set(env, path, copies[id(source)])
        return env
