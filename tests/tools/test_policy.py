"""Task policies: shell commands read into simple commands, rules, refusals, episode stops."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import ValidationError

from toolproof.spec import PolicyRule, PolicySpec, WorldSpec
from toolproof.tools import ToolContext, ToolGateway, load_builtin, registry
from toolproof.tools._shellwords import path_forms, simple_commands
from toolproof.tools.policy import TaskPolicy, request_stop, requested_stop, rule_matches
from toolproof.trajectory import Termination, ToolCall
from toolproof.worlds import World

DELETE_REPO = PolicyRule(
    name="delete-repo",
    argv=["rm", "-r|-R|--recursive", "/|/workspace|/workspace/.git"],
    message="do not delete the repository",
)
NO_PUSH = PolicyRule(name="no-push", regex=r"\bgit\s+push\b")


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("ls -l", [["ls", "-l"]]),
        ("cd x\nrm -rf .", [["cd", "x"], ["rm", "-rf", "."]]),
        ("a && b || c; d & e | f", [["a"], ["b"], ["c"], ["d"], ["e"], ["f"]]),
        ("FOO=1 \\rm -rf '/workspace'", [["rm", "-rf", "/workspace"]]),
        ("sudo -u root env A=1 rm -r .", [["rm", "-r", "."]]),
        ("timeout 5 nice -n 3 rm -r x", [["rm", "-r", "x"]]),
        ("echo x > out.txt 2>&1", [["echo", "x", "2"]]),
        ("for f in *; do rm -r $f; done", [["for", "f", "in", "*"], ["rm", "-r", "$f"]]),
        ("{ rm -r .; }", [["rm", "-r", "."]]),
        ('echo "unclosed', [["echo", "unclosed"]]),  # sh refuses it; reading on is harmless
    ],
)
def test_simple_commands_split_at_operators_and_drop_wrappers(
    line: str, expected: list[list[str]]
) -> None:
    assert simple_commands(line) == expected


@pytest.mark.parametrize(
    "line",
    [
        'sh -c "rm -rf /workspace"',
        "bash -lc 'cd /tmp && rm -rf /workspace'",
        'echo "$(rm -rf /workspace)"',
        "echo `rm -rf /workspace`",
        "cat <(rm -rf /workspace)",
        "eval 'rm -rf /workspace'",
        "find . -maxdepth 0 -exec rm -rf /workspace {} \\;",
        "ls | xargs -n 1 rm -rf /workspace",
    ],
)
def test_nested_commands_are_found(line: str) -> None:
    assert any(words[:3] == ["rm", "-rf", "/workspace"] for words in simple_commands(line))


def test_path_forms_resolve_relative_paths_against_the_workspace() -> None:
    for word in (".", "./", "/workspace/", "$WORKSPACE", "${PWD}", "sub/..", "//workspace"):
        assert "/workspace" in path_forms(word), word
    assert "/" in path_forms("..")
    assert path_forms("-rf") == {"-rf"}


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf /workspace",
        "rm -fr .",
        "rm -r -f ./",
        "rm --recursive --force $WORKSPACE",
        "rm --recur ..",  # a GNU abbreviation of --recursive; '..' is /
        "cd src && /bin/rm -Rf /workspace/.git",
        "git status; sh -c 'rm -rf /workspace'",
    ],
)
def test_argv_rule_catches_recursive_deletion(command: str) -> None:
    assert rule_matches(DELETE_REPO, "run_command", {"command": command})


@pytest.mark.parametrize(
    "command",
    [
        "rm -f notes.txt",  # not recursive
        "rm -rf build",  # recursive, but not the repository
        "echo 'rm -rf /workspace'",  # only printed
        "grep -r rm .",  # another program
        "rm --force .",  # --force has an r but is no recursive flag
    ],
)
def test_argv_rule_lets_other_commands_through(command: str) -> None:
    assert not rule_matches(DELETE_REPO, "run_command", {"command": command})


def test_regex_rules_tools_and_arguments() -> None:
    assert rule_matches(NO_PUSH, "run_command", {"command": "git add . && git  push origin"})
    assert not rule_matches(NO_PUSH, "run_command", {"command": "git pushd"})
    assert not rule_matches(NO_PUSH, "write_file", {"command": "git push"})  # other tool
    assert not rule_matches(NO_PUSH, "run_command", {"cmd": "git push"})  # no such argument
    secrets = PolicyRule(tools=["*_file"], argument="path", regex=r"\.env$", ignore_case=True)
    assert rule_matches(secrets, "read_file", {"path": "/workspace/.ENV"})
    shouting = PolicyRule(argv=["RM", "-R", "/WORKSPACE"], ignore_case=True)
    assert rule_matches(shouting, "run_command", {"command": "rm -r ."})


def test_rules_are_validated_with_clear_errors() -> None:
    with pytest.raises(ValidationError, match="exactly one of regex or argv"):
        PolicyRule(regex="x", argv=["rm"])
    with pytest.raises(ValidationError, match="exactly one of regex or argv"):
        PolicyRule()
    with pytest.raises(ValidationError, match=r"regex '\(' does not compile"):
        PolicyRule(regex="(")


def _gateway(spec: PolicySpec) -> tuple[ToolGateway, TaskPolicy, ToolContext]:
    load_builtin()
    ctx = ToolContext(world=World(WorldSpec(files={"a.txt": "a"})))
    policy = TaskPolicy.build(None, spec, ctx=ctx)
    assert policy is not None
    tools = [registry()["read_file"], registry()["list_files"]]
    return ToolGateway(tools, ctx, policies=[policy]), policy, ctx


def test_a_refused_call_is_a_policy_violation_and_is_recorded() -> None:
    rule = PolicyRule(
        name="no-secrets", tools=["read_file"], argument="path", regex="a\\.txt", message="no"
    )
    gateway, policy, ctx = _gateway(PolicySpec(forbid=[rule]))
    call = ToolCall(id="c1", name="read_file", arguments={"path": "/workspace/a.txt"})
    result = asyncio.run(gateway.call(call))
    assert result.is_error and result.error_kind == "policy_violation"
    assert result.content == "refused: no (policy rule 'no-secrets')"
    assert [v.rule for v in policy.violations] == ["no-secrets"]
    assert requested_stop(ctx) is None  # on_violation: refuse (the default) goes on
    listed = asyncio.run(gateway.call(ToolCall(id="c2", name="list_files", arguments={})))
    assert not listed.is_error
    ctx.world.close()


def test_on_violation_end_asks_the_engine_to_stop_and_refuses_the_rest() -> None:
    rule = PolicyRule(tools=["read_file"], argument="path", regex="a", message="no")
    gateway, _, ctx = _gateway(PolicySpec(forbid=[rule], on_violation="end"))
    asyncio.run(gateway.call(ToolCall(id="c1", name="read_file", arguments={"path": "a.txt"})))
    stop = requested_stop(ctx)
    assert stop is not None and stop[0] is Termination.POLICY_VIOLATION
    assert "read_file('a.txt')" in stop[1]
    later = asyncio.run(gateway.call(ToolCall(id="c2", name="list_files", arguments={})))
    assert later.error_kind == "policy_violation" and "episode ended" in later.content
    ctx.world.close()


def test_suite_and_task_policies_merge() -> None:
    suite = PolicySpec(forbid=[NO_PUSH], on_violation="end")
    task = PolicySpec(forbid=[DELETE_REPO])
    policy = TaskPolicy.build(suite, task)
    assert policy is not None
    assert [r.name for r in policy.spec.forbid] == ["no-push", "delete-repo"]
    assert policy.ends_episode
    assert TaskPolicy.build(None, PolicySpec()) is None  # no rules, no policy


def test_the_first_stop_request_wins() -> None:
    ctx = ToolContext(world=World(WorldSpec()))
    request_stop(ctx, Termination.RESOURCE_LIMIT, "first")
    request_stop(ctx, Termination.POLICY_VIOLATION, "second")
    assert requested_stop(ctx) == (Termination.RESOURCE_LIMIT, "first")


def test_a_regex_rule_that_runs_out_of_time_counts_as_broken() -> None:
    """A command made to make the rule's pattern backtrack is refused, not waved through."""
    rule = PolicyRule(name="no-a", regex=r"^(a|a)*$")
    assert rule_matches(rule, "run_command", {"command": "a" * 5_000 + "!"})
    assert not rule_matches(rule, "run_command", {"command": "ls"})
