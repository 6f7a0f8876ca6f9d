"""YAML script files and `python -m toolproof.testing`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import openai
import pytest
from sdk_clients import USER

from toolproof.testing import (
    ChatMessage,
    ChatRequest,
    Script,
    ScriptedError,
    ScriptedReply,
    ScriptedToolCall,
    ScriptFileError,
    load_script,
)
from toolproof.testing.__main__ import main

FULL = """\
when_exhausted: done
replies:
  - Hello!
  - content: Let me look.
    tool_calls:
      - name: read_file
        arguments: {path: notes.txt}
      - name: search
        arguments: '{"q": "unclosed'
        id: call_1
  - error: {status: 429, retry_after: 0.5, times: 2, message: slow down}
  - error: 500
  - error: {status: 200, body: "<html>not json</html>"}
  - content: All done.
    usage: [120, 8]
    latency_s: 0.5
    truncated: true
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "script.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_the_documented_format_loads(tmp_path: Path) -> None:
    script = load_script(write(tmp_path, FULL))
    assert isinstance(script, Script)
    assert script.when_exhausted == "done"
    assert script.replies == (
        ScriptedReply("Hello!"),
        ScriptedReply(
            "Let me look.",
            tool_calls=[
                ScriptedToolCall("read_file", {"path": "notes.txt"}),
                ScriptedToolCall("search", '{"q": "unclosed', id="call_1"),
            ],
        ),
        ScriptedReply(error=ScriptedError(429, times=2, message="slow down", retry_after=0.5)),
        ScriptedReply(error=ScriptedError(500)),
        ScriptedReply(error=ScriptedError(200, body="<html>not json</html>")),
        ScriptedReply("All done.", usage=(120, 8), latency_s=0.5, truncated=True),
    )


def test_the_package_docstring_example_is_valid(tmp_path: Path) -> None:
    import toolproof.testing

    doc = toolproof.testing.__doc__ or ""
    example = doc.split("Either a list of replies, or a mapping with the list under `replies`::")[1]
    example = example.split("An error entry")[0]
    script = load_script(write(tmp_path, textwrap.dedent(example)))
    assert isinstance(script, Script)
    assert len(script.replies) == 6


def test_a_bare_list_with_per_conversation(tmp_path: Path) -> None:
    path = write(tmp_path, "per_conversation: true\nreplies: [one, two]\n")
    policy = load_script(path)
    assert not isinstance(policy, Script)
    turn1 = ChatRequest("openai", "m", (ChatMessage("user", "x"), ChatMessage("assistant", "one")))
    assert policy(turn1).content == "two"
    assert load_script(write(tmp_path, "- just text\n")).replies == (ScriptedReply("just text"),)  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "- a\n- content: b\n  tool_call: []\n",
            r"script.yaml:2: replies\[1\]: unknown field 'tool_call'",
        ),
        (
            "- a\n- b\n- tool_calls: [{arguments: {}}]\n",
            r":3: replies\[2\]\.tool_calls\[0\]: a tool call needs a name",
        ),
        ("- error: {times: 2}\n", r":1: replies\[0\]\.error: an error needs a status"),
        (
            "- error: {status: 429, times: 0}\n",
            r":1: replies\[0\]\.error: ScriptedError.times must be",
        ),
        ("- usage: 5\n", r"usage: must be \[prompt_tokens, completion_tokens\]"),
        ("- content: x\n  error: 500\n", "cannot also have content"),
        ("replies: [a]\nshuffle: true\n", "unknown top-level field 'shuffle'"),
        ("when_exhausted: later\nreplies: []\n", "when_exhausted must be 'error' or 'done'"),
        ("per_conversation: maybe\nreplies: []\n", "per_conversation must be true or false"),
        ("just a string\n", "a script is a list of replies"),
        ("", "a script is a list of replies"),
        ("- [unclosed\n", "not valid YAML"),
    ],
)
def test_bad_scripts_name_file_line_and_field(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ScriptFileError, match=message):
        load_script(write(tmp_path, text))


def test_main_rejects_a_bad_script(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--script", str(write(tmp_path, "- error: {}\n"))]) == 2
    assert "an error needs a status" in capsys.readouterr().err
    assert main(["--script", str(tmp_path / "missing.yaml")]) == 2


def test_python_dash_m_serves_until_ctrl_c(tmp_path: Path) -> None:
    path = write(tmp_path, "- Hello from YAML.\n")
    command = [sys.executable, "-m", "toolproof.testing", "--port", "0", "--script", str(path)]
    env = {**os.environ, "PYTHONWARNINGS": "error"}
    with subprocess.Popen(
        [*command, "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    ) as process:
        assert process.stdout is not None
        base_url = ""
        for line in process.stdout:
            if "OpenAI:" in line:
                base_url = line.split("base_url=")[1].strip()
                break
        assert base_url.startswith("http://127.0.0.1:"), process.stderr.read()  # type: ignore[union-attr]
        with openai.OpenAI(base_url=base_url, api_key="test", max_retries=0) as client:
            answer = client.chat.completions.create(model="m", messages=USER)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=30)
    assert answer.choices[0].message.content == "Hello from YAML."
    assert process.returncode == 0, err
    assert "served 1 requests" in out
