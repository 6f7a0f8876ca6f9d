"""The episode's user: one object behind ``ask_user`` and the conversation, and its replay.

A scripted user and a model-played one (the scripted model server, real HTTP on
loopback) each answer a question under ``ask_user`` and then talk in conversation as
the same object; a replayed episode's user sees the questions the original asked; what
a recorded step holds (agent bytes, or a damaged record) never breaks the replay.
"""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolproof.agents import AgentTurn, Observation
from toolproof.engine import Continuation, EpisodeOptions, run_episode
from toolproof.spec import Limits, Task, TaskInstance, UserSpec, render
from toolproof.spec.user import STOP_TOKEN
from toolproof.testing import ModelServer, ScriptedReply
from toolproof.tools import ToolContext, ToolGateway, resolve_tools
from toolproof.trajectory import Message, Step, ToolCall, ToolResult
from toolproof.users import EpisodeUser, Exchange, ModelUser, UserModelError, asked_in
from toolproof.users.scripted import ScriptedUser
from toolproof.worlds import World

EXAMPLES = int(os.environ.get("TOOLPROOF_FUZZ_EXAMPLES", "60"))

USER: dict[str, Any] = {
    "goal": "Pay the bill from the right account.",
    "facts": {"account": {"value": "CHK-2", "about": "the account to pay from"}},
    "topics": [{"keywords": ["account"], "reply": "Use CHK-2.", "reveals": ["account"]}],
    "satisfied_reply": "That's all, thanks.",
    "max_questions": 1,
}


def _instance(user: dict[str, Any] | None = USER, **fields: Any) -> TaskInstance:
    data: dict[str, Any] = {
        "id": "pay",
        "description": "Pay my electricity bill.",
        "type": "single_tool",
        "tools": ["ask_user"],
        "success": [{"kind": "output", "contains": ["CHK-2"]}],
        "solution": {"answer": "CHK-2"},
        **fields,
    }
    if user is not None:
        data["user"] = user
    task = Task.model_validate(data)
    return render(task, suite="t", suite_seed=1, epoch=0, limits=Limits(), system_prompt="")


def _gateway(user: EpisodeUser) -> ToolGateway:
    inst = user.instance
    ctx = ToolContext(world=World(inst.task.world), instance=inst, user=user)
    return ToolGateway(resolve_tools(inst.task), ctx)


async def _ask(gateway: ToolGateway, question: str, n: int = 0) -> dict[str, Any]:
    call = ToolCall(id=f"c{n}", name="ask_user", arguments={"question": question})
    result = await gateway.call(call)
    assert not result.is_error, result.content
    loaded = json.loads(result.content)
    assert isinstance(loaded, dict)
    return loaded


# --------------------------------------------------------------------------- two faces


async def test_a_scripted_user_answers_ask_user_and_talks_in_conversation_as_one() -> None:
    user = EpisodeUser(_instance({**USER, "mode": "conversation"}))
    asked = await _ask(_gateway(user), "Which account?")
    assert asked == {"reply": "Use CHK-2.", "answered_by": "scripted"}
    simulator = user.simulator
    opening = await user.open()
    assert opening is not None and (opening.text, opening.by) == (
        "Pay my electricity bill.",
        "scripted",
    )
    follow = await user.after("Paid from CHK-2. Done.", 0)
    assert (follow.ends, follow.why, follow.by) == (True, "user_stop", "scripted")
    assert follow.text == "That's all, thanks."
    # the same simulator behind both faces, and one record of what was asked
    assert user.simulator is simulator
    assert user.transcript == [Exchange("Which account?", "Use CHK-2.", "scripted")]
    assert [u.speaker for u in user.history] == ["user"]


async def test_a_model_played_user_answers_both_faces_through_one_simulator() -> None:
    spec = UserSpec.model_validate({**USER, "simulator": "model", "mode": "conversation"})
    replies = [
        ScriptedReply("CHK-2, please."),
        ScriptedReply("Hi, please pay my electricity bill."),
        ScriptedReply(f"Great, thanks! {STOP_TOKEN}"),
    ]
    with ModelServer(replies) as server:
        played = ModelUser(spec, api="openai", base_url=server.base_url, model="sim", label="o:sim")
        user = EpisodeUser(_instance(spec.model_dump(mode="json")), played)
        asked = await _ask(_gateway(user), "Which account?")
        opening = await user.open()
        follow = await user.after("Paid from CHK-2.", 0)
        requests = server.chat_requests
    assert asked == {"reply": "CHK-2, please.", "answered_by": "model:o:sim"}
    assert opening is not None and opening.text == "Hi, please pay my electricity bill."
    assert (follow.text, follow.ends, follow.why) == ("Great, thanks!", True, "user_stop")
    assert len(requests) == 3
    # the ask_user face and the conversation face send their own system text
    systems = [str(r.messages[0].content) for r in requests]
    assert "asking you questions" in systems[0] and STOP_TOKEN in systems[2]


async def test_the_tasks_own_turns_come_in_order_then_end() -> None:
    turns = [{"content": "Now the gas bill."}, {"content": ""}]
    user = EpisodeUser(_instance(None, user_turns=turns))
    assert user.active and await user.open() is None
    first, second, third = [await user.after("ok", n) for n in range(3)]
    assert (first.text, first.ends) == ("Now the gas bill.", False)
    assert (second.text, second.ends) == ("", False)  # an empty message is still a turn
    assert (third.text, third.ends) == (None, True)


