"""scripts/convert_answers.py: a one-number output check becomes a typed answer, and
nothing else is touched."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

import yaml

from toolproof.spec import AnswerCheck, Task

SCRIPT = Path(__file__).parents[2] / "scripts" / "convert_answers.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("convert_answers", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TASK = """id: t
description: How many units of A?
type: single_tool
tools: [get_stock]
world:
  records: {products: {A: {stock: 7}, B: {stock: 3}}}
success:
  - kind: process
    must_call: [get_stock]
  - kind: output
    number: 7
    tolerance: 0.5
levels:
  perfect: {checks: [output_1]}
solution:
  calls: [{tool: get_stock, args: {product_id: A}}]
  answer: "7 units."
"""


def test_a_lone_number_becomes_a_typed_answer() -> None:
    out, what = _script().convert(TASK)
    assert what == "converted"
    task = Task.model_validate(yaml.safe_load(out))
    answer = task.answer
    assert isinstance(answer, AnswerCheck)
    assert (answer.expected, answer.tolerance, answer.comparison) == (7, 0.5, "tolerance")
    assert task.solution.submit == 7
    assert task.levels.perfect is not None and task.levels.perfect.checks == ["answer_1"]


def test_what_it_cannot_convert_is_left_alone() -> None:
    convert = _script().convert
    two_facts = TASK.replace("    number: 7\n", "    number: 7\n    contains: [A]\n")
    assert convert(two_facts) == (
        two_facts,
        "skipped: output check ['contains', 'number', 'tolerance'] is not a lone number",
    )
    turns = TASK + "user_turns:\n  - content: And B?\n"
    assert convert(turns)[0] == turns
    evidence = TASK.replace("levels:", "  - kind: evidence\n    require: [A]\nlevels:")
    assert convert(evidence)[1] == "skipped: an evidence check reads the free-text answer"
