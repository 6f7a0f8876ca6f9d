"""Agents: the protocol, the registry of kinds, and the built-in agents.

Map::

    "kind:target" --parse_agent_spec--> AgentSpec --build_agent--> factory
    make_agent(factory, instance, tools) -> factory(EpisodeContext) -> Agent   (blind)
                                         | with_key factory(ctx, instance)  (built-ins only)
    Agent.act(Observation) -> AgentTurn        (harness-driven)
    DrivenAgent.run(ToolSession) -> answer     (agent-driven)
"""

from .base import (
    Agent,
    AgentBuilder,
    AgentFactory,
    AgentInfraError,
    AgentSpec,
    AgentTurn,
    DrivenAgent,
    EpisodeContext,
    KeyedFactory,
    Observation,
    ToolSession,
    agent,
    agent_kinds,
    agent_session,
    build_agent,
    episode_context,
    make_agent,
    parse_agent_spec,
    with_key,
)

__all__ = [
    "Agent",
    "AgentBuilder",
    "AgentFactory",
    "AgentInfraError",
    "AgentSpec",
    "AgentTurn",
    "DrivenAgent",
    "EpisodeContext",
    "KeyedFactory",
    "Observation",
    "ToolSession",
    "agent",
    "agent_kinds",
    "agent_session",
    "build_agent",
    "episode_context",
    "make_agent",
    "parse_agent_spec",
    "with_key",
]
