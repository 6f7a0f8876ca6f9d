"""Every shell example of README.md and docs/*.md runs literally, or says why it cannot.

An example not marked ``<!-- doc-test: skip (WHY) -->`` (see :mod:`doc_examples`) is run
command by command in a fresh temporary folder, ``toolproof`` being this checkout's, each
command with a timeout; each must exit 0 (or the N of an ``exit N`` marker). A command
the test cannot run (a package install, another program) in an unmarked example fails
the test, naming the example: mark it, or make it runnable. So the docs cannot drift
from the tool again.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from doc_examples import ROOT, Example, all_examples, examples

TIMEOUT_S = 240
"""Longest one command of an example may take (the machine is small and shared)."""
RUNNABLE = ("toolproof ", ".venv/bin/toolproof ")
"""How a command the test runs starts: the CLI, nothing else."""
PENDING: dict[str, str] = {}
"""Documents whose examples are not marked yet, with why (empty when every one is)."""
EXAMPLES = [e for e in all_examples() if e.file.name not in PENDING]


def _argv(command: str) -> list[str]:
    words = shlex.split(command, comments=True)
    return [sys.executable, "-m", "toolproof", *words[1:]]


def test_the_examples_are_found() -> None:
    assert len(EXAMPLES) >= 40
    assert {e.file.name for e in EXAMPLES} >= {"README.md", "cli.md", "writing-tasks.md"}
    assert all(e.commands or e.lang == "console" for e in EXAMPLES), [
        e.id for e in EXAMPLES if not e.commands and e.lang != "console"
    ]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e.id)
def test_example_runs_as_written(example: Example, tmp_path: Path) -> None:
    if example.skip:
        pytest.skip(f"marked in the doc: {example.skip}")
    for command in example.commands:
        assert command.startswith(RUNNABLE), (
            f"{example.id}: `{command}` is not a toolproof command the test can run; mark the "
            "example <!-- doc-test: skip (WHY) --> or make it runnable"
        )
    for name, text in example.files:
        (tmp_path / name).write_text(text, encoding="utf-8")
    env = {**os.environ, "TOOLPROOF_NO_PLUGINS": "1", "COLUMNS": "200", "NO_COLOR": "1"}
    for command in example.commands:
        done = subprocess.run(
            _argv(command),
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
            check=False,
        )
        assert done.returncode in example.exits, (
            f"{example.id}: `{command}` exited {done.returncode}\n{done.stdout[-2000:]}\n"
            f"{done.stderr[-3000:]}"
        )


def test_markers_are_read(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(
        "<!-- doc-test: skip (needs an API key) -->\n\n```bash\ntoolproof run core \\\n"
        "  --agent openai:x\n```\n\n<!-- doc-test: exit 1 (a gate) -->\n```console\n"
        "$ toolproof check-task t.yaml\nFAIL t\n```\n\n```python\nprint(1)\n```\n"
        "```\nplain\n```\n  ```sh\n  # a comment\n  toolproof list\n  ```\n",
        encoding="utf-8",
    )
    found = examples(doc)
    assert [(e.line, e.skip, e.exits, e.commands) for e in found] == [
        (3, "needs an API key", (0,), ("toolproof run core --agent openai:x",)),
        (9, None, (0, 1), ("toolproof check-task t.yaml",)),
        (20, None, (0,), ("toolproof list",)),
    ]
    assert ROOT.is_dir()
