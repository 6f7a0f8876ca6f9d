"""Adapters: hosted models, HTTP agents and agent frameworks as toolproof agents.

The harness-driven ones (the engine owns the loop and asks for each turn)::

    openai:MODEL      openai_chat.py         Chat Completions, official ``openai`` SDK
    anthropic:MODEL   anthropic_messages.py  Messages API, official ``anthropic`` SDK
    http(s)://…       http_agent.py          toolproof-agent/1 JSON over HTTP (httpx)

    each turn:  Observation ─▶ request ─▶ ModelCaller ─▶ ModelReply ─▶ AgentTurn
                                          │ _cache.py  --cache DIR: record, replay
                                          │ _retry.py  429/5xx/timeouts, backoff, retry-after
                                          └ _cost.py   tokens, prices.yaml, cost_usd
    _schemas.py   ToolSchema → OpenAI function tool / Anthropic tool (SpecError if inexpressible)
    _options.py   --agent-arg options, checked once per run
    _reply.py     the neutral reply; malformed arguments kept raw for the gateway

The framework and command-line adapters (``*_agent.py`` besides ``http_agent``)
are agent-driven: the agent owns its loop and calls the episode's tools.

Each module registers its kind with ``@agent`` when
:mod:`toolproof.agents.builtin` loads it; the SDKs are imported only when an
agent is built, and a missing one names the extra to install.
"""
