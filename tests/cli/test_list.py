"""``toolproof list``: whole descriptions, what each agent is for, the tools reference."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from toolproof.cli._list import AGENT_PURPOSE
from toolproof.cli._tools_doc import _rst_to_markdown, tools_reference
from toolproof.spec import builtin_suite_names, load_suite
from toolproof.tools import registry
from toolproof.tools.toolkits import load_builtin
from toolproof_helpers import CliResult

Invoke = Callable[..., CliResult]
DOCS = Path(__file__).resolve().parents[2] / "docs"


def _words(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("width", ["60", "200"])
def test_descriptions_wrap_by_word_and_are_never_cut(
    invoke: Invoke, monkeypatch: pytest.MonkeyPatch, width: str
) -> None:
    monkeypatch.setenv("COLUMNS", width)
    result = invoke("list")
    assert result.code == 0, result.err
    column = _words(result.out)
    for name in builtin_suite_names():
        description = _words(load_suite(name).config.description)
        for word in description.split():  # every word, whole (wrapping splits only between)
            assert word in column, (name, word)


def test_every_builtin_agent_says_what_it_is_for(invoke: Invoke) -> None:
    from toolproof.agents import agent_kinds

    out = _words(invoke("list").out)
    for kind in agent_kinds():
        if kind.startswith("test-"):
            continue  # registered by the tests' own agent module, not shipped
        assert kind in AGENT_PURPOSE, f"agent kind {kind!r} has no description in toolproof list"
        assert _words(AGENT_PURPOSE[kind]) in out
    assert "scores 100% on core by design" in out  # the gullible surprise, explained


def test_the_tools_reference_page_is_current() -> None:
    page = (DOCS / "tools.md").read_text(encoding="utf-8")
    assert page == tools_reference(), (
        "docs/tools.md is stale: run `toolproof list --tools-reference > docs/tools.md`"
    )


def test_the_tools_reference_covers_every_builtin_tool_and_argument(invoke: Invoke) -> None:
    load_builtin()
    page = invoke("list", "--tools-reference").out
    for tool in registry().values():
        if not tool.fn.__module__.startswith("toolproof.tools.toolkits."):
            continue
        assert f"### `{tool.name}` ({tool.schema.kind.value})" in page
        for argument in tool.schema.parameters.get("properties", {}):
            assert f"| `{argument}` |" in page, (tool.name, argument)
    assert "Record layout" in page and "products: {ID: {name, category, price, stock}}" in page


def test_docstring_blocks_become_fenced_code() -> None:
    text = "Intro ``x``, see :func:`f`.\n\nLayout::\n\n    a: 1\n      b: 2\n\nAfter."
    assert _rst_to_markdown(text) == (
        "Intro `x`, see `f`.\n\nLayout:\n\n```text\na: 1\n  b: 2\n```\n\nAfter.\n"
    )
