"""The size check after each command: the same total as a full walk, walked only after a change."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof.sandbox import ResourceLimits, Sandbox, get_backend
from toolproof.sandbox._detect import workspace_bytes
from toolproof.sandbox._sizewatch import SizeWatch, _inotify

_EXAMPLES = int(os.environ.get("TOOLPROOF_FUZZ_EXAMPLES", "40"))
_NAMES = st.sampled_from(["a", "b", "d/c", "d/e/f", "g"])
_OPS = st.one_of(
    st.tuples(st.just("write"), _NAMES, st.integers(0, 5000)),
    st.tuples(st.just("sparse"), _NAMES, st.integers(0, 10**12)),
    st.tuples(st.just("append"), _NAMES, st.integers(1, 300)),
    st.tuples(st.just("link"), _NAMES, _NAMES),
    st.tuples(st.just("symlink"), _NAMES, _NAMES),
    st.tuples(st.just("rename"), _NAMES, _NAMES),
    st.tuples(st.just("remove"), _NAMES, st.just(0)),
    st.tuples(st.just("nothing"), _NAMES, st.just(0)),
)


def _apply(root: Path, op: tuple[str, str, object]) -> None:
    kind, name, arg = op
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        if kind == "write":
            path.write_bytes(b"x" * int(arg))  # type: ignore[call-overload]
        elif kind == "sparse":
            with open(path, "ab") as f:
                f.truncate(int(arg))  # type: ignore[call-overload]
        elif kind == "append":
            with open(path, "ab") as f:
                f.write(b"y" * int(arg))  # type: ignore[call-overload]
        elif kind == "link":
            os.link(path, root / str(arg))
        elif kind == "symlink":
            (root / str(arg)).symlink_to(path)
        elif kind == "rename":
            os.replace(path, root / str(arg))
        elif kind == "remove":
            path.unlink()
    except OSError:
        pass  # a missing source, an existing target: the tree stays as it is


@settings(max_examples=_EXAMPLES, derandomize=True, deadline=None)
@given(st.lists(_OPS, max_size=12))
def test_the_total_always_equals_a_full_walk(ops: list[tuple[str, str, object]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        watch = SizeWatch(root)
        try:
            assert watch.bytes() == workspace_bytes(root)
            for op in ops:
                _apply(root, op)
                assert watch.bytes() == workspace_bytes(root), op
        finally:
            watch.close()


def test_an_unchanged_tree_is_not_walked_again(tmp_path: Path) -> None:
    if _inotify() is None:
        pytest.skip("no inotify here: every check walks")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "f").write_text("abc")
    watch = SizeWatch(tmp_path)
    assert (watch.bytes(), watch.walks) == (3, 1)
    assert (watch.bytes(), watch.walks) == (3, 1)
    (tmp_path / "sub" / "f").read_text()  # reading changes nothing
    os.utime(tmp_path / "sub" / "f")
    assert (watch.bytes(), watch.walks) == (3, 1)
    with open(tmp_path / "sub" / "f", "r+b") as f:  # deep, and the size stays the same
        f.truncate(10**9)
    assert (watch.bytes(), watch.walks) == (10**9, 2)
    watch.close()
    assert watch.wds == set() and watch.bytes() == 10**9  # closed: it only walks


def test_a_forked_child_does_not_share_its_parents_events(tmp_path: Path) -> None:
    """Reading the parent's queue would take its events: the child gets its own."""
    if _inotify() is None:
        pytest.skip("no inotify here: every check walks")
    (tmp_path / "f").write_text("abc")
    watch = SizeWatch(tmp_path)
    assert watch.bytes() == 3
    pid = os.fork()
    if pid == 0:  # the child: its first check walks, on its own instance
        code = 0 if watch.bytes() == 3 and watch.walks == 2 else 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    (tmp_path / "f").write_text("abcdef")  # the parent still sees its own events
    assert watch.bytes() == 6 and watch.walks == 2
    watch.close()


def test_a_sparse_file_made_inside_the_sandbox_is_still_over_budget(workspace: Path) -> None:
    cls = get_backend("bwrap")
    if cls.unavailable_reason() is not None:
        pytest.skip("bwrap unusable here")
    limits = ResourceLimits(workspace_mb=4, file_size_mb=64)
    box: Sandbox
    with cls(workspace, limits) as box:
        for _ in range(3):
            assert box.exec("true").limit_hit is None
        walks = box._sizes.walks
        assert (box.exec("true").limit_hit is None and box._sizes.walks == walks) or \
            _inotify() is None  # fmt: skip
        hit = box.exec("mkdir -p deep/er && truncate -s 50M deep/er/sparse")
        assert hit.limit_hit == "workspace_size", hit
        assert box.exec("rm deep/er/sparse").limit_hit is None
