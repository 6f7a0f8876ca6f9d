"""Cost of a per-step world snapshot and of a restore, and of one sandboxed command.

Builds a workspace of 500 files (20 MB in all, in 25 directories), stores a first
snapshot, then measures, each over N rounds with one file changed before each:

* ``save_snapshot``: walk, re-hash only changed files, copy only new content
  into the content-addressed blob store, store the manifest;
* ``load_snapshot + restore``: back to the stored state, writing only what differs;
* ``shutil.copytree``: the naive baseline, a full copy of the workspace.

It also prints the first (cold) snapshot, which hashes and stores everything,
and the sandbox figures of ``bench_sandbox.py`` (``true`` through each backend
against a bare ``subprocess.run``) plus ``run_command("true")`` through the tool
gateway (sandbox, output kept, JSON result).

Run: ``python benchmarks/bench_snapshot.py [rounds]`` (default 30). No assertions.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import bench_sandbox  # the sibling benchmark, reused
from _common import Load

from toolproof.sandbox import get_backend
from toolproof.spec import SandboxSpec, WorldSpec
from toolproof.tools import ToolContext, ToolGateway, load_builtin, registry
from toolproof.tools.toolkits.shell import SETTINGS_KEY
from toolproof.trajectory import ToolCall
from toolproof.worlds import BlobStore, World

FILES = 500
SIZE = 20 * 1024 * 1024


def build(world: World) -> Path:
    """Fill the world's workspace with FILES files of SIZE bytes in all."""
    assert world.workspace is not None
    root = world.workspace.root
    each = SIZE // FILES
    for n in range(FILES):
        path = root / f"pkg{n % 25:02d}" / f"module_{n:03d}.bin"
        path.parent.mkdir(exist_ok=True)
        path.write_bytes(os.urandom(each))
    return root


def median_ms(samples: list[float]) -> str:
    return f"median {1000 * statistics.median(samples):8.2f} ms  (min {1000 * min(samples):.2f})"


def rounds(n: int, change: Callable[[], None], measured: Callable[[], object]) -> list[float]:
    """``change`` (not timed) then ``measured`` (timed), ``n`` times."""
    samples = []
    for _ in range(n):
        change()
        start = time.perf_counter()
        measured()
        samples.append(time.perf_counter() - start)
    return samples


def snapshot_figures(n: int, tmp: Path) -> None:
    world = World(WorldSpec(workspace=True), tmp_root=tmp)
    try:
        root = build(world)
        blobs = BlobStore(tmp / "blobs")
        time.sleep(0.2)  # let the files age past the racy window, as between agent turns
        start = time.perf_counter()
        ref = world.save_snapshot(blobs)
        cold = time.perf_counter() - start
        target = root / "pkg07" / "module_007.bin"

        def change() -> None:
            target.write_bytes(os.urandom(SIZE // FILES))

        snap = rounds(n, change, lambda: world.save_snapshot(blobs))
        restore = rounds(n, change, lambda: world.restore(World.load_snapshot(blobs, ref), blobs))
        copies = iter(range(n))
        naive = rounds(n, lambda: None, lambda: shutil.copytree(root, tmp / f"copy{next(copies)}"))
    finally:
        world.close()
    print(f"workspace: {FILES} files, {SIZE / 2**20:.0f} MB, one file changed per round")
    print(f"  first snapshot (cold: hash and store all)  {1000 * cold:8.2f} ms")
    print(f"  save_snapshot                   {median_ms(snap)}")
    print(f"  load_snapshot + restore         {median_ms(restore)}")
    print(f"  shutil.copytree (baseline)      {median_ms(naive)}")
    ratio = statistics.median(naive) / statistics.median(snap)
    print(f"  snapshot is {ratio:.0f}x cheaper than a full copy")


def command_samples(backend: str, n: int, tmp: Path) -> list[float]:
    """Seconds of ``run_command("true")`` through the gateway, ``n`` times."""
    with World(WorldSpec(workspace=True), tmp_root=tmp) as world:
        ctx = ToolContext(world=world, scratch={SETTINGS_KEY: SandboxSpec(backend=backend)})
        gateway = ToolGateway([registry()["run_command"]], ctx)
        call = ToolCall(id="c", name="run_command", arguments={"command": "true"})
        return rounds(n, lambda: None, lambda: asyncio.run(gateway.call(call)))


def run_command_figure(n: int, tmp: Path) -> None:
    load_builtin()
    for backend in ("bwrap", "process"):
        if get_backend(backend).available():
            samples = command_samples(backend, n, tmp)
            print(f"run_command('true') via gateway, {backend:<8} {median_ms(samples)}")


def main(n: int = 30) -> None:
    """Measure and print; ``n`` rounds per figure."""
    load = Load()
    print(f"toolproof snapshot benchmark, {n} rounds (python {sys.version.split()[0]})")
    with tempfile.TemporaryDirectory(prefix="toolproof-bench-snap-") as tmp:
        snapshot_figures(n, Path(tmp))
        load.sample()
        print()
        bench_sandbox.main(n, files=200)  # its default workspace
        run_command_figure(n, Path(tmp))
        load.sample()
    print(load.line())


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 30)
