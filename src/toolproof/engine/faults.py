"""Harness faults: an episode toolproof could not score or store stays in the score, failed.

No single episode stops a run (ARCHITECTURE.md, invariant 8). Agent bytes pass one ingress
(``toolproof.trajectory.ingress``) before anything else sees them, so what is left to
fail after an episode is toolproof's own code: taking the final snapshot, grading, writing
the record. When that raises for one episode, the run records it and goes on:

* :func:`unscored`: scoring raised; the trajectory is kept, the score is a failure;
* :func:`unstorable`: the record cannot be written (a value the ingress should have
  refused, say); it is stored with every text made valid (a lone surrogate written as
  ``\\udcff``), or, when even that cannot be written, without its steps.

A worker process that dies under its episodes is decided here too
(:func:`worker_death_outcome`): infra only when the worker ran toolproof's code alone.

Either way the episode ends ``agent_error``, not passed, and its error starts with
:data:`FAULT`, says what failed and asks for a report; it is logged as an error when it
happens. It is **not** an ``infra_error``, which would leave the denominator: an episode
leaves it only when toolproof witnessed a failure the agent could not have caused, and
here the bytes that broke toolproof are most likely the agent's; an agent that found a
gap in the ingress must not be able to turn its failures into infra errors (the rule in
docs/metrics.md, "The denominator is the harness's").
"""

from __future__ import annotations

import logging
import math
from typing import Any

from toolproof.results import EpisodeRecord, UnstorableRecord, encode_record
from toolproof.scoring import Level, Score
from toolproof.tools import ToolCrash
from toolproof.trajectory import Termination, Trajectory

from ._agent_code import error_text

_log = logging.getLogger(__name__)

FAULT = "toolproof fault"
"""How the error of an episode toolproof could not score or store begins."""


