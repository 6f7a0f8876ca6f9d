"""Mends framework Anthropic clients written for older anthropic SDKs (message unions, sampling).

Two changes of the anthropic SDK 2.x break the newest framework clients
(llama-index-llms-anthropic 0.12.3, autogen-ext 0.7.5's ``AnthropicChatCompletionClient``).

**Message unions.** anthropic 2.x made ``anthropic.types.MessageParam`` (and ``BetaMessageParam``) a
``Union`` of ``UserMessageParam``, ``AssistantMessageParam`` and ``SystemMessageParam``;
before, it was one ``TypedDict``. The newest releases of two framework clients still
*call* it to build a message, which a ``Union`` refuses::

    llama_index.llms.anthropic (0.12.3)   utils.messages_to_anthropic_messages
    autogen_ext.models.anthropic (0.7.5)  AnthropicChatCompletionClient.create / create_stream
        MessageParam(role="user", content=...)
        TypeError: Cannot instantiate typing.Union

Calling a ``TypedDict`` only ever built a plain ``dict``, so where one of these modules
holds such a ``Union`` under that name, :func:`mend` rebinds the name, in that module
only, to ``dict``: the request the SDK sends is byte for byte what it sent with the
older SDK. Nothing is touched when the module is not loaded, or when its name is not a
``Union`` (a release that fixed it).

**Sampling arguments.** ``messages.create`` of anthropic 2.x no longer takes
``temperature``, ``top_p`` or ``top_k`` as arguments (toolproof's own ``anthropic``
adapter sends ``temperature`` in ``extra_body`` for that reason), and both clients
always pass ``temperature``::

    TypeError: AsyncMessages.create() got an unexpected keyword argument 'temperature'

Where the installed SDK's ``create`` lacks them, :func:`mend` wraps the ``create`` of
the SDK's message resources (sync, async, beta) to move those arguments into
``extra_body``: the wire request holds them exactly where it did. A call that does not
pass them is not changed (it reached the same ``create``); this is the one mend that
reaches beyond the framework's modules, since the clients call the SDK's classes.

The adapters call :func:`mend` once the user's factory has built its agent (and so
imported its client), before the agent runs.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import sys
import threading
import types
import typing
from collections.abc import Callable
from typing import Any

MODULES: dict[str, tuple[str, ...]] = {
    "llamaindex": ("llama_index.llms.anthropic.utils",),
    "autogen": ("autogen_ext.models.anthropic._anthropic_client",),
}
"""By framework, the modules that call ``MessageParam``/``BetaMessageParam`` to build one."""

NAMES = ("MessageParam", "BetaMessageParam")

SAMPLING = ("temperature", "top_p", "top_k")
"""Arguments anthropic 2.x's ``messages.create`` dropped; still request body fields."""

RESOURCES = (
    ("anthropic.resources.messages", ("Messages", "AsyncMessages")),
    ("anthropic.resources.beta.messages", ("Messages", "AsyncMessages")),
)
"""The SDK's message resources whose ``create`` the frameworks call."""

_lock = threading.Lock()


def _is_union(value: object) -> bool:
    return typing.get_origin(value) in (typing.Union, types.UnionType)


def mend(framework: str) -> list[str]:
    """Rebind the broken ``MessageParam`` names of ``framework``'s loaded Anthropic client.

    Returns:
        What was rebound, as ``module.name`` (empty when nothing needed it).
    """
    mended: list[str] = []
    with _lock:  # episodes run on their own threads
        for module_name in MODULES.get(framework, ()):
            module = sys.modules.get(module_name)
            if module is None:
                continue
            for name in NAMES:
                if _is_union(getattr(module, name, None)):
                    setattr(module, name, dict)
                    mended.append(f"{module_name}.{name}")
        if any(name in sys.modules for name in MODULES.get(framework, ())):
            mended.extend(_mend_sampling())
    return mended


def _unset(value: object) -> bool:
    return value is None or type(value).__name__ in ("NotGiven", "Omit")


def _forwarding(create: Callable[..., Any]) -> Callable[..., Any]:
    """``create`` taking the sampling arguments again, sent in ``extra_body``."""

    @functools.wraps(create)
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        moved = {k: kwargs.pop(k) for k in SAMPLING if k in kwargs}
        moved = {k: v for k, v in moved.items() if not _unset(v)}
        if moved:
            kwargs["extra_body"] = {**moved, **(kwargs.get("extra_body") or {})}
        return create(self, *args, **kwargs)  # a coroutine, for the async resources

    call.__dict__["toolproof_mended"] = True
    return call


def _mend_sampling() -> list[str]:
    mended: list[str] = []
    for module_name, classes in RESOURCES:
        try:
            module = importlib.import_module(module_name)
        except ImportError:  # an SDK without the beta resources
            continue
        for class_name in classes:
            resource = getattr(module, class_name, None)
            create = getattr(resource, "create", None)
            if create is None or getattr(create, "toolproof_mended", False):
                continue
            if "temperature" in inspect.signature(create).parameters:
                continue  # an SDK that still takes them
            resource.create = _forwarding(create)  # type: ignore[union-attr]
            mended.append(f"{module_name}.{class_name}.create")
    return mended
