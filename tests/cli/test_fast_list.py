"""A plain ``toolproof list`` answered from the text it printed last time, only while
nothing it depends on has changed."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from toolproof.cli import _fast_list

SRC = Path(__file__).resolve().parents[2] / "src"
PROBE = """
import sys
from toolproof.cli import main
main(sys.argv[1:])
sys.stderr.write(repr(sorted(sys.modules)))
"""


def _list(cache: Path, **env: str) -> tuple[str, set[str]]:
    """``toolproof list`` in a fresh interpreter: what it printed, what it imported."""
    environ = {**os.environ, "PYTHONPATH": str(SRC), "XDG_CACHE_HOME": str(cache), **env}
    environ.pop("TOOLPROOF_NO_INDEX", None)
    if "COLUMNS" not in env:
        environ.pop("COLUMNS", None)
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "list"], env=environ, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout, set(ast.literal_eval(done.stderr.strip().splitlines()[-1]))


@pytest.fixture(scope="module")
def warmed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    cache = tmp_path_factory.mktemp("fast") / "cache"
    first, modules = _list(cache)
    assert "toolproof.cli._listing" in modules  # made the long way, then kept
    assert (cache / "toolproof" / _fast_list._FILE).is_file()
    return cache, first


def test_the_second_list_is_the_kept_text_and_imports_almost_nothing(
    warmed: tuple[Path, str],
) -> None:
    cache, first = warmed
    again, modules = _list(cache)
    assert again == first
    assert "core" in again and "oracle" in again
    for module in ("toolproof.cli._listing", "toolproof.spec", "json", "re", "typing"):
        assert module not in modules, module


def test_another_terminal_width_is_made_again(warmed: tuple[Path, str]) -> None:
    cache, first = warmed
    narrow, modules = _list(cache, COLUMNS="60")
    assert "toolproof.cli._listing" in modules
    assert narrow != first  # the tables wrapped at 60 columns


def test_a_changed_cache_input_is_made_again(tmp_path: Path, warmed: tuple[Path, str]) -> None:
    cache, first = warmed
    import shutil

    shutil.copytree(cache, tmp_path / "cache")
    index = tmp_path / "cache" / "toolproof" / "suite-index.json"
    os.utime(index, ns=(time.time_ns(), time.time_ns() + 10**9))
    again, modules = _list(tmp_path / "cache")
    assert again == first and "toolproof.cli._listing" in modules


def test_the_key_follows_every_file_of_the_package(tmp_path: Path) -> None:
    package = tmp_path / "toolproof"
    (package / "suites" / "core").mkdir(parents=True)
    task = package / "suites" / "core" / "task.yaml"
    task.write_text("id: a\n")
    (package / "__pycache__").mkdir()
    before = _fast_list.key(str(tmp_path), str(package))
    (package / "__pycache__" / "x.pyc").write_bytes(b"x")  # bytecode is not an input
    assert _fast_list.key(str(tmp_path), str(package)) == before
    task.write_text("id: b\n")  # same size: the time tells
    os.utime(task, ns=(time.time_ns(), time.time_ns() + 10**9))
    changed = _fast_list.key(str(tmp_path), str(package))
    assert changed != before
    (package / "suites" / "core" / "new.yaml").write_text("id: c\n")
    assert _fast_list.key(str(tmp_path), str(package)) != changed


@pytest.mark.parametrize("content", [b"", b"garbage", b"\x00\x01\x02", None])
def test_a_damaged_or_foreign_cache_file_is_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: bytes | None
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("TOOLPROOF_NO_INDEX", raising=False)
    folder = tmp_path / "toolproof"
    folder.mkdir()
    import marshal

    data = content if content is not None else marshal.dumps(("not the key", "forged"))
    (folder / _fast_list._FILE).write_bytes(data)
    assert _fast_list.cached() is None


def test_a_listing_with_plug_ins_is_never_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from toolproof.cli import _paths, _quick_list

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("TOOLPROOF_NO_INDEX", raising=False)
    monkeypatch.setattr(_paths, "load_plugins", lambda warn=None: {"someone.plugin": None})
    monkeypatch.setattr(_fast_list, "fresh_process", lambda: True)  # as from a clean start
    assert _quick_list() == 0
    assert "suites" in capsys.readouterr().out
    assert not (tmp_path / "toolproof" / _fast_list._FILE).exists()


def test_nothing_is_kept_while_a_package_file_is_younger_than_two_seconds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    package = tmp_path / "toolproof"
    package.mkdir()
    (package / "fresh.py").write_text("x = 1\n")  # just written: it may change again unseen
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("TOOLPROOF_NO_INDEX", raising=False)
    real_key = _fast_list.key
    monkeypatch.setattr(_fast_list, "key", lambda folder: real_key(folder, str(package)))
    _fast_list.store("listing")
    assert _fast_list.cached() is None
    old = time.time_ns() - 10 * 10**9
    os.utime(package / "fresh.py", ns=(old, old))
    if max(os.stat(package / "fresh.py").st_ctime_ns, 0) > time.time_ns() - 2 * 10**9:
        # the change time cannot be set back: wait the two seconds out instead
        time.sleep(2.1)
    _fast_list.store("listing")
    assert _fast_list.cached() == "listing"


def test_a_process_that_ran_toolproof_code_already_lists_live_and_keeps_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from toolproof import _plugins
    from toolproof.cli import _quick_list

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("TOOLPROOF_NO_INDEX", raising=False)
    monkeypatch.setattr(_fast_list, "cached", lambda: "kept text\n")  # must not be asked
    real = _plugins.installed_version
    monkeypatch.setattr(  # a patched function: its output is this process's own
        _plugins, "installed_version", lambda name: None if name == "bfcl-eval" else real(name)
    )
    assert not _fast_list.fresh_process()  # this test process has loaded toolproof.spec
    assert _quick_list() == 0
    out = capsys.readouterr().out
    assert "kept text" not in out and "bfcl           not installed" in out
    assert not (tmp_path / "toolproof" / _fast_list._FILE).exists()
