"""The engine: episodes, the runner, executors and resume.

Map::

    RunConfig --Runner--> plan (EpisodeJob per task x epoch) --Executor.submit--> Worker.run
        --run_episode--> (Trajectory, Score) --EpisodeRecord--> RunStore --> summary.json
"""

from .config import RunConfig
from .episode import Continuation, EpisodeOptions, run_episode
from .executor import EpisodeJob, Executor, LocalExecutor, Worker
from .replay import StepState, export_step, load_step, replay_step
from .runner import ResumeError, Runner, environment, plan

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
