"""``cmd:COMMAND``: command-line agents get the task and an MCP endpoint; stdout is the answer.

These run the command on the host (``sandbox=process``, the escape hatch), where the test can
see its processes and files; ``test_cmd_sandbox.py`` runs commands in bwrap, the default.
"""

from __future__ import annotations

import asyncio
import functools
import json
import os
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="needs pip install 'toolproof[mcp]'")

from toolproof.agents import build_agent, parse_agent_spec
from toolproof.agents.adapters import _tools_bridge
from toolproof.agents.adapters.cmd_agent import CmdAgent, CmdOptions
from toolproof.engine import EpisodeJob, RunConfig, Worker
from toolproof.results import EpisodeRecord
from toolproof.spec import SpecError, Suite, load_suite, resolve_suite_path
from toolproof.trajectory import Termination, ToolResult, ToolSchema, Usage

ROOT = Path(__file__).resolve().parents[2]
PYTHON = shlex.quote(sys.executable)
HELLO = "Hello, AgentBench!"


@functools.cache
def core() -> Suite:
    """The built-in core suite, loaded once."""
    return load_suite(str(resolve_suite_path("core")))


HOST = {"sandbox": "process"}


async def run_task(agent: str, options: dict[str, Any], task: str = "hello-file") -> EpisodeRecord:
    """Run one episode of a core task on the host, as `toolproof run --sandbox process` would."""
    options = {**HOST, **options}
    config = RunConfig(suite=str(core().root), agent=agent, agent_options=options, tasks=[task])
    return await Worker(config, None, core()).run(EpisodeJob(task, 0))


async def test_the_example_mcp_client_completes_hello_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    record = await run_task("cmd:python examples/mcp_client_agent.py", {"cwd": str(ROOT)})
    trajectory = record.trajectory
    assert trajectory.termination is Termination.COMPLETED, trajectory.error
    assert record.score.passed
    assert trajectory.final_answer == "Created /workspace/data/hello.txt with the text."
    calls = [(call.name, call.arguments) for call, _ in trajectory.tool_calls()]
    assert calls == [
        ("create_file", {"path": "/workspace/data/hello.txt"}),
        ("write_file", {"path": "/workspace/data/hello.txt", "content": HELLO}),
    ]
    assert trajectory.steps[1].diff is not None
    assert trajectory.steps[1].diff.files_modified == ["data/hello.txt"]


REPORTER = """
import json, os, pathlib
names = ["TOOLPROOF_MCP_URL", "TOOLPROOF_PROMPT"]
seen = {name: os.environ[name] for name in names}
seen["prompt_file"] = pathlib.Path(os.environ["TOOLPROOF_PROMPT_FILE"]).read_text()
seen["system_file"] = pathlib.Path(os.environ["TOOLPROOF_SYSTEM_PROMPT_FILE"]).read_text()
pathlib.Path(os.environ["TOOLPROOF_USAGE_FILE"]).write_text(
    json.dumps({"input_tokens": 11, "output_tokens": 7}))
print(json.dumps(seen))
"""


async def test_the_command_gets_the_task_and_the_endpoint(tmp_path: Path) -> None:
    script = tmp_path / "reporter.py"
    script.write_text(REPORTER)
    record = await run_task(f"cmd:{PYTHON} {shlex.quote(str(script))}", {})
    trajectory = record.trajectory
    assert trajectory.termination is Termination.COMPLETED, trajectory.error
    seen = json.loads(trajectory.final_answer or "")
    prompt = trajectory.prompt[1].content
    assert seen["TOOLPROOF_PROMPT"] == seen["prompt_file"] == prompt
    assert seen["system_file"] == trajectory.prompt[0].content
    assert seen["TOOLPROOF_MCP_URL"].startswith("http://127.0.0.1:")
    assert seen["TOOLPROOF_MCP_URL"].endswith("/mcp")
    assert trajectory.usage() == Usage(input_tokens=11, output_tokens=7)
    assert not record.score.passed  # it answered without doing the task


