"""``cmd:`` agents in bwrap (the default): their tools and bridged endpoints only, nothing else.

The agents here are real programs: the example MCP client (the official ``mcp`` SDK, run by
this virtualenv's Python bound into the sandbox) and stdlib probes run by the sandbox's own
``python3``. Each episode gets a fresh sandbox with no network but its private loopback.
"""

from __future__ import annotations

import asyncio
import functools
import http.server
import json
import os
import shlex
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="needs pip install 'toolproof[mcp]'")

from toolproof.agents import build_agent, parse_agent_spec
from toolproof.agents.adapters.cmd_agent import CmdAgent, CmdOptions
from toolproof.engine import EpisodeJob, RunConfig, Worker
from toolproof.results import EpisodeRecord, RunReader
from toolproof.sandbox import get_backend
from toolproof.spec import SpecError, Suite, load_suite, resolve_suite_path
from toolproof.trajectory import Termination, ToolResult, ToolSchema, Usage

pytestmark = pytest.mark.skipif(
    get_backend("bwrap").unavailable_reason() is not None,
    reason=f"bwrap cannot run here: {get_backend('bwrap').unavailable_reason()}",
)

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "mcp_client_agent.py"
HELLO = "Hello, AgentBench!"
# The example needs this virtualenv (the mcp SDK) and its base Python inside.
VENV_BINDS = ",".join(dict.fromkeys([sys.prefix, sys.base_prefix, str(EXAMPLE.parent)]))
SANDBOX_PYTHON = "/usr/bin/python3"


@functools.cache
def core() -> Suite:
    """The built-in core suite, loaded once."""
    return load_suite(str(resolve_suite_path("core")))


async def run_task(agent: str, options: dict[str, Any], task: str = "hello-file") -> EpisodeRecord:
    """Run one episode of a core task, as `toolproof run` would (bwrap: the default)."""
    config = RunConfig(suite=str(core().root), agent=agent, agent_options=options, tasks=[task])
    return await Worker(config, None, core()).run(EpisodeJob(task, 0))


def example_agent() -> str:
    return f"cmd:{shlex.quote(sys.executable)} {shlex.quote(str(EXAMPLE))}"


async def test_an_sdk_client_in_bwrap_lists_and_calls_its_tools_and_finishes() -> None:
    record = await run_task(example_agent(), {"bind": VENV_BINDS})
    trajectory = record.trajectory
    assert trajectory.termination is Termination.COMPLETED, trajectory.error
    assert record.score.passed
    assert trajectory.final_answer == "Created /workspace/data/hello.txt with the text."
    calls = [(call.name, call.arguments) for call, _ in trajectory.tool_calls()]
    assert calls == [
        ("create_file", {"path": "/workspace/data/hello.txt"}),
        ("write_file", {"path": "/workspace/data/hello.txt", "content": HELLO}),
    ]


PROBE = r"""
import json, os, socket, sys, urllib.error, urllib.request
out = {}
def attempt(name, fn):
    try:
        out[name] = ["ok", str(fn())[:200]]
    except Exception as exc:
        out[name] = ["refused", type(exc).__name__]
def tcp(host, port):
    with socket.create_connection((host, port), timeout=3):
        return "connected"
mcp = os.environ["TOOLPROOF_MCP_URL"]
gateway = os.environ["MODEL_BASE_URL"]
def post(url):
    request = urllib.request.Request(url, data=b"{}", method="POST", headers={
        "content-type": "application/json", "accept": "application/json, text/event-stream"})
    try:
        return urllib.request.urlopen(request, timeout=10).status
    except urllib.error.HTTPError as exc:  # an answer (not a JSON-RPC message): reached
        return exc.code
attempt("mcp", lambda: post(mcp))
attempt("gateway", lambda: urllib.request.urlopen(gateway + "/models", timeout=10).read().decode())
attempt("model_url", lambda: urllib.request.urlopen(
    os.environ["MODEL_URL"] + "/models", timeout=10).read().decode())
attempt("host_listener", lambda: tcp("127.0.0.1", int(sys.argv[1])))
attempt("external", lambda: tcp("93.184.216.34", 80))
attempt("private_net", lambda: tcp("10.0.0.1", 80))
attempt("dns", lambda: socket.getaddrinfo("example.com", 80))
attempt("harness_file", lambda: open(sys.argv[2]).read())
attempt("harness_source", lambda: os.listdir(sys.argv[3]))
attempt("write_bridge", lambda: open("/run/toolproof/mine", "w").write("x"))
out["secret"] = os.environ.get("TOOLPROOF_TEST_SECRET")
out["key"] = os.environ.get("OPENAI_API_KEY")
out["model_url_value"] = os.environ.get("MODEL_URL")
out["uid"] = os.getuid()
print(json.dumps(out))
"""


