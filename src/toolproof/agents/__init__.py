"""Agents: the protocol, the registry of kinds, and the built-in agents.

Map::

    "kind:target" --parse_agent_spec--> AgentSpec --build_agent--> factory(EpisodeContext) -> Agent
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
    Observation,
    ToolSession,
    agent,
    agent_kinds,
    build_agent,
    parse_agent_spec,
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
    "Observation",
    "ToolSession",
    "agent",
    "agent_kinds",
    "build_agent",
    "parse_agent_spec",
]
