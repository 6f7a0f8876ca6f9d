"""The simulated user: the scripted reply rules, the ask_user tool over the episode's user
(``ToolContext.user``, a :class:`toolproof.users.EpisodeUser`) and pluggable simulators."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from pydantic import ValidationError

from toolproof.spec import Limits, Task, TaskInstance, UserFact, UserSpec, render
from toolproof.tools import ToolContext, ToolGateway, resolve_tools
from toolproof.trajectory import ToolCall, ToolKind
from toolproof.users import EpisodeUser, UserSimulator
from toolproof.users import base as user_kit
from toolproof.users.scripted import ScriptedUser
from toolproof.worlds import World

USER: dict[str, Any] = {
    "goal": "Pay the bill from the right account.",
    "facts": {
        "account": {
            "value": "CHK-2",
            "about": "the account to pay from",
            "alternatives": ["CHK-1", "CHK-2", "SAV-1"],
        },
        "date": {"value": "2026-03-12", "alternatives": ["2026-03-10"]},
    },
    "topics": [
        {
            "name": "account",
            "keywords": ["account", "acc*"],
            "reply": "Use CHK-2.",
            "reveals": ["account"],
        },
        {
            "name": "date",
            "keywords": ["date", "which day"],
            "reply": "On 2026-03-12.",
            "reveals": ["date"],
        },
    ],
    "satisfied_reply": "That's all, thanks.",
    "max_questions": 3,
}


def spec(**changes: Any) -> UserSpec:
    """The sample user with some fields replaced."""
    return UserSpec.model_validate({**USER, **changes})


# --------------------------------------------------------------------------- reply rules


def test_a_keyword_triggers_its_topic_case_and_punctuation_ignored() -> None:
    text, topics = spec().scripted_reply("Which ACCOUNT should I use?!")
    assert (text, topics) == ("Use CHK-2.", ["account"])


def test_keywords_match_whole_words_only() -> None:
    text, topics = spec().scripted_reply("Should I update the record?")  # 'date' in 'update'
    assert topics == []
    assert text == "I don't know, please just do what I asked."


def test_a_trailing_star_matches_word_prefixes() -> None:
    assert spec().scripted_reply("Are the accounting rules relevant?")[1] == ["account"]


def test_phrases_match_across_punctuation() -> None:
    assert spec().scripted_reply("Which-day works?")[1] == ["date"]


def test_one_question_about_two_topics_gets_both_replies_in_declared_order() -> None:
    text, topics = spec().scripted_reply("What date, and from which account?")
    assert topics == ["account", "date"]
    assert text == "Use CHK-2. On 2026-03-12."


def test_a_confirmation_gets_the_satisfied_reply_only_when_one_is_set() -> None:
    assert spec().scripted_reply("Is that all?") == ("That's all, thanks.", ["satisfied"])
    assert spec(satisfied_reply=None).scripted_reply("Is that all?")[1] == []


def test_past_max_questions_the_user_only_asks_to_finish() -> None:
    assert spec().scripted_reply("Which account?", asked_before=2)[0] == "Use CHK-2."
    text, topics = spec().scripted_reply("Which account?", asked_before=3)
    assert text == "Please stop asking me questions and finish the task."
    assert topics == []
    assert spec(max_questions=None).scripted_reply("account", asked_before=99)[0] == "Use CHK-2."


def test_nested_keyword_lists_from_templates_are_flattened() -> None:
    user = spec(topics=[{"keywords": [["CHK-1", "CHK-2"], "account"], "reply": "ok"}])
    assert user.topics[0].keywords == ["CHK-1", "CHK-2", "account"]
    assert user.scripted_reply("is it chk-1?")[0] == "ok"


def test_a_topic_cannot_reveal_an_undeclared_fact() -> None:
    with pytest.raises(ValidationError, match="reveals unknown facts"):
        spec(topics=[{"keywords": ["x"], "reply": "y", "reveals": ["pin"]}])


def test_wrong_guess_is_the_first_alternative_that_is_not_the_fact() -> None:
    facts = spec().facts
    assert facts["account"].wrong_guess() == "CHK-1"
    assert facts["date"].wrong_guess() == "2026-03-10"
    assert UserFact(value=3, alternatives=[3]).wrong_guess() is None
    assert UserFact(value="b", alternatives=[" B ", "c"]).wrong_guess() == "c"


# --------------------------------------------------------------------------- the tool


def instance(user: dict[str, Any] | None = USER, tools: list[Any] | None = None) -> TaskInstance:
    """A rendered task offering ask_user (and the given user section)."""
    data: dict[str, Any] = {
        "id": "ask",
        "description": "Pay the bill.",
        "type": "single_tool",
        "tools": tools or ["ask_user"],
        "success": [{"kind": "output", "contains": ["paid"]}],
        "solution": {"answer": "paid"},
    }
    if user is not None:
        data["user"] = user
    task = Task.model_validate(data)
    return render(task, suite="t", suite_seed=1, epoch=0, limits=Limits(), system_prompt="")


def gateway(inst: TaskInstance, simulator: UserSimulator | None = None) -> ToolGateway:
    """A gateway over the instance's tools and an empty world, with the episode's user as
    the engine hands it over (``simulator``: one that overrides the task's choice)."""
    user = EpisodeUser(inst, simulator)
    ctx = ToolContext(world=World(inst.task.world), instance=inst, user=user)
    return ToolGateway(resolve_tools(inst.task), ctx)


def transcript(gw: ToolGateway) -> list[user_kit.Exchange]:
    """The episode's questions and replies, as its user kept them."""
    assert isinstance(gw.ctx.user, EpisodeUser)
    return gw.ctx.user.transcript


async def ask(gw: ToolGateway, question: str, n: int = 0) -> tuple[dict[str, Any], bool]:
    """Ask through the gateway; return the parsed content and whether it was an error."""
    result = await gw.call(ToolCall(id=f"c{n}", name="ask_user", arguments={"question": question}))
    if result.is_error:
        return {"error": result.content}, True
    return json.loads(result.content), False


def test_ask_user_is_a_read_tool_with_one_string_argument() -> None:
    tools = resolve_tools(instance().task)
    assert [t.schema.name for t in tools] == ["ask_user"]
    assert tools[0].schema.kind is ToolKind.READ
    assert tools[0].schema.parameters["required"] == ["question"]


async def test_ask_user_answers_and_records_which_simulator_answered() -> None:
    gw = gateway(instance())
    content, error = await ask(gw, "Which account?")
    assert not error
    assert content == {"reply": "Use CHK-2.", "answered_by": "scripted"}
    log = transcript(gw)
    assert log == [user_kit.Exchange("Which account?", "Use CHK-2.", "scripted")]


async def test_the_transcript_counts_questions_towards_max_questions() -> None:
    gw = gateway(instance())
    replies = [(await ask(gw, "Which account?", n))[0]["reply"] for n in range(4)]
    assert replies[:3] == ["Use CHK-2."] * 3
    assert replies[3].startswith("Please stop asking")


async def test_without_a_user_the_tool_says_so() -> None:
    content, error = await ask(gateway(instance(user=None)), "Which account?")
    assert error
    assert "there is no user to ask" in content["error"]


async def test_a_context_without_a_user_says_so() -> None:
    inst = instance()
    bare = ToolGateway(resolve_tools(inst.task), ToolContext(world=World(inst.task.world)))
    content, error = await ask(bare, "Which account?")
    assert error
    assert "there is no user to ask" in content["error"]


async def test_an_empty_question_is_refused() -> None:
    content, error = await ask(gateway(instance()), "   ")
    assert error
    assert "empty" in content["error"]


async def test_an_unknown_simulator_is_an_error_naming_the_known_ones() -> None:
    content, error = await ask(gateway(instance({**USER, "simulator": "nobody"})), "Which account?")
    assert error
    assert "'nobody' is not available" in content["error"]
    assert "scripted" in content["error"]


class EchoUser:
    """A stand-in for a model-played user: async, and it sees the transcript."""

    name = "echo:test-model"

    async def reply(self, question: str, transcript: Sequence[user_kit.Exchange]) -> str:
        return f"#{len(transcript) + 1}: you asked {question!r}"


@pytest.fixture
def echo_registered() -> Iterator[None]:
    """Register the echo simulator for one test."""
    user_kit.user_simulator("echo")(lambda spec, inst: EchoUser())
    yield
    user_kit._SIMULATORS.pop("echo")


async def test_a_registered_simulator_is_chosen_by_name_and_may_be_async(
    echo_registered: None,
) -> None:
    assert "echo" in user_kit.user_simulators()
    gw = gateway(instance({**USER, "simulator": "echo"}))
    first, _ = await ask(gw, "hello", 0)
    second, _ = await ask(gw, "again", 1)
    assert first == {"reply": "#1: you asked 'hello'", "answered_by": "echo:test-model"}
    assert second["reply"] == "#2: you asked 'again'"


async def test_a_simulator_given_to_the_user_overrides_the_tasks_choice() -> None:
    gw = gateway(instance(), simulator=EchoUser())
    content, _ = await ask(gw, "Which account?")
    assert content["answered_by"] == "echo:test-model"


def test_simulator_names_are_unique() -> None:
    with pytest.raises(ValueError, match="already registered"):
        user_kit.user_simulator("scripted")(lambda spec, inst: EchoUser())


def test_the_scripted_user_satisfies_the_protocol() -> None:
    assert isinstance(ScriptedUser(spec()), UserSimulator)
