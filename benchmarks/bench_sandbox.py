"""Wall-clock cost of running ``true`` through the sandbox backends.

Prints the median (and 90th percentile) of N runs of ``true`` via a bare
``subprocess.run`` (the baseline), the ``process`` backend, and the ``bwrap``
backend when it can run here, plus the overhead over the baseline in ms and as
a ratio. Each sandboxed run includes everything a real command pays: the
per-command cgroup (where the host allows one), ``prlimit``, namespace set-up,
the output pump and the workspace size check.

Run: ``python benchmarks/bench_sandbox.py [runs]`` (default 50). No assertions.
"""

from __future__ import annotations

import functools
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from toolproof.sandbox import get_backend


def _times(run: Callable[[], object], runs: int) -> list[float]:
    for _ in range(3):  # warm caches, probes and page cache
        run()
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        run()
        samples.append(time.perf_counter() - start)
    return samples


def _row(label: str, samples: list[float], baseline: float | None) -> str:
    median = statistics.median(samples)
    p90 = statistics.quantiles(samples, n=10)[-1]
    extra = ""
    if baseline is not None:
        extra = f"  overhead {1000 * (median - baseline):7.2f} ms  ratio {median / baseline:6.1f}x"
    return f"{label:<26} median {1000 * median:7.2f} ms  p90 {1000 * p90:7.2f} ms{extra}"


def main(runs: int = 50) -> None:
    """Measure and print; ``runs`` samples per variant."""
    print(
        f"toolproof sandbox benchmark: `true`, {runs} runs each (python {sys.version.split()[0]})"
    )
    baseline_samples = _times(lambda: subprocess.run(["true"], check=True), runs)
    baseline = statistics.median(baseline_samples)
    print(_row("subprocess.run (baseline)", baseline_samples, None))
    with tempfile.TemporaryDirectory(prefix="toolproof-bench-") as tmp:
        for name in ("process", "bwrap"):
            cls = get_backend(name)
            reason = cls.unavailable_reason()
            if reason is not None:
                print(f"{name + ' backend':<26} skipped: {reason}")
                continue
            with cls(Path(tmp)) as box:
                samples = _times(functools.partial(box.exec, ["true"]), runs)
            print(_row(f"{name} backend", samples, baseline))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 50)