async def test_a_conversation_ends_when_the_agent_is_silent_or_the_turns_run_out() -> None:
    user = EpisodeUser(_instance({**USER, "mode": "conversation", "max_turns": 1}))
    await user.open()
    assert (await user.after("   ", 0)).why == "agent_silent"
    assert (await user.after("Which account?", 1)).why == "max_turns"


class _Garbled:
    """A simulator whose text is not valid Unicode (a model's lone surrogate)."""

    name = "garbled"

    def reply(self, question: str, transcript: Any) -> str:
        return "\udcff"

    def open(self, request: str) -> str:
        return "Hello \ud800"

    def answer(self, request: str, history: Any) -> str:
        return "ok \udc00"


async def test_a_users_text_that_is_not_unicode_is_the_users_failure() -> None:
    user = EpisodeUser(_instance({**USER, "mode": "conversation"}), _Garbled())
    with pytest.raises(UserModelError, match="lone surrogate"):
        await user.open()
    user.history = []
    with pytest.raises(UserModelError, match="garbled"):
        await user.after("Which account?", 0)


# --------------------------------------------------------------------------- replay


class _Asker:
    """Asks ``questions`` one per turn, then answers with the last reply it got."""

    def __init__(self, *questions: str) -> None:
        self.questions = list(questions)

    async def act(self, observation: Observation) -> AgentTurn:
        if self.questions:
            question = self.questions.pop(0)
            call = ToolCall(
                id=f"q{observation.step}", name="ask_user", arguments={"question": question}
            )
            return AgentTurn(tool_calls=[call])
        last = json.loads(observation.messages[-1].content or "{}")
        return AgentTurn(content=str(last.get("reply")))


async def test_a_replayed_episodes_user_remembers_the_questions_asked_before() -> None:
    # max_questions is 1: the second question gets the impatient reply, in the original
    # and in a replay that picks up after the first question
    instance = _instance()
    options = EpisodeOptions(agent_label="asker")
    original, _ = await run_episode(
        instance, lambda ctx: _Asker("Which account?", "Which account?"), options
    )
    impatient = UserSpec.model_validate(USER).impatient_reply
    assert original.final_answer == impatient
    world = World(instance.task.world)
    again = Continuation(
        history=original.steps[:1], initial=world.snapshot(), parent="x@1", prompt=original.prompt
    )
    replayed, _ = await run_episode(
        instance, lambda ctx: _Asker("Which account?"), options, world=world, continuation=again
    )
    assert replayed.final_answer == impatient
    world.close()


def _step(calls: list[ToolCall], results: list[ToolResult]) -> Step:
    return Step(
        index=0, message=Message(role="assistant", content=None, tool_calls=calls), results=results
    )


def test_resume_rebuilds_the_transcript_and_the_conversation() -> None:
    call = ToolCall(id="a", name="ask_user", arguments={"question": "Which account?"})
    said = json.dumps({"reply": "Use CHK-2.", "answered_by": "scripted"})
    steps = [_step([call], [ToolResult(call_id="a", name="ask_user", content=said)])]
    user = EpisodeUser(_instance({**USER, "mode": "conversation"}))
    user.resume("Pay my bill.", [("Which account?", "CHK-2."), ("Done.", "Thanks")], steps)
    assert user.transcript == [Exchange("Which account?", "Use CHK-2.", "scripted")]
    assert [(u.speaker, u.text) for u in user.history] == [
        ("user", "Pay my bill."),
        ("agent", "Which account?"),
        ("user", "CHK-2."),
        ("agent", "Done."),
        ("user", "Thanks"),
    ]
    assert isinstance(user.simulator, ScriptedUser)


@settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(
    content=st.one_of(
        st.text(max_size=80),
        st.builds(
            json.dumps,
            st.recursive(
                st.none() | st.booleans() | st.integers() | st.text(max_size=10),
                lambda kids: (
                    st.lists(kids, max_size=3)
                    | st.dictionaries(
                        st.sampled_from(["reply", "answered_by", "x"]), kids, max_size=3
                    )
                ),
                max_leaves=8,
            ),
        ),
    ),
    arguments=st.dictionaries(
        st.sampled_from(["question", "other"]), st.text(max_size=20) | st.integers(), max_size=2
    ),
    is_error=st.booleans(),
    name=st.sampled_from(["ask_user", "other_tool"]),
)
def test_whatever_a_recorded_step_holds_the_replay_reads_only_real_exchanges(
    content: str, arguments: dict[str, Any], is_error: bool, name: str
) -> None:
    call = ToolCall(id="a", name=name, arguments=arguments)
    result = ToolResult(call_id="a", name=name, content=content, is_error=is_error)
    found = asked_in([_step([call], [result])])
    loaded: Any = None
    with contextlib.suppress(ValueError):
        loaded = json.loads(content)
    real = (
        name == "ask_user"
        and not is_error
        and isinstance(loaded, dict)
        and isinstance(loaded.get("reply"), str)
    )
    assert len(found) == (1 if real else 0)
    for exchange in found:
        assert exchange.reply == loaded["reply"]
        assert exchange.question == str(arguments.get("question", ""))
