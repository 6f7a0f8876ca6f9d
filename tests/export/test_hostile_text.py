"""Whatever text an agent wrote (any Unicode a record can hold: control characters, quotes,
separators, newlines, markup) comes out of every text export well formed and intact."""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof.export import export_run
from toolproof.scoring import CheckResult
from toolproof.trajectory import Message, Step, ToolCall, ToolResult

from .runs import record, write_run

EXAMPLES = int(os.environ.get("TOOLPROOF_FUZZ_EXAMPLES", "20"))
TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=80)
"""Any text a record can hold (a lone surrogate is refused before it is stored)."""


def _run(folder: Path, answer: str, detail: str, name: str, content: str) -> Path:
    step = Step(
        index=0,
        message=Message(role="assistant", tool_calls=[ToolCall(id="c", name=name, arguments={})]),
        results=[ToolResult(call_id="c", name=name, content=content, is_error=True)],
    )
    check = CheckResult(name="c1", kind="state", passed=False, score=0.0, detail=detail)
    episode = record("t", 0, passed=False, checks=[check], answer=answer, steps=[step])
    return write_run(folder / "run", [episode])


def _export(run: Path, fmt: str) -> bytes:
    buffer = io.BytesIO()
    assert export_run(run, fmt, buffer) == (1, [])
    return buffer.getvalue()


@settings(max_examples=EXAMPLES, derandomize=True, deadline=None)
@given(answer=TEXT, detail=TEXT, name=TEXT.filter(bool), content=TEXT)
def test_text_exports_carry_agent_text_intact(
    answer: str, detail: str, name: str, content: str
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        run = _run(Path(folder), answer, detail, name, content)

        (row,) = csv.DictReader(io.StringIO(_export(run, "csv").decode("utf-8"), newline=""))
        assert row["final_answer"] == answer
        assert json.loads(row["checks"])[0]["detail"] == detail

        (line,) = _export(run, "otel").decode("utf-8").splitlines()
        spans = json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"]
        tool = next(s for s in spans if s["name"].startswith("execute_tool"))
        names = {a["key"]: a["value"] for a in tool["attributes"]}
        assert names["gen_ai.tool.name"] == {"stringValue": name}

        log = json.loads(_export(run, "inspect"))
        (sample,) = log["samples"]
        assert sample["output"]["completion"] == answer
        assert sample["messages"][-1]["content"] == content
        assert sample["scores"]["passed"]["metadata"]["checks"][0]["detail"] == detail
