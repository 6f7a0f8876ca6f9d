"""Pinned tool environments: set up once into a cache, checked by digest, mounted read-only.

A task whose sandbox settings name a ``toolenv`` (an ``env.lock.json``) runs its
commands, and has its checks run, with exactly the tools that version file pins.
Map of the package::

    lock      EnvLock: the version file (components, install files, digest, baselines)
    cache     where environments live; what is really installed; drift (pinned → live)
    setup     setup_env: install into the cache (pip, npm ci), once; reuse after
    suite     a suite's version files; check_suite: a run's refusal of missing or drifted ones
    episode   prepare_episode: refuse a missing or drifted environment, mount it at
              /opt/toolproof-env, annotate steps with the lint-error curve
    linters   the harness's linter command lines, their JSON reports, counts in any output
    harness   run_harness: the harness's own linter run (and the project's tests), sandboxed

Nothing is installed while an agent runs: ``toolproof env setup SUITE`` does it
beforehand, and a run without it fails with an infra error naming that command.
"""

from .cache import MOUNT, STD_PATH, EnvStatus, default_cache_root, inspect_env
from .episode import EXTRAS_KEY, EpisodeEnv, episode_env, prepare_episode, sandbox_settings
from .errors import EnvDrift, EnvError, EnvNotSetUp, SetupFailed
from .harness import HarnessRun, run_harness
from .linters import DEFAULT_CONFIG, Linter, LintReport, count_in_output, harness_argv, parse_report
from .lock import LOCK_NAME, EnvLock, component_changes, compute_digest
from .setup import SetupResult, setup_env
from .suite import check_suite, setup_hint, suite_locks

__all__ = [
    "DEFAULT_CONFIG",
    "EXTRAS_KEY",
    "LOCK_NAME",
    "MOUNT",
    "STD_PATH",
    "EnvDrift",
    "EnvError",
    "EnvLock",
    "EnvNotSetUp",
    "EnvStatus",
    "EpisodeEnv",
    "HarnessRun",
    "LintReport",
    "Linter",
    "SetupFailed",
    "SetupResult",
    "check_suite",
    "component_changes",
    "compute_digest",
    "count_in_output",
    "default_cache_root",
    "episode_env",
    "harness_argv",
    "inspect_env",
    "parse_report",
    "prepare_episode",
    "run_harness",
    "sandbox_settings",
    "setup_env",
    "setup_hint",
    "suite_locks",
]