@pytest.mark.parametrize(
    ("hostile", "said"),
    [
        ('mkfifo "$TOOLPROOF_USAGE_FILE"', "is not a regular file"),  # reading it would block
        ('ln -s /dev/zero "$TOOLPROOF_USAGE_FILE"', "cannot be read"),  # endless
        ('head -c 10000000 /dev/zero > "$TOOLPROOF_USAGE_FILE"', "the limit is 65,536"),
        ('echo \'{"input_tokens": 5, "cost_usd": -24690}\' > $TOOLPROOF_USAGE_FILE', "cost_usd"),
        ("echo '{\"input_tokens\": NaN}' > $TOOLPROOF_USAGE_FILE", "holds NaN"),
        ("echo '{\"output_tokens\": 1e30}' > $TOOLPROOF_USAGE_FILE", "output_tokens must be"),
        ('echo \'{"note": "\\udcff"}\' > $TOOLPROOF_USAGE_FILE', "lone UTF-16 surrogate"),
    ],
)
async def test_a_hostile_usage_file_is_refused_without_blocking(hostile: str, said: str) -> None:
    record = await asyncio.wait_for(run_task(f"cmd:{hostile}; echo done", {}), 60)
    trajectory = record.trajectory
    assert trajectory.termination is Termination.AGENT_ERROR, trajectory.error
    assert "the usage file (TOOLPROOF_USAGE_FILE)" in (trajectory.error or "")
    assert said in (trajectory.error or ""), trajectory.error
    assert trajectory.usage() == Usage()  # never recorded


async def test_a_failing_command_is_its_failure_before_its_usage_file() -> None:
    record = await run_task("cmd:echo '{\"cost_usd\": -1}' > $TOOLPROOF_USAGE_FILE; exit 3", {})
    assert "exited with status 3" in (record.trajectory.error or "")


async def test_prompt_on_stdin() -> None:
    record = await run_task("cmd:cat", {"prompt_stdin": True})
    assert record.trajectory.final_answer == (record.trajectory.prompt[1].content or "").strip()


async def test_a_failing_command_is_an_agent_error() -> None:
    record = await run_task("cmd:echo half an answer; echo it broke >&2; exit 3", {})
    assert record.trajectory.termination is Termination.AGENT_ERROR
    assert "exited with status 3: it broke" in (record.trajectory.error or "")


def _gone(pid: int) -> bool:
    """Whether a process has exited (a zombie waiting to be reaped counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


def _wait_gone(pid: int, within_s: float = 10.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if _gone(pid):
            return True
        time.sleep(0.05)
    return False


async def test_the_time_limit_stops_the_whole_process_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    command = f"sleep 60 & echo $! > {shlex.quote(str(pidfile))}; wait"
    record = await run_task(f"cmd:{command}", {"timeout": 0.5, "kill_grace_s": 0.5})
    assert record.trajectory.termination is Termination.TIMEOUT
    assert "longer than 0.5s" in (record.trajectory.error or "")
    assert _wait_gone(int(pidfile.read_text()))


class FakeSession:
    """Just enough of a ToolSession for a command that never calls a tool."""

    system_prompt = "be brief"
    prompt = "wait"
    tools = [ToolSchema(name="noop", description="Nothing.", parameters={"type": "object"})]

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult(call_id="c", name=name, content="")

    def record_usage(self, usage: Usage) -> None:
        pass


async def test_cancelling_the_episode_stops_the_command(tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    command = f"echo $$ > {shlex.quote(str(pidfile))}; exec sleep 60"
    agent = CmdAgent(command, CmdOptions(kill_grace_s=0.5, sandbox="process"))
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(agent.run(FakeSession()), 1.0)
    assert _wait_gone(int(pidfile.read_text()))


async def test_the_episode_ends_when_the_command_exits_and_strays_are_stopped() -> None:
    started = time.monotonic()
    answer = await CmdAgent("sleep 60 & echo $!", CmdOptions(sandbox="process")).run(FakeSession())
    assert time.monotonic() - started < 30  # not held up by the stray, which keeps stdout open
    assert _wait_gone(int(answer))


def test_spec_errors_name_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SpecError, match="need a command"):
        build_agent(parse_agent_spec("cmd"))
    with pytest.raises(SpecError, match="no option 'sandboxed'"):
        build_agent(parse_agent_spec("cmd:true", {"sandboxed": True}))
    with pytest.raises(SpecError, match="is not a directory"):
        build_agent(parse_agent_spec("cmd:true", {"cwd": "/no/such/dir"}))
    monkeypatch.setattr(_tools_bridge.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(SpecError, match=r"pip install 'toolproof\[mcp\]'"):
        build_agent(parse_agent_spec("cmd:true"))


MODEL_CALLER = """
import os, openai
client = openai.OpenAI(max_retries=0)  # OPENAI_BASE_URL and OPENAI_API_KEY from toolproof
assert os.environ["OPENAI_API_KEY"] == "toolproof-gateway", "the real key leaked"
for n in range(2):
    reply = client.chat.completions.create(
        model=os.environ["TOOLPROOF_MODEL"], messages=[{"role": "user", "content": f"say {n}"}]
    )
