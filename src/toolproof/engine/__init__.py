"""The engine: episodes, the runner, executors and resume.

Map::

    RunConfig --Runner--> plan (EpisodeJob per task x epoch) --Executor.submit--> Worker.run
        --run_episode--> (Trajectory, Score) --EpisodeRecord--> RunStore --> summary.json
"""

from typing import TYPE_CHECKING, Any

from toolproof._lazy import load_name

if TYPE_CHECKING:
    from .config import RunConfig
    from .episode import Continuation, EpisodeOptions, run_episode
    from .executor import EpisodeJob, Executor, LocalExecutor, Worker
    from .replay import StepState, export_step, load_step, replay_step
    from .runner import ResumeError, Runner, environment, plan

_HOMES = {
    "config": ("RunConfig",),
    "episode": ("Continuation", "EpisodeOptions", "run_episode"),
    "executor": ("EpisodeJob", "Executor", "LocalExecutor", "Worker"),
    "replay": ("StepState", "export_step", "load_step", "replay_step"),
    "runner": ("ResumeError", "Runner", "environment", "plan"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    """Load a name on first use: ``toolproof run`` needs the runner, not time travel
    (``replay``, and the comparison metrics behind it)."""
    return load_name(__name__, _HOME_OF, name)


__all__ = [
    "Continuation",
    "EpisodeJob",
    "EpisodeOptions",
    "Executor",
    "LocalExecutor",
    "ResumeError",
    "RunConfig",
    "Runner",
    "StepState",
    "Worker",
    "environment",
    "export_step",
    "load_step",
    "plan",
    "replay_step",
    "run_episode",
]
