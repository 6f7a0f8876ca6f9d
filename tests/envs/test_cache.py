"""Finding a set-up environment, comparing it with the pins, and setting one up (offline)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from toolproof.envs import EnvDrift, EnvLock, EnvNotSetUp, SetupFailed, inspect_env, setup_env
from toolproof.envs import cache as cache_mod
from toolproof.envs import setup as installer

from .envkit import fake_env, write_lock


def test_a_set_up_environment_is_ready_with_its_live_digest(tmp_path: Path) -> None:
    lock_path = write_lock(tmp_path / "suite")
    directory = fake_env(tmp_path / "cache", lock_path)
    status = inspect_env(lock_path, tmp_path / "cache")
    assert status.ready and status.directory == directory
    assert status.live == {"ruff": "0.6.9"}
    assert status.live_digest == status.lock.digest
    assert status.require("toolproof env setup x") == directory


def test_nothing_set_up_says_which_command_to_run(tmp_path: Path) -> None:
    lock_path = write_lock(tmp_path / "suite")
    status = inspect_env(lock_path, tmp_path / "cache")
    assert status.directory is None and not status.ready
    with pytest.raises(EnvNotSetUp, match=r"not set up.*run `toolproof env setup lint`"):
        status.require("toolproof env setup lint")


def test_a_changed_pin_is_drift_against_the_environment_in_the_cache(tmp_path: Path) -> None:
    lock_path = write_lock(tmp_path / "suite")
    fake_env(tmp_path / "cache", lock_path)
    data = json.loads(lock_path.read_text())
    data["pip"]["ruff"] = "0.7.0"  # a bump, digest recorded again, not set up yet
    lock = EnvLock.model_validate(data)
    lock.model_copy(update={"digest": lock.expected_digest()}).save(lock_path)
    status = inspect_env(lock_path, tmp_path / "cache")
    assert status.directory is not None and status.changes == ["ruff 0.7.0 → 0.6.9"]
    with pytest.raises(EnvDrift, match=r"ruff 0\.7\.0 → 0\.6\.9.*--allow-drift") as caught:
        status.require("toolproof env setup lint")
    assert caught.value.changes == ["ruff 0.7.0 → 0.6.9"]
    assert status.require("toolproof env setup lint", allow_drift=True) == status.directory


def test_a_hand_edited_version_file_is_drift_too(tmp_path: Path) -> None:
    lock_path = write_lock(tmp_path / "suite")
    fake_env(tmp_path / "cache", lock_path)
    data = json.loads(lock_path.read_text())
    data["pip"]["ruff"] = "0.7.0"  # digest left as it was
    lock_path.write_text(json.dumps(data))
    status = inspect_env(lock_path, tmp_path / "cache")
    assert status.changes[0] == "ruff 0.7.0 → 0.6.9"
    assert "digest does not match" in status.changes[1]


def test_the_newest_environment_of_the_same_name_is_the_one_compared(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    old = write_lock(tmp_path / "old", pip={"ruff": "0.5.0"})
    new = write_lock(tmp_path / "new", pip={"ruff": "0.6.0"})
    fake_env(cache, old)
    newest = fake_env(cache, new)
    stamp = time.time() + 5
    os.utime(newest / "manifest.json", (stamp, stamp))
    wanted = write_lock(tmp_path / "wanted", pip={"ruff": "0.7.0"})
    status = inspect_env(wanted, cache)
    assert status.directory == newest and status.changes == ["ruff 0.7.0 → 0.6.0"]


def test_a_host_runtime_change_is_drift(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lock_path = write_lock(tmp_path / "suite", runtimes={"node": "20"})
    fake_env(tmp_path / "cache", lock_path)
    monkeypatch.setattr(cache_mod, "runtime_version", lambda name: "22.1.0")
    status = inspect_env(lock_path, tmp_path / "cache")
    assert status.changes == ["node 20 → 22"]
    monkeypatch.setattr(cache_mod, "runtime_version", lambda name: "20.20.2")
    assert inspect_env(lock_path, tmp_path / "cache").ready


def test_a_set_up_environment_is_reused_without_installing(tmp_path: Path) -> None:
    lock_path = write_lock(tmp_path / "suite")
    directory = fake_env(tmp_path / "cache", lock_path)
    done = setup_env(lock_path, tmp_path / "cache")
    assert not done.installed and done.directory == directory and done.seconds < 5


def _fake_install(version: str):  # type: ignore[no-untyped-def]
    def install(lock: EnvLock, lock_dir: Path, target: Path, *, record: bool) -> None:
        info = target / "py" / f"ruff-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Name: ruff\nVersion: {version}\n")
        (target / "bin").mkdir()
        (target / "bin" / "ruff").write_text("#!/bin/sh\n")

    return install


def test_set_up_installs_into_place_and_checks_what_it_got(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lock_path = write_lock(tmp_path / "suite")
    monkeypatch.setattr(installer, "_install", _fake_install("0.6.9"))
    done = setup_env(lock_path, tmp_path / "cache")
    assert done.installed and done.directory.name == done.lock.key
    assert json.loads((done.directory / "manifest.json").read_text())["components"] == {
        "ruff": "0.6.9"
    }
    assert inspect_env(lock_path, tmp_path / "cache").ready
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [done.lock.key]  # no leftovers


def test_set_up_refuses_what_differs_from_the_pins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lock_path = write_lock(tmp_path / "suite")
    monkeypatch.setattr(installer, "_install", _fake_install("0.7.0"))
    with pytest.raises(EnvDrift, match=r"ruff 0\.6\.9 → 0\.7\.0"):
        setup_env(lock_path, tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == []  # the half-done directory is gone


def test_record_rewrites_runtimes_and_digest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lock_path = write_lock(tmp_path / "suite", runtimes={"node": "18"})
    monkeypatch.setattr(installer, "_install", _fake_install("0.6.9"))
    monkeypatch.setattr(cache_mod, "runtime_version", lambda name: "20.20.2")
    done = setup_env(lock_path, tmp_path / "cache", record=True)
    assert done.changes == ["node 18 → 20"]
    saved = EnvLock.load(lock_path)
    assert saved.runtimes == {"node": "20"} and saved.digest == saved.expected_digest()
    assert inspect_env(lock_path, tmp_path / "cache").ready


def test_a_missing_program_fails_the_set_up(tmp_path: Path) -> None:
    lock_path = write_lock(tmp_path / "suite", pip={}, bin=["ruff"])
    with pytest.raises(SetupFailed, match="no program 'ruff'"):
        setup_env(lock_path, tmp_path / "cache")
