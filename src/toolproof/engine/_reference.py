"""The reference solution's effect on the world, played once per task and seed per run.

Scoring judges collateral damage against what the reference does
(:mod:`toolproof.scoring.collateral`): any change of an episode's world the reference
does not make is a veto. This module measures the reference's effect the way the
oracle proves a task solvable: the reference calls played, turn by turn, through the
same tools and gateway on a fresh world of the same instance (same seed). Nothing is
scored and no snapshot is stored; the per-step diffs and the final diff are kept.

The result is cached per run (per :class:`EpisodeOptions` object) and per task and seed,
so every epoch of a seed and every agent of a run share one play.
"""

from __future__ import annotations

import contextlib
import time
import weakref
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from toolproof.agents.builtin.oracle import OracleAgent
from toolproof.scoring import ReferenceEffect, needs_reference
from toolproof.spec import TaskInstance
from toolproof.trajectory import Message
from toolproof.worlds import World

from ._episode_setup import EpisodeOptions, open_episode
from .session import off_loop
from .turns import current_user_turn

__all__ = ["reference_effect"]

MAX_CACHED = 1024
"""Effects kept per run (each seed is played once; epochs draw new seeds, so a long run would
otherwise keep one per episode)."""

_CACHE: dict[int, dict[tuple[str, int], ReferenceEffect | None]] = {}
"""id(options) to (task id, seed) to the effect; dropped with the options object."""


def _cache_for(options: EpisodeOptions) -> dict[tuple[str, int], ReferenceEffect | None]:
    key = id(options)
    if key not in _CACHE:
        _CACHE[key] = {}
        weakref.finalize(options, _CACHE.pop, key, None)
    return _CACHE[key]


Loop = Callable[..., Awaitable[Any]]
"""The episode loop (``episode._loop``), passed in: this module sits below the loop."""


async def reference_effect(
    instance: TaskInstance, options: EpisodeOptions, loop: Loop
) -> ReferenceEffect | None:
    """The reference's effect on a fresh world of ``instance``, or None.

    ``loop`` is the episode loop the oracle's turns run through (the caller's own).

    None when the task has no reference to compare with
    (:func:`~toolproof.scoring.needs_reference`), or when playing it failed (the
    collateral rule then falls back to the paths the task's state checks declare).
    """
    if not needs_reference(instance.task):
        return None
    cache = _cache_for(options)
    key = (instance.task.id, instance.seed)
    if key not in cache:
        try:
            effect = await _play(instance, options, loop)
        except Exception:  # the reference cannot be replayed here: no comparison
            effect = None
        while len(cache) >= MAX_CACHED:  # a long run's memory stays flat: oldest first
            del cache[next(iter(cache))]
        cache[key] = effect
    return cache[key]


async def _play(instance: TaskInstance, options: EpisodeOptions, loop: Loop) -> ReferenceEffect:
    local = replace(options, side=None, model_slots=None, blobs=None)
    world = World(instance.task.world, fixtures_base=local.fixtures_base, tmp_root=local.tmp_root)
    try:
        parts = await open_episode(instance, local, world)
        prompt = [
            Message(role="system", content=instance.system_prompt),
            Message(role="user", content=instance.task.description),
        ]
        opening = await parts.user.open()
        opened_by = None
        if opening is not None:
            prompt[-1] = Message(role="user", content=opening.text)
            opened_by = opening.by
        steps = parts.recorder.steps
        parts.gateway.offer_only(instance.task.hidden_tools(current_user_turn(steps)))
        agent = OracleAgent(instance)
        await loop(agent, parts, instance, prompt, time.perf_counter(), None, opened_by)
        final = await off_loop(world, world.snapshot)
        return ReferenceEffect(
            final=World.diff(parts.initial, final),
            steps=tuple(s.diff for s in steps if s.diff is not None),
            calls=tuple(
                (call.name, dict(call.arguments)) for s in steps for call in s.message.tool_calls
            ),
        )
    finally:
        with contextlib.suppress(Exception):
            world.close()