print(reply.choices[0].message.content)
"""


async def test_a_commands_model_calls_go_through_the_gateway(tmp_path: Path) -> None:
    pytest.importorskip("openai")
    from toolproof.testing import ModelServer, ScriptedReply

    script = tmp_path / "caller.py"
    script.write_text(MODEL_CALLER)
    agent = f"cmd:{PYTHON} {shlex.quote(str(script))}"
    options = {"model": "gpt-4o-mini", "cache": str(tmp_path / "cache")}
    replies = [ScriptedReply("zero", usage=(40, 2)), ScriptedReply("one", usage=(50, 3))]
    with ModelServer(replies) as server:
        first = await run_task(agent, {**options, "base_url": server.base_url, "api_key": "sk-r"})
        assert server.calls == 2
        assert server.requests[0]["model"] == "gpt-4o-mini"
    assert first.trajectory.final_answer == "one", first.trajectory.error
    usage = first.trajectory.usage()
    assert (usage.input_tokens, usage.output_tokens, usage.estimated) == (90, 5, False)
    assert usage.cost_usd == pytest.approx((90 * 0.15 + 5 * 0.6) / 1e6)
    with ModelServer([]) as empty:  # a cached rerun: not one provider call
        again = await run_task(agent, {**options, "base_url": empty.base_url, "api_key": "sk-r"})
        assert empty.calls == 0
    assert again.trajectory.final_answer == "one", again.trajectory.error
    assert again.trajectory.usage() == usage
    assert again.score.passed == first.score.passed


def test_model_options_do_not_break_cmd_agents() -> None:
    spec = parse_agent_spec("cmd:true", {"cache": "/tmp/x", "model": "m", "provider": "anthropic"})
    build_agent(spec)  # no "cmd agents have no option 'cache'"
    with pytest.raises(SpecError, match="unknown provider 'nope'"):
        build_agent(parse_agent_spec("cmd:true", {"provider": "nope"}))


ANTHROPIC_CALLER = """
import os, anthropic
client = anthropic.Anthropic(max_retries=0)  # ANTHROPIC_BASE_URL and the key from toolproof
with client.messages.stream(
    model=os.environ["TOOLPROOF_MODEL"], max_tokens=100,
    messages=[{"role": "user", "content": "hi"}],
) as stream:
    print(stream.get_final_message().content[0].text)
"""


async def test_an_anthropic_sdk_command_is_recorded_and_priced(tmp_path: Path) -> None:
    pytest.importorskip("anthropic")
    from toolproof.testing import ModelServer, ScriptedReply

    script = tmp_path / "caller.py"
    script.write_text(ANTHROPIC_CALLER)
    options = {"provider": "anthropic", "model": "claude-haiku-4-5", "api_key": "sk-ant"}
    with ModelServer([ScriptedReply("streamed hello", usage=(60, 4))]) as server:
        record = await run_task(
            f"cmd:{PYTHON} {shlex.quote(str(script))}",
            {**options, "base_url": server.anthropic_base_url},
        )
    assert record.trajectory.final_answer == "streamed hello", record.trajectory.error
    usage = record.trajectory.usage()
    assert (usage.input_tokens, usage.output_tokens, usage.estimated) == (60, 4, False)
    assert usage.cost_usd == pytest.approx((60 * 1.0 + 4 * 5.0) / 1e6)  # claude-haiku-4-5
    (call,) = record.trajectory.steps[-1].annotations["model_calls"]
    assert (call["api"], call["model"]) == ("anthropic", "claude-haiku-4-5")


def test_the_process_escape_hatch_warns_loudly(caplog: pytest.LogCaptureFixture) -> None:
    build_agent(parse_agent_spec("cmd:true", HOST))
    assert "NOT isolated" in caplog.text and "--sandbox process" in caplog.text
