"""What ``litellm:`` shares between its harness-driven adapter and the model gateway.

LiteLLM (``pip install 'toolproof[litellm]'``) speaks to Gemini, Bedrock, Azure, Vertex,
Ollama, vLLM, Together and many more behind one OpenAI-shaped call,
``litellm.acompletion``. toolproof uses it as a transport only: retries, the cache,
prices and the ingress stay toolproof's own, exactly as for ``openai:``.

* :func:`import_litellm` imports it with LiteLLM's *shipped* price table (never the one
  it would otherwise download at import: a run must not depend on the network or on a
  table that changes under it) and its retries and banners off;
* :class:`LiteLLMPrices` prices a model from toolproof's table, and where that has no
  entry from LiteLLM's (:attr:`LiteLLMPrices.borrowed` names those models);
* :func:`classify` says what a failed call means (LiteLLM raises the OpenAI SDK's
  exception classes, with the provider's status);
* :func:`gateway_call` is the gateway's upstream for ``--model litellm:MODEL``: the
  agent's OpenAI-wire request is sent through ``litellm.acompletion`` and answered in
  the OpenAI wire format (JSON, or SSE chunks when the agent streams).
"""

from __future__ import annotations

import json
import logging
import os
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

from toolproof.gateway import UpstreamReply, UpstreamStatus

from ._cost import Price, PriceTable
from ._options import require_sdk
from ._retry import Failure, status_failure

_log = logging.getLogger(__name__)

UpstreamCall = Callable[[str, dict[str, Any]], Awaitable[UpstreamReply]]


def import_litellm() -> Any:
    """The ``litellm`` module, set up for reproducible runs (see the module's docstring).

    Raises:
        ImportError: it is not installed.
    """
    # Before the first import: LiteLLM fetches its price map from the network at import
    # unless told to use the copy it ships.
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    # Pydantic's note about a TypedDict of LiteLLM's (it builds the schema lazily, mid-call):
    # LiteLLM's business, not the person running toolproof's.
    warnings.filterwarnings(
        "ignore",
        message=r"Items? .* on TypedDict class .* (is|are) using the `ReadOnly` qualifier",
        category=UserWarning,
    )
    import litellm

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    litellm.num_retries = 0
    return litellm


def require_litellm() -> Any:
    """:func:`import_litellm`, or the error that names the extra to install.

    Raises:
        SpecError: LiteLLM is not installed.
    """
    try:
        return import_litellm()
    except ImportError:
        require_sdk("litellm", "litellm")  # raises, naming the extra
        raise


def litellm_price(model: str) -> Price | None:
    """The price of ``model`` in LiteLLM's shipped table (USD per million tokens), or None."""
    litellm = import_litellm()
    try:
        info = litellm.get_model_info(model)
    except Exception:  # LiteLLM raises its own "not mapped" errors, or KeyError/ValueError
        return None
    given = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    if not all(isinstance(v, int | float) and v >= 0 for v in given):
        return None
    cached = info.get("cache_read_input_token_cost")
    return Price(
        input=float(given[0]) * 1e6,
        output=float(given[1]) * 1e6,
        cached_input=float(cached) * 1e6 if isinstance(cached, int | float) else None,
    )


class LiteLLMPrices(PriceTable):
    """toolproof's price table, then LiteLLM's for the models it lacks.

    A model priced from LiteLLM's table is logged once as such and listed in
    :attr:`borrowed`; toolproof's own table (and the user's ``prices`` files) always win.
    """

    def __init__(self, prices: dict[str, Price]) -> None:
        super().__init__(prices)
        self.borrowed: dict[str, Price | None] = {}

    def price(self, model: str) -> Price | None:
        """toolproof's price for ``model``, else LiteLLM's (looked up once per model)."""
        own = super().price(model)
        if own is not None:
            return own
        if model not in self.borrowed:
            found = litellm_price(model)
            self.borrowed[model] = found
            if found is not None:
                _log.warning(
                    "%s is priced from LiteLLM's price table (toolproof's has no entry): "
                    "$%g / $%g per million input / output tokens; pass --agent-arg "
                    "prices=FILE to set your own",
                    model,
                    found.input,
                    found.output,
                )
        return self.borrowed[model]


def classify(exc: BaseException) -> Failure | None:
    """What a failed ``litellm.acompletion`` means (see ``_retry``).

    LiteLLM maps every provider's errors onto the OpenAI SDK's classes; one that carries
    only a ``status_code`` is read by that status.
    """
    from .openai_chat import classify as openai_classify

    known = openai_classify(exc)
    if known is not None:
        return known
    status = getattr(exc, "status_code", None)
    if isinstance(status, int) and 400 <= status <= 599:
        return status_failure(status, str(exc)[:500])
    return None


def _error(status: int, message: str) -> UpstreamStatus:
    body = {"error": {"message": message[:1000], "type": "api_error", "param": None}}
    return UpstreamStatus(UpstreamReply(status, "application/json", json.dumps(body)))


def gateway_call(api_base: str | None, api_key: str | None, timeout_s: float) -> UpstreamCall:
    """The gateway's upstream for ``--model litellm:MODEL``.

    Args:
        api_base: The provider endpoint, when not the provider's own.
        api_key: The run's key (LiteLLM reads the provider's variables when None).
        timeout_s: Seconds one call may take.

    The returned call raises :class:`UpstreamStatus` for a provider error (its status; a
    timeout is 504 and a lost connection 502, both retried by the gateway's retrier), so
    that the gateway decides whose failure it is as for any other provider. Anything else
    LiteLLM raises is its refusal of the agent's request (a 400: the agent's error, never
    ``infra_error``, which needs a failure toolproof witnessed on the run's side).
    """

    async def call(rest: str, body: dict[str, Any]) -> UpstreamReply:
        import openai

        litellm = import_litellm()
        if rest != "chat/completions":
            raise _error(404, f"the litellm upstream serves chat/completions, not {rest!r}")
        request = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
        streamed = body.get("stream") is True
        extra: dict[str, Any] = {"num_retries": 0, "timeout": timeout_s}
        if api_base:
            extra["api_base"] = api_base
        if api_key:
            extra["api_key"] = api_key
        try:
            if not streamed:
                response = await litellm.acompletion(**request, **extra)
                return UpstreamReply(200, "application/json", response.model_dump_json())
            stream = await litellm.acompletion(
                **request, **extra, stream=True, stream_options={"include_usage": True}
            )
            events = [f"data: {chunk.model_dump_json()}\n\n" async for chunk in stream]
            events.append("data: [DONE]\n\n")
            return UpstreamReply(200, "text/event-stream", "".join(events))
        except openai.APITimeoutError as exc:
            raise _error(504, f"the provider timed out: {exc}") from exc
        except openai.APIConnectionError as exc:
            raise _error(502, f"cannot reach the provider: {exc}") from exc
        except openai.APIStatusError as exc:
            raise UpstreamStatus(
                UpstreamReply(
                    exc.status_code,
                    "application/json",
                    json.dumps({"error": {"message": str(exc)[:1000], "type": "api_error"}}),
                    dict(exc.response.headers),
                )
            ) from exc
        except Exception as exc:  # LiteLLM refusing the agent's request (a parameter, a shape)
            status = getattr(exc, "status_code", None)
            if isinstance(status, int) and 400 <= status <= 599:
                raise _error(status, str(exc)) from exc
            # Not a failure toolproof saw on the run's side: the agent's request, its error.
            raise _error(400, f"litellm refused the request: {type(exc).__name__}: {exc}") from exc

    return call