class FakeSession:
    """Just enough of a ToolSession for commands that call no task tool."""

    system_prompt = "be brief"
    prompt = "probe"
    tools = [ToolSchema(name="noop", description="Nothing.", parameters={"type": "object"})]

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        return ToolResult(call_id="c", name=name, content="")

    def record_usage(self, usage: Usage) -> None:
        self.usage = usage


class _Models(http.server.BaseHTTPRequestHandler):
    """A stand-in model gateway on the host's loopback: GET /v1/models."""

    def do_GET(self) -> None:
        body = b'{"data": [{"id": "scripted"}]}' if self.path == "/v1/models" else b"{}"
        self.send_response(200 if self.path == "/v1/models" else 404)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def gateway() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Models)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def host_listener() -> Iterator[int]:
    """A port listening on the host's loopback that nothing bridges."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield sock.getsockname()[1]


async def test_only_the_bridged_endpoints_are_reachable(
    tmp_path: Path, gateway: str, host_listener: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOOLPROOF_TEST_SECRET", "hunter2")
    secret_file = tmp_path / "harness-secret.txt"
    secret_file.write_text("the harness's")
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    probe.chmod(0o644)
    tmp_path.chmod(0o755)  # the sandbox user (a root harness) reads what is bound
    args = [str(host_listener), str(secret_file), str(ROOT / "src")]
    command = f"{SANDBOX_PYTHON} /opt/probe/probe.py {shlex.join(args)}"
    options = CmdOptions(bind=[f"{tmp_path}:/opt/probe"])
    extra = {
        "OPENAI_API_KEY": "placeholder",
        "MODEL_URL": gateway.replace("127.0.0.1", "localhost"),
    }
    agent = CmdAgent(command, options, endpoints=[("MODEL_BASE_URL", gateway)], env=extra)
    seen = json.loads(await agent.run(FakeSession()))
    assert seen["mcp"] == ["ok", "400"]  # the tool endpoint answers (over the bridge)
    assert seen["gateway"] == ["ok", '{"data": [{"id": "scripted"}]}']  # a bridged endpoint
    for blocked in ("host_listener", "external", "private_net", "dns"):
        assert seen[blocked][0] == "refused", (blocked, seen[blocked])
    for hidden in ("harness_file", "harness_source", "write_bridge"):
        assert seen[hidden][0] == "refused", (hidden, seen[hidden])
    assert seen["secret"] is None  # the harness's environment stays out
    # Handed variables: an endpoint among them is bridged too, the rest passed as they are.
    assert seen["key"] == "placeholder"
    assert seen["model_url"] == ["ok", '{"data": [{"id": "scripted"}]}']
    assert seen["model_url_value"] == gateway  # localhost is served at 127.0.0.1 inside
    assert seen["uid"] == 1000


async def test_the_variables_point_inside_and_the_files_are_there() -> None:
    command = (
        'echo "$TOOLPROOF_MCP_URL"; cat "$TOOLPROOF_PROMPT_FILE"; echo; '
        'cat "$TOOLPROOF_SYSTEM_PROMPT_FILE"; echo; '
        'echo \'{"input_tokens": 5, "output_tokens": 2}\' > "$TOOLPROOF_USAGE_FILE"'
    )
    session = FakeSession()
    answer = await CmdAgent(command, CmdOptions()).run(session)
    url, prompt, system = answer.splitlines()
    assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
    assert (prompt, system) == ("probe", "be brief")
    assert session.usage == Usage(input_tokens=5, output_tokens=2)


@pytest.mark.parametrize(
    "hostile",
    [
        'mkfifo "$TOOLPROOF_USAGE_FILE"',
        'ln -s /dev/zero "$TOOLPROOF_USAGE_FILE"',
        'head -c 10000000 /dev/zero > "$TOOLPROOF_USAGE_FILE"',
        'echo \'{"input_tokens": 5, "cost_usd": -24690}\' > $TOOLPROOF_USAGE_FILE',
    ],
)
async def test_a_hostile_usage_file_is_refused_without_blocking(hostile: str) -> None:
    record = await asyncio.wait_for(run_task(f"cmd:{hostile}; echo done", {}), 120)
    assert record.trajectory.termination is Termination.AGENT_ERROR, record.trajectory.error
    assert "the usage file (TOOLPROOF_USAGE_FILE)" in (record.trajectory.error or "")
    assert record.trajectory.usage() == Usage()  # never recorded


FLOOD = r"""
import os, socket, threading, time, urllib.parse
url = urllib.parse.urlsplit(os.environ["TOOLPROOF_MCP_URL"])
def garbage():
    while True:
        try:
            with socket.create_connection((url.hostname, url.port), timeout=2) as s:
                s.sendall(b"\x00\xff GARBAGE /mcp HTTP/9.9\r\n\r\n" + os.urandom(65536) * 16)
        except OSError:
            time.sleep(0.01)
