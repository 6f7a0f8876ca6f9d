"""A two-agent AutoGen team for the tests: a solver, then a reviewer who says TERMINATE.

``--agent autogen:autogen_team:make_team``; the scored answer is the solver's only with
``--agent-arg answer_agent=solver`` (the team's last message is the reviewer's).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any


@contextlib.asynccontextmanager
async def make_team(
    tools: list[Any], *, system_prompt: str, model: str, base_url: str, api_key: str
) -> AsyncIterator[Any]:
    """A round-robin team of two agents that ends when someone says TERMINATE."""
    from autogen_agentchat.agents import AssistantAgent
    from autogen_agentchat.conditions import TextMentionTermination
    from autogen_agentchat.teams import RoundRobinGroupChat
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    client = OpenAIChatCompletionClient(
        model=model, base_url=base_url, api_key=api_key, max_retries=0
    )
    try:
        solver = AssistantAgent(
            "solver", model_client=client, tools=tools, system_message=system_prompt
        )
        reviewer = AssistantAgent("reviewer", model_client=client, system_message="Review.")
        yield RoundRobinGroupChat(
            [solver, reviewer], termination_condition=TextMentionTermination("TERMINATE")
        )
    finally:
        await client.close()
