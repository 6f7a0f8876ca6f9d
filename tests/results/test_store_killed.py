"""A writer SIGKILLed with appends not yet committed: a resume stores each episode once.

The store commits in batches (``commit_every``), so a kill loses the batch not yet
committed; its lines, written or not, are cut off when the store is opened again, those
episodes run again, and the result is what a run that was never killed stores.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from toolproof.metrics import summarize
from toolproof.results import TRAJECTORIES, RunReader, RunStore

from .test_store import _record

EPISODES, BATCH, KILLED_AFTER = 30, 8, 21
"""21 appends in batches of 8: 16 committed, 5 pending when the writer is killed."""

_WRITER = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from results.test_store import _record
from toolproof.results import RunStore

store = RunStore(Path(sys.argv[1]), commit_every=int(sys.argv[3]))
for n in range(int(sys.argv[4])):
    store.append(_record(f"t{n % 5}", n // 5, passed=n % 3 != 0, tokens=n))
if sys.argv[5] == "flushed":  # the uncommitted lines reach the file, as a full buffer's do
    store._jsonl.flush()
print(store.pending, flush=True)
sys.stdin.read()  # killed here
"""


def _all() -> list[tuple[str, int, bool, int]]:
    return [(f"t{n % 5}", n // 5, n % 3 != 0, n) for n in range(EPISODES)]


@pytest.mark.parametrize("lines", ["flushed", "buffered"])
def test_a_writer_killed_mid_batch_resumes_to_the_uninterrupted_result(
    tmp_path: Path, lines: str
) -> None:
    run = tmp_path / "killed"
    tests = str(Path(__file__).resolve().parents[1])
    writer = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(run), tests, str(BATCH), str(KILLED_AFTER), lines],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout is not None
        pending = writer.stdout.readline().strip()
        assert pending == str(KILLED_AFTER % BATCH), pending
        os.kill(writer.pid, signal.SIGKILL)
        assert writer.wait(timeout=30) == -signal.SIGKILL
    finally:
        if writer.poll() is None:
            writer.kill()
            writer.wait()
        for pipe in (writer.stdin, writer.stdout):
            if pipe is not None:
                pipe.close()

    committed = KILLED_AFTER // BATCH * BATCH
    store = RunStore(run)  # the resume: uncommitted lines are cut off
    done = store.keys()
    assert done == {f"{t}#{e}" for t, e, _, _ in _all()[:committed]}
    assert len((run / TRAJECTORIES).read_bytes().splitlines()) == committed
    for task, epoch, passed, tokens in _all():
        if f"{task}#{epoch}" not in done:
            store.append(_record(task, epoch, passed=passed, tokens=tokens))
    store.close()

    reference = tmp_path / "reference"
    store = RunStore(reference, commit_every=BATCH)
    for task, epoch, passed, tokens in _all():
        store.append(_record(task, epoch, passed=passed, tokens=tokens))
    store.close()

    lines_of = [
        json.loads(line)["episode_id"] for line in (run / TRAJECTORIES).read_bytes().splitlines()
    ]
    assert sorted(lines_of) == sorted(f"{t}#{e}" for t, e, _, _ in _all())  # each once
    with RunReader(run) as resumed, RunReader(reference) as whole:
        assert resumed.count() == EPISODES
        got = summarize(resumed.records(), {"planned": EPISODES})
        want = summarize(whole.records(), {"planned": EPISODES})
    assert got["episodes"]["finished"] == EPISODES
    assert got == want
