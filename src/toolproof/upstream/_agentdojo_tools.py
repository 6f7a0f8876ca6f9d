"""AgentDojo's functions as toolproof tools, run on the environment kept in the world's records.

Each function of a suite becomes one tool. The agent sees AgentDojo's own name,
description and argument schema (``Function.parameters.model_json_schema()``, what
AgentDojo's LLM clients send); the tool is registered under the key
``agentdojo.SUITE.NAME``, since several names (``send_email``, ``read_file``) are also
toolproof tools and two suites have different functions of the same name. A call
rebuilds the suite's ``TaskEnvironment`` from ``world.records["environment"]``
(``model_validate``), runs the function through AgentDojo's ``FunctionsRuntime``
(which validates the arguments with the function's own model and turns every error
the function raises into text, as AgentDojo's tool executor shows it), and writes the
environment back (``model_dump``), so snapshots, diffs and resume work unchanged.
Results are formatted by AgentDojo's ``tool_result_to_str`` (YAML), as its models see
them; an error is a tool error the agent sees, never a crash.
"""

from __future__ import annotations

from typing import Any

from toolproof.tools import Tool, ToolContext, ToolError, registry
from toolproof.trajectory import ToolKind, ToolSchema

from . import _agentdojo_upstream as upstream

ENV_KEY = "environment"
"""The world record that holds the suite's environment (``model_dump(mode="json")``)."""
LIVE_KEY = "agentdojo_environment"
"""``world.extras`` key of the live environment object and the record it was dumped to.

A changed environment does not survive ``model_dump`` / ``model_validate``: AgentDojo's
validators rebuild ``emails``, ``events`` and ``files`` from ``initial_*`` (and mails
share objects between both). So an episode keeps AgentDojo's own object between calls,
as AgentDojo does, and the record is its dump after every call; the object is rebuilt
from the record only where the record is not the one last written (a restored world)."""
_READS = ("get_", "search_", "list_", "read_", "check_", "find_")


def tool_key(suite: str, name: str) -> str:
    """The registry key of a suite's function (the agent sees only ``name``)."""
    return f"agentdojo.{suite}.{name}"


def _kind(name: str) -> ToolKind:
    """A label for reports: AgentDojo does not say which functions write. The world's
    digest does not rely on it: every call that changed the environment marks it."""
    return ToolKind.READ if name.startswith(_READS) else ToolKind.WRITE


def _schema(function: Any) -> ToolSchema:
    parameters: dict[str, Any] = function.parameters.model_json_schema()
    parameters.pop("title", None)
    parameters.setdefault("properties", {})
    parameters["type"] = "object"
    return ToolSchema(
        name=function.name,
        description=function.description,
        parameters=parameters,
        kind=_kind(function.name),
    )


def environment(suite: Any, records: dict[str, Any]) -> Any:
    """The suite's environment object from a world's (or snapshot's) records.

    Raises:
        ToolError: the records hold no valid environment (a world not built from the task).
    """
    dump = records.get(ENV_KEY)
    if not isinstance(dump, dict):
        raise ToolError(f"the world has no AgentDojo environment under {ENV_KEY!r}")
    return suite.environment_type.model_validate(dump)


def live_environment(suite: Any, world: Any) -> Any:
    """The episode's environment object: the live one while the record is the one it
    was last dumped to, else rebuilt from the record (see :data:`LIVE_KEY`)."""
    live = world.extras.get(LIVE_KEY)
    record = world.records.get(ENV_KEY)
    if live is not None and live[1] is record:
        return live[0]
    env = environment(suite, world.records)
    world.extras[LIVE_KEY] = (env, record)
    return env


def final_environment(suite: Any, world: Any, records: dict[str, Any]) -> Any:
    """The environment an episode left: its live object when ``records`` (the final
    snapshot's) still hold its dump, else rebuilt from them."""
    live = world.extras.get(LIVE_KEY)
    if live is not None and live[1] == records.get(ENV_KEY):
        return live[0]
    return environment(suite, records)


def _runner(suite: Any, function: Any) -> Any:
    mods = upstream.modules()
    runtime = mods.FunctionsRuntime([function])

    def run(ctx: ToolContext, **arguments: Any) -> str:
        env = live_environment(suite, ctx.world)
        before = ctx.world.records[ENV_KEY]
        result, error = runtime.run_function(env, function.name, arguments)
        after = env.model_dump(mode="json")
        if after != before:
            ctx.world.records[ENV_KEY] = after
            ctx.world.extras[LIVE_KEY] = (env, after)
            ctx.world.touch()
        if error is not None:
            raise ToolError(str(error))
        try:
            text: str = mods.tool_result_to_str(result)
        except TypeError as exc:
            raise ToolError(f"the result cannot be shown: {exc}") from None
        return text

    return run


def register_suite_tools(suite_name: str, suite: Any) -> list[str]:
    """Register every function of ``suite`` once; return their registry keys, in order."""
    tools = registry()
    keys: list[str] = []
    for function in suite.tools:
        key = tool_key(suite_name, function.name)
        if key not in tools:
            # Registered under a key of its own (not the @tool decorator, which derives the
            # schema from a signature and keys by the agent-facing name): see the docstring.
            tools[key] = Tool(
                fn=_runner(suite, function),
                schema=_schema(function),
                toolkit=f"agentdojo-{suite_name}",
            )
        keys.append(key)
    return keys