def _plain(text: str) -> str:
    """``text`` as valid Unicode: a lone surrogate written as its escape, ``\\udcff``."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def fault_text(what: str, exc: BaseException, trajectory: Trajectory) -> str:
    """The error of an episode toolproof could not ``what`` (score, store) because of ``exc``."""
    ended = trajectory.termination.value
    if trajectory.error:
        ended += f": {trajectory.error[:300]}"
    return _plain(
        f"{FAULT}: toolproof could not {what} this episode ({error_text(exc)[:500]}); it had "
        f"ended {ended}. This is a bug of toolproof: please report it. The episode counts as "
        "a failure (agent_error), not as an infra error: toolproof cannot show that the agent "
        "did not cause it"
    )


def failed_score(trajectory: Trajectory) -> Score:
    """The score of an episode that ended in a harness fault: a failure, blamed on nobody
    but kept in every denominator."""
    steps = len(trajectory.steps)
    return Score(
        passed=False,
        level=Level.FAIL,
        fraction=0.0,
        checks=[],
        termination=Termination.AGENT_ERROR,
        tool_calls=len(trajectory.tool_calls()),
        failure_mode=Termination.AGENT_ERROR.value,
        failure_step=steps - 1 if steps else None,
    )


def unscored(trajectory: Trajectory, exc: BaseException) -> tuple[Trajectory, Score]:
    """The trajectory and score of an episode whose scoring raised ``exc``."""
    text = fault_text("score", exc, trajectory)
    _log.error("%s: %s", trajectory.episode_id, text)
    faulted = trajectory.model_copy(update={"termination": Termination.AGENT_ERROR, "error": text})
    return faulted, failed_score(faulted)


def unstorable(record: EpisodeRecord, exc: BaseException) -> EpisodeRecord:
    """A record the store can write in place of ``record``, which it could not (``exc``).

    Raises:
        UnstorableRecord: not even the record without its steps can be written.
    """
    trajectory = record.trajectory
    text = fault_text("store", exc, trajectory)
    _log.error("%s: %s", record.key, text)
    bare: dict[str, Any] = {"steps": [], "prompt": [], "final_answer": None}
    last: BaseException = exc
    for candidate in (_scrubbed(trajectory), trajectory.model_copy(update=bare)):
        if candidate is None:
            continue
        faulted = candidate.model_copy(
            update={"termination": Termination.AGENT_ERROR, "error": text}
        )
        stand_in = record.model_copy(update={"trajectory": faulted, "score": failed_score(faulted)})
        try:
            encode_record(stand_in)
        except UnstorableRecord as again:
            last = again
            continue
        return stand_in
    raise UnstorableRecord(record.key, last)


def _scrubbed(trajectory: Trajectory) -> Trajectory | None:
    """The trajectory with every string valid Unicode and every float finite, or None."""
    try:
        return Trajectory.model_validate(_scrub(trajectory.model_dump()))
    except (ValueError, TypeError, RecursionError):
        return None


def _scrub(value: Any) -> Any:
    if isinstance(value, str):
        return _plain(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {_scrub(k): _scrub(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_scrub(v) for v in value]
    return value


def record_json(record: EpisodeRecord) -> str:
    """``record`` as JSON to send to the run's process (a worker process's or Ray actor's):
    a record that cannot be encoded is sent as its :func:`unstorable` stand-in."""
    try:
        return record.model_dump_json()
    except (ValueError, TypeError, RecursionError) as exc:
        return unstorable(record, exc).model_dump_json()


def crash_outcome(crash: ToolCrash) -> tuple[Termination, str]:
    """How an episode a tool crashed in ends: the one place this is decided.

    A crash toolproof witnessed as its own machinery failing (``crash.witnessed``: the
    sandbox's command spawner lost) is an ``infra_error``, retried and kept out of the
    score. Any other crash came out of a tool's code on arguments the agent chose: a bug
    of toolproof or of the task, but one the agent may have set off on purpose, so the
    episode is a failure (``agent_error``) that stays in the denominator and is said
    loudly, never a way out of it.
    """
    if crash.witnessed:
        return Termination.INFRA_ERROR, str(crash)
    text = _plain(
        f"{FAULT}: {str(crash)[:500]}. A tool failed on the arguments the agent chose: a bug "
        "of toolproof or of the task (please report it). The episode counts as a failure "
        "(agent_error), not as an infra error: toolproof cannot show that the agent did not "
        "cause it"
    )
    _log.error("%s", text)
    return Termination.AGENT_ERROR, text


def harness_fault(what: str, exc: BaseException) -> tuple[Termination, str]:
    """How an episode ends when toolproof's own code raised ``exc`` after the agent acted.

    The harness failed to ``what`` the episode (take a step's snapshot of a workspace the
    agent filled, say): no witness shows the agent could not have caused it, so it is a
    failure in the denominator, said loudly, like :func:`crash_outcome`'s.
    """
    text = _plain(
        f"{FAULT}: toolproof could not {what} this episode after the agent acted "
        f"({error_text(exc)[:500]}). This is a bug of toolproof (please report it). The "
        "episode counts as a failure (agent_error), not as an infra error: toolproof cannot "
        "show that the agent did not cause it"
    )
    _log.error("%s", text)
    return Termination.AGENT_ERROR, text


OWN_CODE_KINDS = frozenset(
    {
        "oracle",
        "noop",
        "random",
        "gullible",
        "never-asks",
        "never-retries",
        "openai",
        "anthropic",
        "litellm",
        "ollama",
        "vllm",
    }
)
"""Agent kinds that run only toolproof's own code in a worker process: its built-in agents
and its adapters that talk to a model server elsewhere over HTTP. Every other kind
(``python:``, the framework adapters, ``mcp``, ``cmd:``, plug-ins) runs code the run does not
own in, or as a child of, the worker process."""


def process_exit_text(code: int | None) -> str:
    """How a process ended, for a message: ``exit 1``, ``signal 9``."""
    if code is None:
        return "no exit status"
    return f"signal {-code}" if code < 0 else f"exit {code}"


def worker_death_outcome(agent: str, cause: str, *, solo: bool) -> tuple[Termination, str] | None:
    """How an episode ends whose worker process died under it (``cause``: ``exit 1``,
    ``signal 9``, a line on its records pipe that is not a record): the one place this is
    decided (ARCHITECTURE.md, invariant 8).

    * With an agent of :data:`OWN_CODE_KINDS` only toolproof's code ran in the worker: the
      death is a failure toolproof witnessed that the agent could not have caused, an
      ``infra_error`` (retried, out of the denominator).
    * With agent code in the worker (``solo`` False: it ran beside other episodes): any of
      them may have ended it, so the episode is run again alone in a fresh worker (None).
    * With agent code in a worker that ran only this episode (``solo``): the agent's code
      ended its process (``os._exit``, a crash of a native library, memory to the OOM
      killer, bytes on the records pipe); toolproof cannot show otherwise, so it is the
      agent's ``agent_error``, in the denominator.

    Args:
        agent: The agent spec (its kind is what counts).
        cause: What ended the worker.
        solo: The episode ran alone in that worker.
    """
    kind = agent.partition(":")[0]
    if kind in OWN_CODE_KINDS:
        return Termination.INFRA_ERROR, _plain(f"worker process died: {cause}"[:600])
    if not solo:
        return None
    return Termination.AGENT_ERROR, _plain(
        f"the agent's process died: {cause}"[:600]
        + " (the episode ran alone in a fresh worker process with the agent's code in it; "
        "an agent that ends or corrupts its process fails its episode)"
    )
