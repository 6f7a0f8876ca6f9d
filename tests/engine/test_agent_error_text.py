"""An agent's exception text that no store can write (a lone surrogate, a file name with a
NUL, a ``__str__`` that raises ``SystemExit``) is stored as that episode's agent_error, with
the invalid characters escaped, never as an unstorable record blamed on toolproof."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from toolproof.engine import RunConfig
from toolproof.engine._agent_code import error_text
from toolproof_helpers import make_task, run_single, write_suite

AGENTS = textwrap.dedent(
    """
    class SurStr(Exception):
        def __str__(self):
            return "bad \\udcff surrogate"

    class SurBase(BaseException):
        def __str__(self):
            return "\\udcff" * 10

    class ExitStr(Exception):
        def __str__(self):
            raise SystemExit(3)

    class RaiseSur:
        async def act(self, observation):
            raise SurStr()

    class RaiseSurBase:
        def act(self, observation):
            raise SurBase()

    class RaiseExitStr:
        async def act(self, observation):
            raise ExitStr()

    class RaiseFromNulFile:
        def act(self, observation):
            code = compile("raise ValueError(chr(0xdcff))", "x.py", "exec")
            exec(code.replace(co_filename="bad\\x00name"))
    """
)


@pytest.mark.parametrize(
    ("agent", "start"),
    [
        ("RaiseSur", "SurStr: bad \\udcff surrogate"),
        ("RaiseSurBase", "act() raised SurBase: \\udcff"),
        ("RaiseExitStr", "act() of step 0 raised"),
        ("RaiseFromNulFile", "ValueError: \\udcff"),
    ],
)
def test_unwritable_exception_text_is_the_agents_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, agent: str, start: str
) -> None:
    (tmp_path / "surrogate_agents.py").write_text(AGENTS, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    suite = write_suite(tmp_path / "suite", [make_task()])
    config = RunConfig(
        suite=str(suite), agent=f"python:surrogate_agents:{agent}", snapshots=False, retries=0
    )
    record, summary = run_single(config, tmp_path / "run")
    error = record.trajectory.error or ""
    assert record.trajectory.termination.value == "agent_error"
    assert "toolproof fault" not in error
    assert start in error, error
    error.encode("utf-8")  # storable as it is
    assert summary["episodes"]["finished"] == 1


def test_error_text_is_valid_unicode_whatever_the_exception_says() -> None:
    class Odd(Exception):
        def __str__(self) -> str:
            return "\ud800 and \udfff"

    text = error_text(Odd())
    text.encode("utf-8")
    assert text == "Odd: \\ud800 and \\udfff"
