"""Importing a user's ``python:`` module: whatever its code raises while it imports, or while
its attribute is looked up (even ``SystemExit`` or ``KeyboardInterrupt``), is a spec error
(exit 2, the module named, no traceback), never the run's exit status; a real Ctrl-C that
arrives meanwhile still ends the run."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from toolproof_helpers import make_task, write_suite

HOSTILE_MODULES = {
    "exit_zero": "raise SystemExit(0)\n",
    "exit_five": "raise SystemExit(5)\nclass A: ...\n",
    "value_error": "raise ValueError('boom at import')\n",
    "keyboard": "raise KeyboardInterrupt\n",
    "generator_exit": "raise GeneratorExit\n",
    "base_subclass": "class Mine(BaseException): ...\nraise Mine('mine')\n",
    "getattr_exit": "def __getattr__(name):\n    raise SystemExit(0)\n",
    "getattr_keyboard": "def __getattr__(name):\n    raise KeyboardInterrupt\n",
    "surrogate_text": (
        "class Odd(Exception):\n    def __str__(self):\n        return '\\udcff'\nraise Odd()\n"
    ),
    "str_raises": (
        "class Odd(Exception):\n    def __str__(self):\n        raise SystemExit(3)\nraise Odd()\n"
    ),
    "nested_getattr": (
        "class Box:\n    def __getattr__(self, name):\n        raise SystemExit(7)\nA = Box()\n"
    ),
}


def _toolproof(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(cwd), "TOOLPROOF_NO_INDEX": "1"}
    return subprocess.run(
        [sys.executable, "-m", "toolproof", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


@pytest.mark.parametrize("name", sorted(HOSTILE_MODULES))
def test_a_module_that_raises_or_exits_as_it_imports_is_a_spec_error(
    tmp_path: Path, name: str
) -> None:
    write_suite(tmp_path / "suite", [make_task()])
    (tmp_path / f"{name}.py").write_text(HOSTILE_MODULES[name], encoding="utf-8")
    target = f"{name}:A.b" if name == "nested_getattr" else f"{name}:A"
    done = _toolproof(["run", "suite", "--agent", f"python:{target}", "-o", "out", "-q"], tmp_path)
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    assert f"module {name!r}" in done.stderr
    assert "error: agent:" in done.stderr


def test_a_module_that_imports_cleanly_still_runs(tmp_path: Path) -> None:
    write_suite(tmp_path / "suite", [make_task()])
    (tmp_path / "quiet.py").write_text(
        "from toolproof.agents import AgentTurn\n"
        "class A:\n    def act(self, observation):\n        return AgentTurn(final_answer='7')\n",
        encoding="utf-8",
    )
    done = _toolproof(["run", "suite", "--agent", "python:quiet:A", "-o", "out", "-q"], tmp_path)
    assert done.returncode == 0, done.stderr


_IMPORT = textwrap.dedent(
    """
    import sys
    from toolproof.agents.builtin.python_agent import import_target
    from toolproof.spec import SpecError
    try:
        import_target(sys.argv[1] + ":A", "agent")
    except SpecError as exc:
        print("SPEC", exc)
        sys.exit(2)
    except KeyboardInterrupt:
        print("CTRL-C")
        sys.exit(130)
    print("IMPORTED")
    """
)


def _import(tmp_path: Path, name: str, source: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / f"{name}.py").write_text(source, encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-c", _IMPORT, name],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_real_sigint_during_the_import_is_passed_on(tmp_path: Path) -> None:
    """A SIGINT delivered while the module imports is a Ctrl-C: it ends the import as one."""
    source = (
        "import os, signal, time\n"
        "os.kill(os.getpid(), signal.SIGINT)\n"
        "time.sleep(5)\n"
        "class A: ...\n"
    )
    done = _import(tmp_path, "signalled", source)
    assert done.stdout.strip() == "CTRL-C", (done.stdout, done.stderr)


def test_a_raised_keyboard_interrupt_is_the_modules_error(tmp_path: Path) -> None:
    done = _import(tmp_path, "raiser", "raise KeyboardInterrupt\n")
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "importing module 'raiser' raised KeyboardInterrupt" in done.stdout


def test_the_sigint_handler_is_put_back_after_the_import(tmp_path: Path) -> None:
    """A module that installs its own SIGINT handler does not keep it past the import."""
    source = "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nclass A: ...\n"
    (tmp_path / "grabber.py").write_text(source, encoding="utf-8")
    code = (
        "import signal\n"
        "from toolproof.agents.builtin.python_agent import import_target\n"
        "before = signal.getsignal(signal.SIGINT)\n"
        "import_target('grabber:A', 'agent')\n"
        "print(signal.getsignal(signal.SIGINT) is before)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.stdout.strip() == "True", done.stderr


@pytest.mark.parametrize(
    "source",
    [
        "raise SystemExit(0)\n",
        "raise KeyboardInterrupt\n",
        "def __getattr__(name):\n    raise SystemExit(0)\n",
        "def __getattr__(name):\n    raise KeyboardInterrupt\n",
    ],
)
def test_a_suites_custom_check_module_that_exits_is_a_spec_error(
    tmp_path: Path, source: str
) -> None:
    """The suite's own Python (a ``custom`` check) is held to the same rule before a run."""
    task = make_task(success=[{"kind": "custom", "function": "exiting_check:fn"}])
    root = write_suite(tmp_path / "suite", [task])
    (root / "exiting_check.py").write_text(source, encoding="utf-8")
    for command in (["validate", "suite"], ["run", "suite", "--agent", "oracle", "-o", "out"]):
        done = _toolproof(command, tmp_path)
        assert done.returncode == 2, (command, done.returncode, done.stderr)
        assert "Traceback" not in done.stderr
        assert "'exiting_check'" in done.stderr and "success[0].function" in done.stderr
