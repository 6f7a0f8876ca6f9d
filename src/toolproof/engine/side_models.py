"""The run's side models: the model-played user and the judge, through the gateway.

Both go through the model gateway like a framework agent's calls, each on its own
episode link, so they are recorded, priced, retried and cached (``--cache``) apart
from the agent's::

    RunConfig.side_models {"user": options, "judge": options}
        ─▶ SideModels (one GatewayPlan per role, made once per worker: Ray workers too)
    episode: model_user(...)   ─▶ ModelUser, played by the episode's EpisodeUser (simulator: model)
                                  its calls ─▶ UserCalls in world.extras ─▶ each step's
                                  annotations["user_model_calls"]
    scoring: judging(...)      ─▶ judge_options(base_url=<judge link>, model=..., link)

A side model's failure after the gateway's retries is an infra error (the harness's
provider), never the agent's.

``toolproof replay`` rebuilds both from what the episode recorded (:func:`replaying`):
the user's calls in the steps' ``user_model_calls``, the judge's in its checks'
``model_calls``, and the run's ``--cache`` when it had one; a call found in neither is
refused (no live call), which makes the replayed episode an ``infra_error`` that says so.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from toolproof.spec import TaskInstance
from toolproof.trajectory import Message, ToolResult
from toolproof.worlds import World

if TYPE_CHECKING:  # the gateway, adapters, judge and model user load only when a run has
    # side models (most runs have none: a tenth of a one-task run's start-up otherwise)
    from toolproof.agents.adapters._via_gateway import GatewayPlan
    from toolproof.gateway import EpisodeLink, ModelCall, ReplyCache, Send, UpstreamReply
    from toolproof.results import EpisodeRecord
    from toolproof.users import ModelUser

USER_CALLS = "user_model_calls"
"""Step annotation (and ``world.extras`` key) of the user model's calls in that step."""


@dataclass(frozen=True)
class SideModels:
    """The run's user and judge models (None: not given).

    Attributes:
        user: The gateway plan of the user model.
        user_label: ``PROVIDER:MODEL`` as given.
        judge: The gateway plan of the judge model.
        judge_label: ``PROVIDER:MODEL`` as given.
    """

    user: GatewayPlan | None = None
    user_label: str | None = None
    judge: GatewayPlan | None = None
    judge_label: str | None = None

    @classmethod
    def from_config(
        cls, user_model: str | None, judge_model: str | None, options: dict[str, dict[str, Any]]
    ) -> SideModels:
        """The plans from a run's settings (``RunConfig.user_model``, ``judge_model``,
        ``side_models``)."""
        if user_model is None and judge_model is None:
            return cls()
        from toolproof.agents.adapters._via_gateway import gateway_plan

        user = judge = None
        if user_model is not None:
            user = gateway_plan(options.get("user", {}), f"user model {user_model}")
        if judge_model is not None:
            judge = gateway_plan(options.get("judge", {}), f"judge model {judge_model}")
        return cls(user, user_model, judge, judge_model)


class UserCalls:
    """The user model's calls of one episode, kept in ``world.extras`` until the next step.

    The recorder asks every extra for ``annotate_step`` when it writes a step, so the
    calls made while the step's ``ask_user`` ran land in that step's annotations, apart
    from the agent's own ``model_calls``. ``close`` (the world's) closes the gateway link.
    """

    def __init__(self, link: EpisodeLink) -> None:
        self.link = link
        self.pending: list[dict[str, Any]] = []

    def add(self, call: ModelCall) -> None:
        """Sink of the link (on the gateway's thread): keep the call's summary."""
        self.pending.append(call.summary())

    def annotate_step(
        self, index: int, message: Message, results: list[ToolResult]
    ) -> dict[str, Any]:
        """The calls since the last step, under ``user_model_calls``."""
        if not self.pending:
            return {}
        calls, self.pending = self.pending, []
        return {USER_CALLS: calls}

    def close(self) -> None:
        """Close the episode's gateway path."""
        from toolproof import gateway

        gateway.shared().close(self.link)


def model_user(
    side: SideModels | None, instance: TaskInstance, world: World
) -> tuple[ModelUser, EpisodeLink] | None:
    """The model-played user of an episode, when the task asks for one and the run has one.

    Returns:
        The user (the engine hands it to the episode's ``EpisodeUser``) and its gateway link
        (whose ``infra_error`` tells a provider failure); None otherwise.
    """
    spec = instance.task.user
    if side is None or side.user is None or spec is None or spec.simulator != "model":
        return None
    from toolproof import gateway
    from toolproof.gateway import PLACEHOLDER_KEY
    from toolproof.users import ModelUser

    plan = side.user
    calls = UserCalls(gateway.shared().open(plan.route, instance.epoch, None))
    calls.link.sink = calls.add
    world.extras[USER_CALLS] = calls
    urls = calls.link.urls()
    user = ModelUser(
        spec,
        api=plan.api,
        base_url=urls[plan.api],
        model=plan.model or "",
        label=side.user_label or plan.provider,
        seed=instance.seed,
        api_key=PLACEHOLDER_KEY,
    )
    return user, calls.link


