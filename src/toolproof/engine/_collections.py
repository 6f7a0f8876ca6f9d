"""The garbage collector during a run: what was there before it is frozen, full passes paced.

With hundreds of episodes in flight, each holding its world, transcript and records for
the second or so it waits on its model, CPython's default thresholds (700, 10, 10) start a
full collection every hundred or so young ones, and each full pass walks every object of
every episode in flight: at 1,000 in flight on the benchmark's VM, 14 passes of 200 ms each
in a 6,000-episode run, a fifth of its CPU, for almost nothing collected (an episode's data
is freed by reference counting when it is stored, not by the collector).

So while episodes run:

* everything made before the first episode (modules, the loaded suite, compiled
  templates) is frozen (:func:`gc.freeze`): no collection walks it again;
* the middle and oldest generations are collected a tenth as often (thresholds
  ``(700, 10, 100)`` instead of ``(700, 10, 10)``), which cuts the full passes tenfold;
  the young generation, where the run's rare cycles die, is collected as before.

Afterwards the previous thresholds come back and the frozen objects are unfrozen.
``benchmarks/bench_throughput.py`` measures the difference; ``bench_scaling.py`` the peak
memory, which the pacing does not change.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

RUN_THRESHOLDS = (700, 10, 100)
"""The collector's thresholds while a run's episodes are in flight."""


@contextlib.contextmanager
def paced_collections() -> Iterator[None]:
    """Freeze what exists, pace the older generations; undo both on the way out.

    Nested uses (a run inside a run's process, the tests) leave the outermost in charge.
    """
    global _depth
    if _depth or not gc.isenabled():  # someone else decides: leave the collector alone
        yield
        return
    before = gc.get_threshold()
    _depth += 1
    try:
        gc.freeze()
        gc.set_threshold(*RUN_THRESHOLDS)
        yield
    finally:
        _depth -= 1
        gc.set_threshold(*before)
        gc.unfreeze()


_depth = 0