for _ in range(4):  # garbage frames, as fast as it can
    threading.Thread(target=garbage, daemon=True).start()
time.sleep(1)
held = []
for _ in range(300):  # then hundreds of connections, held open
    try:
        held.append(socket.create_connection((url.hostname, url.port), timeout=2))
    except OSError:
        pass
time.sleep(3600)  # and it never exits
"""


async def test_a_flooding_agent_that_never_exits_ends_by_its_limit_and_spares_others(
    tmp_path: Path,
) -> None:
    flood = tmp_path / "flood.py"
    flood.write_text(FLOOD)
    flood.chmod(0o644)
    tmp_path.chmod(0o755)
    hostile = run_task(
        f"cmd:{SANDBOX_PYTHON} /opt/flood/flood.py",
        {"bind": f"{tmp_path}:/opt/flood", "timeout": 8},
    )
    good = run_task(example_agent(), {"bind": VENV_BINDS})
    bad_record, good_record = await asyncio.wait_for(asyncio.gather(hostile, good), 180)
    bad = bad_record.trajectory
    assert bad.termination is Termination.TIMEOUT, bad.error  # its fault, not infra_error
    assert "longer than 8s" in (bad.error or "")
    assert good_record.trajectory.termination is Termination.COMPLETED
    assert good_record.score.passed  # the episode beside it was unaffected


def _running(marker: str) -> bool:
    for entry in Path("/proc").iterdir():
        try:
            if marker in (entry / "cmdline").read_bytes().decode("utf-8", "replace"):
                return True
        except OSError:
            continue
    return False


async def test_cancelling_the_episode_kills_the_sandboxed_command() -> None:
    marker = "98765.4321"  # a sleep nobody else runs
    agent = CmdAgent(f"sleep {marker}", CmdOptions())
    task = asyncio.ensure_future(agent.run(FakeSession()))
    for _ in range(600):  # until it runs (bwrap started), at most ~30 s
        if _running(marker):
            break
        await asyncio.sleep(0.05)
    assert _running(marker)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(200):
        if not _running(marker):
            break
        await asyncio.sleep(0.05)
    assert not _running(marker)


async def test_a_command_over_its_memory_limit_is_an_agent_error() -> None:
    command = f"{SANDBOX_PYTHON} -c 'x = bytearray(600 * 1024 * 1024); print(len(x))'"
    record = await run_task(f"cmd:{command}", {"memory_mb": 128})
    assert record.trajectory.termination is Termination.AGENT_ERROR
    assert "memory" in (record.trajectory.error or "")


def test_spec_errors_name_the_option_and_the_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(SpecError, match=r"bwrap .* or process .*not 'podman'"):
        build_agent(parse_agent_spec("cmd:true", {"sandbox": "podman"}))
    with pytest.raises(SpecError, match="'/no/such/agent' must be an existing absolute"):
        build_agent(parse_agent_spec("cmd:true", {"bind": "/no/such/agent"}))
    with pytest.raises(SpecError, match="inside path must be absolute"):
        build_agent(parse_agent_spec("cmd:true", {"bind": f"{ROOT}:relative"}))
    if os.geteuid() == 0:  # commands run as an unprivileged user: what it cannot read
        private = tmp_path / "private"
        private.mkdir(mode=0o700)
        with pytest.raises(SpecError, match=r"not readable by others .*chmod o\+rx"):
            build_agent(parse_agent_spec("cmd:true", {"bind": str(private)}))
    bwrap = get_backend("bwrap")
    monkeypatch.setattr(bwrap, "unavailable_reason", classmethod(lambda cls: "no userns"))
    with pytest.raises(SpecError) as refused:
        build_agent(parse_agent_spec("cmd:true"))
    (problem,) = refused.value.problems
    assert problem.field == "--sandbox"
    assert "no userns" in problem.message and "--sandbox process" in problem.message


def test_the_runs_sandbox_flag_reaches_cmd_agents(
    invoke: Callable[..., Any], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """`toolproof run --sandbox` decides where cmd agents run; a container backend is refused."""
    refused = invoke(
        "run", "core", "--task", "hello-file", "--agent", "cmd:echo hi",
        "--sandbox", "podman", "--out", tmp_path / "refused",
    )  # fmt: skip
    assert refused.code == 2
    assert "--sandbox" in refused.err and "not 'podman'" in refused.err
    ran = invoke(
        "run", "core", "--task", "hello-file", "--agent", "cmd:echo hi",
        "--sandbox", "process", "--run-commands-on-host", "--out", tmp_path / "host", "--quiet",
    )  # fmt: skip
    assert ran.code == 0, ran.err
    assert "NOT isolated" in caplog.text  # the escape hatch says so
    with RunReader(tmp_path / "host") as reader:
        config = reader.meta()["config"]
        (record,) = reader.records()
    assert config["agent_options"]["sandbox"] == "process"
    assert record.trajectory.final_answer == "hi"


async def test_prompt_on_stdin_and_a_failing_command_in_the_sandbox() -> None:
    record = await run_task("cmd:cat", {"prompt_stdin": True})
    assert record.trajectory.final_answer == (record.trajectory.prompt[1].content or "").strip()
    failed = await run_task("cmd:echo half an answer; echo it broke >&2; exit 3", {})
    assert failed.trajectory.termination is Termination.AGENT_ERROR
    assert "exited with status 3: it broke" in (failed.trajectory.error or "")


SDK_CALLER = """
import os, sys, openai
client = openai.OpenAI(max_retries=0)  # OPENAI_BASE_URL and the placeholder key from toolproof
assert os.environ["OPENAI_API_KEY"] == "toolproof-gateway", "the real key leaked"
reply = client.chat.completions.create(
    model=os.environ["TOOLPROOF_MODEL"], messages=[{"role": "user", "content": "hi"}]
)
print(reply.choices[0].message.content)
"""


async def test_the_official_sdk_in_bwrap_reaches_the_model_gateway_and_is_recorded(
    tmp_path: Path,
) -> None:
    """A sandboxed command's model calls cross the bridge to the gateway: recorded and priced."""
    pytest.importorskip("openai")
    from toolproof.testing import ModelServer, ScriptedReply

    script = tmp_path / "caller.py"
    script.write_text(SDK_CALLER)
    script.chmod(0o644)
    tmp_path.chmod(0o755)
    binds = f"{VENV_BINDS},{tmp_path}:/opt/caller"
    options = {"bind": binds, "model": "gpt-4o-mini", "api_key": "sk-real"}
    with ModelServer([ScriptedReply("sandboxed hello", usage=(30, 3))]) as server:
        record = await run_task(
            f"cmd:{shlex.quote(sys.executable)} /opt/caller/caller.py",
            {**options, "base_url": server.base_url},
        )
        assert server.calls == 1
    trajectory = record.trajectory
    assert trajectory.final_answer == "sandboxed hello", trajectory.error
    usage = trajectory.usage()
    assert (usage.input_tokens, usage.output_tokens, usage.estimated) == (30, 3, False)
    assert usage.cost_usd == pytest.approx((30 * 0.15 + 3 * 0.6) / 1e6)