@contextlib.contextmanager
def judging(side: SideModels | None, instance: TaskInstance) -> Iterator[None]:
    """Judge checks inside the block go to the run's judge model through the gateway."""
    if side is None or side.judge is None:
        yield
        return
    from toolproof import gateway
    from toolproof.gateway import PLACEHOLDER_KEY
    from toolproof.scoring.checks.judge import judge_options

    plan = side.judge
    if plan.api != "openai":
        raise ValueError(
            f"--judge-model {side.judge_label!r}: the judge speaks the OpenAI protocol; "
            "give an openai: or openai-compatible: model"
        )
    server = gateway.shared()
    link = server.open(plan.route, instance.epoch, None)
    try:
        with judge_options(
            base_url=link.urls()["openai"],
            api_key=PLACEHOLDER_KEY,
            model=side.judge_label,
            link=link,
        ):
            yield
    finally:
        server.close(link)


class RecordedReplies:
    """A read-only reply cache of the calls an episode recorded (summaries of
    :class:`~toolproof.gateway.ModelCall`), by the digest of the request body.

    A reply cut short in the record (``reply_truncated``) is not used; ``fallback`` (the
    run's ``--cache``) answers what the record cannot.
    """

    def __init__(self, calls: Iterable[Mapping[str, Any]], fallback: ReplyCache | None) -> None:
        self.replies: dict[str, str] = {}
        for call in calls:
            digest, reply = call.get("request_sha256"), call.get("reply")
            good = call.get("status") == 200 and not call.get("reply_truncated")
            if good and isinstance(digest, str) and isinstance(reply, str):
                self.replies.setdefault(digest, reply)
        self.fallback = fallback

    def get_raw(self, request: Mapping[str, Any]) -> dict[str, Any] | None:
        """The recorded reply to a gateway request key, else the fallback's."""
        canonical = json.dumps(request.get("body"), sort_keys=True, separators=(",", ":"))
        reply = self.replies.get(hashlib.sha256(canonical.encode()).hexdigest())
        if reply is not None:
            return {"status": 200, "content_type": "application/json", "body": reply}
        return self.fallback.get_raw(request) if self.fallback is not None else None

    def put_raw(self, request: Mapping[str, Any], reply: Mapping[str, Any]) -> object:
        """Nothing: a replay stores nothing."""
        return None


def recorded_calls(record: EpisodeRecord) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The user model's and the judge's calls an episode recorded."""
    user = [
        call
        for step in record.trajectory.steps
        for call in step.annotations.get(USER_CALLS, [])
        if isinstance(call, dict)
    ]
    judge = [
        call
        for check in record.score.checks
        for call in (check.data or {}).get("model_calls", [])
        if isinstance(call, dict)
    ]
    return user, judge


def _replayed(
    plan: GatewayPlan | None, calls: list[dict[str, Any]], role: str
) -> GatewayPlan | None:
    if plan is None:
        return None
    from toolproof.gateway import GatewayFailure

    async def refuse(send: Send) -> UpstreamReply:
        raise GatewayFailure(
            f"replay: the {role} model was asked something the recorded episode did not ask "
            "(the replay took another path) and neither the record nor the run's --cache "
            "has the reply; a replay makes no live model calls",
            infra=True,
        )

    cache = RecordedReplies(calls, plan.route.cache)
    route = dataclasses.replace(plan.route, retrier=refuse, cache=cache, upstream_calls=0)
    return dataclasses.replace(plan, route=route)


def replaying(
    user_model: str | None,
    judge_model: str | None,
    options: dict[str, dict[str, Any]],
    record: EpisodeRecord,
) -> SideModels | None:
    """The run's side models for a replay of ``record``: answered from what it recorded
    (and the run's ``--cache``), never by a live call. None when the run had none."""
    if user_model is None and judge_model is None:
        return None
    side = SideModels.from_config(user_model, judge_model, options)
    user, judge = recorded_calls(record)
    return dataclasses.replace(
        side, user=_replayed(side.user, user, "user"), judge=_replayed(side.judge, judge, "judge")
    )
