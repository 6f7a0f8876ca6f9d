"""The live track's egress proxy for ``toolproof run``: made before the run, up for its episodes.

The CLI is the only layer that reads the environment, so the secrets the proxy injects
(``live.secrets`` of a task or suite) are read here and handed to ``toolproof.live``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from toolproof.engine import RunConfig
    from toolproof.live import LiveRun
    from toolproof.spec import Suite


def open_live_run(
    suite: Suite, config: RunConfig, run_dir: Path, mode: str, cassettes: list[Path], executor: str
) -> LiveRun | None:
    """Make the egress proxy when the run has live tasks (secrets from this environment).

    Raises:
        click.UsageError: the proxy cannot start (no cassettes, a secret unset, ray).
    """
    import os

    from toolproof.spec.live import live_tasks

    if not live_tasks(suite, config.select(suite)):
        return None  # the proxy is not imported: a run without live tasks never needs it
    from toolproof.live import LiveError, open_live

    if executor != "local":
        raise click.UsageError("live tasks run on the local executor only (their proxy is local)")
    try:
        return open_live(
            suite,
            config.select(suite),
            mode="record" if mode == "record" else "replay",
            run_dir=run_dir,
            environ=os.environ,
            cassettes=cassettes,
        )
    except LiveError as exc:
        raise click.UsageError(str(exc)) from None


@contextmanager
def live_egress(live_run: LiveRun | None) -> Iterator[None]:
    """The proxy running, and the live tools routed through it, for the block; then closed."""
    if live_run is None:
        yield
        return
    from toolproof.tools.toolkits.live import use_egress

    try:
        live_run.start()
        with use_egress(live_run.proxy.url, live_run.proxy.token):
            yield
    finally:
        live_run.close()
