"""An HTTP agent (``http://…``) answering generated bodies on loopback.

The server is the agent under test: whatever it sends (a turn whose fields are hostile,
bytes that are not UTF-8, JSON with NaN or a lone surrogate escape, a body too deep or too
big, an error status, a reply cut off mid-way, a slow one) is its own failure, so no
episode may be an infra error, and ``toolproof run`` exits 0 with no traceback.
"""

from __future__ import annotations

import contextlib
import io
import tempfile
from pathlib import Path
from typing import Any

import pytest
from fuzz_support import (
    EXAMPLES,
    FAST,
    RawServer,
    Reply,
    check_run,
    fuzz,
    garbage_body,
    hostile_arguments,
    hostile_json,
    hostile_number,
    hostile_text,
    replies_mode,
    run_fuzzed,
    small_suite,
    tool_names,
    wire_body,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof.cli import main

call = st.fixed_dictionaries(
    {"name": tool_names},
    optional={
        "id": st.one_of(hostile_text, hostile_number),
        "arguments": st.one_of(hostile_arguments, hostile_text),
    },
)
turn = st.fixed_dictionaries(
    {},
    optional={
        "content": st.one_of(st.none(), hostile_text, hostile_number),
        "tool_calls": st.one_of(st.lists(call, max_size=3), hostile_json),
        "usage": st.one_of(
            st.none(),
            st.fixed_dictionaries(
                {},
                optional={
                    "input_tokens": hostile_number,
                    "output_tokens": hostile_number,
                    "cost_usd": hostile_number,
                },
            ),
        ),
        "give_up": st.one_of(st.booleans(), hostile_json),
        "protocol": st.one_of(st.just("toolproof-agent/1"), hostile_text),
    },
)
body = st.one_of(turn.flatmap(wire_body), garbage_body)
reply = st.builds(
    Reply,
    status=st.sampled_from([200, 200, 200, 200, 400, 429, 500, 503]),
    body=body,
    mode=replies_mode,
)


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return small_suite(tmp_path_factory.mktemp("suite"))


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("runs")


def toolproof(*args: str) -> tuple[int, str]:
    """``toolproof ARGS`` in process: its exit status and everything it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        try:
            main(list(args))
            code: Any = 0
        except SystemExit as exc:
            code = exc.code
    return (code if isinstance(code, int) else 1), out.getvalue()


@fuzz
@given(replies=st.lists(reply, min_size=1, max_size=4))
def test_an_http_agent_sending_anything(suite: Path, runs: Path, replies: list[Reply]) -> None:
    run_dir = Path(tempfile.mkdtemp(dir=runs))
    with RawServer(replies).running() as server:
        run_fuzzed(suite, run_dir, f"{server.url}/act", dict(FAST))
    check_run(run_dir, infra_injected=False)


@settings(fuzz, max_examples=max(3, EXAMPLES // 5))  # a whole CLI run each: about a second
@given(replies=st.lists(reply, min_size=1, max_size=3))
def test_toolproof_run_with_an_http_agent_sending_anything_exits_0_without_a_traceback(
    suite: Path, runs: Path, replies: list[Reply]
) -> None:
    run_dir = Path(tempfile.mkdtemp(dir=runs)) / "run"
    with RawServer(replies).running() as server:
        options = [f"--agent-arg={key}={value}" for key, value in FAST.items()]
        code, printed = toolproof(
            "run", str(suite), "--agent", f"{server.url}/act", *options,
            "-o", str(run_dir), "--retries", "0", "--progress", "none", "--quiet",
        )  # fmt: skip
    assert "Traceback" not in printed, printed
    assert code == 0, printed  # agent errors are scored: the run measured something
    check_run(run_dir, infra_injected=False)
