"""The version file: validation, digest, the pinned → live wording of changes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from toolproof.envs import EnvLock, component_changes, compute_digest
from toolproof.spec import SpecError

from .envkit import write_lock


def test_the_digest_covers_components_files_env_and_programs(tmp_path: Path) -> None:
    lock = EnvLock.load(write_lock(tmp_path))
    assert lock.digest == lock.expected_digest()
    assert lock.digest.startswith("sha256:") and len(lock.digest) == 7 + 64
    base = compute_digest("tools", {"ruff": "0.6.9"}, {}, {}, ["ruff"])
    assert base == lock.digest
    assert compute_digest("tools", {"ruff": "0.7.0"}, {}, {}, ["ruff"]) != base
    assert compute_digest("tools", {"ruff": "0.6.9"}, {"a": "1"}, {}, ["ruff"]) != base
    assert compute_digest("tools", {"ruff": "0.6.9"}, {}, {"X": "1"}, ["ruff"]) != base
    assert compute_digest("tools", {"ruff": "0.6.9"}, {}, {}, ["ruff", "x"]) != base
    assert lock.key == "tools-" + lock.digest[7:23]


def test_a_hand_edit_is_visible_as_a_digest_mismatch(tmp_path: Path) -> None:
    path = write_lock(tmp_path)
    data = json.loads(path.read_text())
    data["pip"]["ruff"] = "0.7.0"
    path.write_text(json.dumps(data))
    lock = EnvLock.load(path)
    assert lock.expected_digest() != lock.digest


def test_changes_read_pinned_to_live() -> None:
    pinned = {"ruff": "0.6.9", "node": "20", "eslint": "9.39.5"}
    live = {"ruff": "0.7.0", "node": "20", "typescript": "5.9.3"}
    assert component_changes(pinned, live) == [
        "eslint 9.39.5 → (none)",
        "ruff 0.6.9 → 0.7.0",
        "typescript (none) → 5.9.3",
    ]
    assert component_changes(pinned, dict(pinned)) == []


def test_bad_version_files_name_the_file_and_field(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="no such version file"):
        EnvLock.load(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(SpecError, match="unreadable"):
        EnvLock.load(bad)
    bad.write_text(json.dumps({"name": "x", "bin": ["ruff"], "digest": "d", "extra": 1}))
    with pytest.raises(SpecError, match=r"bad\.json: extra"):
        EnvLock.load(bad)
    both = {"name": "x", "bin": ["ruff"], "digest": "d", "pip": {"a": "1"}, "npm": {"a": "1"}}
    bad.write_text(json.dumps(both))
    with pytest.raises(SpecError, match="named twice"):
        EnvLock.load(bad)
    npm_only = {"name": "x", "bin": ["eslint"], "digest": "d", "npm": {"eslint": "9.0.0"}}
    bad.write_text(json.dumps(npm_only))
    with pytest.raises(SpecError, match=r"package-lock\.json"):
        EnvLock.load(bad)


def test_save_round_trips(tmp_path: Path) -> None:
    path = write_lock(tmp_path, baseline={"task-a": 3}, env={"RUFF_NO_CACHE": "true"})
    lock = EnvLock.load(path)
    assert lock.baseline == {"task-a": 3}
    lock.save(tmp_path / "again.json")
    assert (tmp_path / "again.json").read_text() == path.read_text()
    assert path.read_text().endswith("}\n")
