"""Ctrl-C during a run: the first stops it cleanly, the second quits at once.

asyncio's own SIGINT handling cancels the main task, which reaches episodes
only when they suspend (the built-in agents may never do) and turns a second
Ctrl-C into a ``KeyboardInterrupt`` inside the loop ("Task exception was never
retrieved"). Installing our handler first keeps asyncio's out of the way
(``asyncio.run`` installs its own only over the default one).
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from types import FrameType
from typing import Any

from ._common import EXIT_INTERRUPTED

SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _say(text: str) -> None:
    """Write to stderr from a signal handler (no buffered stream: it may be mid-write)."""
    if sys.stderr.isatty():
        text = "\x1b[?25h" + text  # a live progress display hides the cursor
    with suppress(OSError):
        os.write(2, text.encode("utf-8", "replace"))


@contextmanager
def stop_on_signals(stop: Callable[[], None], resume: str) -> Iterator[list[int]]:
    """Within the block, SIGINT and SIGTERM call ``stop`` once, then quit at once.

    Args:
        stop: Asks the run to stop (it must only set flags and schedule work).
        resume: The command that continues the run, shown in both messages.

    Yields:
        A one-item list: how many signals arrived so far.
    """
    received = [0]

    def handler(signum: int, frame: FrameType | None) -> None:
        received[0] += 1
        if received[0] == 1:
            _say(
                "\nstopping: no new episodes; cancelling the running ones and saving the "
                "finished ones (press Ctrl-C again to quit at once)\n"
            )
            stop()
            return
        _say(f"\nquit at once; finished episodes are saved. Continue with: {resume}\n")
        os._exit(EXIT_INTERRUPTED)

    previous: dict[signal.Signals, Any] = {}
    try:
        for sig in SIGNALS:
            previous[sig] = signal.signal(sig, handler)
    except ValueError:  # not the main thread: leave signals to whoever owns them
        pass
    try:
        yield received
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
