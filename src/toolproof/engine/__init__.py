"""The engine: episodes, the runner, executors and resume.

Map::

    RunConfig --Runner--> plan (EpisodeJob per task x epoch) --Executor.submit--> Worker.run
        --run_episode--> (Trajectory, Score) --EpisodeRecord--> RunStore --> summary.json
"""

from .config import RunConfig
from .episode import EpisodeOptions, run_episode
from .executor import EpisodeJob, Executor, LocalExecutor, Worker
from .runner import ResumeError, Runner, environment, plan

__all__ = [
    "EpisodeJob",
    "EpisodeOptions",
    "Executor",
    "LocalExecutor",
    "ResumeError",
    "RunConfig",
    "Runner",
    "Worker",
    "environment",
    "plan",
    "run_episode",
]
