"""``scripts/apt-wait.sh``: apt-get waits (bounded) for another apt's lock, then goes on."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "apt-wait.sh"
LOCKED = (
    "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (apt-get)\n"
    "E: Unable to acquire the dpkg frontend lock, is another process using it?"
)


def _run(
    tmp_path: Path, failures: int, message: str, timeout: int
) -> subprocess.CompletedProcess[str]:
    """Source the script and call apt_get with a fake apt-get that fails ``failures`` times."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "apt-get"
    (tmp_path / "message").write_text(message + "\n")
    fake.write_text(
        "#!/bin/sh\n"
        f'count="{tmp_path}/count"\n'
        'n=$(cat "$count" 2>/dev/null || echo 0); n=$((n + 1)); echo $n > "$count"\n'
        f'echo "$@" >> "{tmp_path}/args"\n'
        f'if [ $n -le {failures} ]; then cat "{tmp_path}/message" >&2; exit 100; fi\n'
        "exit 0\n"
    )
    fake.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "APT_LOCK_POLL_S": "0",
        "APT_LOCK_TIMEOUT": str(timeout),
        "SUDO": "",
    }
    return subprocess.run(
        ["bash", "-c", f'. "{SCRIPT}"; apt_get install -y bubblewrap'],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def test_a_held_lock_is_waited_for(tmp_path: Path) -> None:
    result = _run(tmp_path, failures=2, message=LOCKED, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("holds the lock; waiting") == 2
    calls = (tmp_path / "args").read_text().splitlines()
    assert len(calls) == 3 and all("DPkg::Lock::Timeout=300" in c for c in calls)
    assert calls[-1].endswith("install -y bubblewrap")


def test_the_wait_is_bounded(tmp_path: Path) -> None:
    result = _run(tmp_path, failures=1000, message=LOCKED, timeout=3)
    assert result.returncode == 100
    assert "gave up after 3s waiting for the apt lock" in result.stderr
    assert len((tmp_path / "args").read_text().splitlines()) == 4  # tries at 0, 1, 2, 3 s


@pytest.mark.parametrize(
    "message",
    ["E: Unable to locate package bubblewrap", "E: Unable to locate package lockfile-progs"],
)
def test_other_errors_fail_at_once(tmp_path: Path, message: str) -> None:
    result = _run(tmp_path, failures=1, message=message, timeout=300)
    assert result.returncode == 100
    assert "waiting" not in result.stderr
    assert len((tmp_path / "args").read_text().splitlines()) == 1