ANTHROPIC_CALLER = """
import os, anthropic
client = anthropic.Anthropic(max_retries=0)  # ANTHROPIC_BASE_URL and the placeholder key
assert os.environ["ANTHROPIC_API_KEY"] == "toolproof-gateway", "the real key leaked"
for n in range(2):
    reply = client.messages.create(
        model=os.environ["TOOLPROOF_MODEL"], max_tokens=100,
        messages=[{"role": "user", "content": f"say {n}"}],
    )
print(reply.content[0].text)
"""


async def test_the_anthropic_sdk_in_bwrap_is_recorded_priced_and_cached(tmp_path: Path) -> None:
    """The official anthropic SDK, sandboxed: every call priced; a cached rerun calls nobody."""
    pytest.importorskip("anthropic")
    from toolproof.testing import ModelServer, ScriptedReply

    folder = tmp_path / "caller"
    folder.mkdir()
    (folder / "caller.py").write_text(ANTHROPIC_CALLER)
    (folder / "caller.py").chmod(0o644)
    folder.chmod(0o755)
    tmp_path.chmod(0o755)
    agent = f"cmd:{shlex.quote(sys.executable)} /opt/caller/caller.py"
    options = {
        "bind": f"{VENV_BINDS},{folder}:/opt/caller",
        "provider": "anthropic",
        "model": "claude-haiku-4-5",
        "api_key": "sk-ant-real",
        "cache": str(tmp_path / "cache"),
    }
    replies = [ScriptedReply("zero", usage=(40, 2)), ScriptedReply("one", usage=(50, 3))]
    with ModelServer(replies) as server:
        first = await run_task(agent, {**options, "base_url": server.anthropic_base_url})
        assert server.calls == 2, first.trajectory.error
    assert first.trajectory.final_answer == "one", first.trajectory.error
    usage = first.trajectory.usage()
    assert (usage.input_tokens, usage.output_tokens, usage.estimated) == (90, 5, False)
    assert usage.cost_usd == pytest.approx((90 * 1.0 + 5 * 5.0) / 1e6)  # claude-haiku-4-5
    listed = [c for s in first.trajectory.steps for c in s.annotations.get("model_calls", [])]
    assert [(c["api"], c["model"], c["cached"]) for c in listed] == [
        ("anthropic", "claude-haiku-4-5", False)
    ] * 2
    with ModelServer([]) as empty:  # a cached rerun: not one provider call
        again = await run_task(agent, {**options, "base_url": empty.anthropic_base_url})
        assert empty.calls == 0
    assert again.trajectory.final_answer == "one", again.trajectory.error
    assert again.trajectory.usage() == usage
    assert again.score == first.score
