"""Cache, retries and usage around one model call: the part every adapter shares."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from toolproof.trajectory import Usage

from ..base import AgentTurn
from ._cache import ModelCache
from ._cost import PriceTable
from ._options import CallOptions
from ._reply import ModelReply, checked_reply
from ._retry import Classifier, RetryPolicy, SharedBackoff, call_with_retries


class ModelCaller:
    """Asks a model (or an HTTP agent) for its reply, through the cache and with retries.

    One per run: it holds no connection, only the retry policy, the cache and
    the price table, so concurrent episodes share it safely.

    Args:
        what: Names the callee in messages, e.g. ``openai:gpt-4o``.
        options: Timeouts, retries and cache directory.
        classify: Says what a failed request means.
        prices: Prices for usage without a reported cost; None leaves cost unset.
    """

    def __init__(
        self,
        what: str,
        options: CallOptions,
        classify: Classifier,
        prices: PriceTable | None = None,
    ) -> None:
        self.what = what
        self.policy = RetryPolicy(options.max_retries, options.backoff_base, options.backoff_max)
        self.backoff = SharedBackoff()
        """One pause for every episode of the run (the caller is made once per run)."""
        self.cache = ModelCache(options.cache) if options.cache else None
        self.classify = classify
        self.prices = prices

    async def reply(
        self, request: Mapping[str, Any], send: Callable[[], Awaitable[ModelReply]]
    ) -> tuple[ModelReply, int]:
        """The reply to a request: recorded, or fetched (and then recorded).

        Args:
            request: The canonical request, the cache key's material.
            send: Makes one live request.

        Returns:
            The reply and the number of retries it took (0 from the cache).

        Raises:
            ReplyRefused: the reply does not pass the ingress for agent bytes (an
                ``agent_error``; such a reply is never cached).
        """
        if self.cache is not None:
            cached = self.cache.get(request)
            if cached is not None:
                return checked_reply(cached, self.what), 0
        reply, retries = await call_with_retries(
            send, self.classify, self.policy, self.what, shared=self.backoff
        )
        reply = checked_reply(reply, self.what)
        if self.cache is not None:
            self.cache.put(request, reply)
        return reply, retries

    async def turn(
        self,
        model: str,
        request: Mapping[str, Any],
        send: Callable[[], Awaitable[ModelReply]],
    ) -> AgentTurn:
        """The agent turn of a chat-model request, with usage and cost."""
        reply, retries = await self.reply(request, send)
        return reply.turn(self.usage(model, request, reply), retries)

    def usage(self, model: str, request: Mapping[str, Any], reply: ModelReply) -> Usage:
        """Tokens and cost of a call (estimated from characters when not reported)."""
        prices = self.prices or PriceTable({})
        input_chars = len(json.dumps(request.get("messages", []), ensure_ascii=False))
        input_chars += len(json.dumps(request.get("tools", []), ensure_ascii=False))
        input_chars += len(str(request.get("system", "")))
        return prices.usage(
            model,
            reply.input_tokens,
            reply.output_tokens,
            input_chars=input_chars,
            output_chars=reply.output_chars(),
        )
