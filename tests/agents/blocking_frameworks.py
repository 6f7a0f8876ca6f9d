"""Framework agent factories that block, for ``tests/agents/test_framework_threads.py``.

Importable as ``langchain:blocking_frameworks:NAME`` once this directory is on ``sys.path``.
"""

from __future__ import annotations

import threading
from typing import Any

RELEASE = threading.Event()
"""Set by the test once the other episodes are stored; blocked code waits for it till then."""
HOLD_S = 30.0
"""The longest blocked code holds its loop when the test never releases it."""
MARKER = "HOLD:"
"""Tasks whose description starts with this block."""


def make_langchain(tools: list[Any], *, system_prompt: str, **options: Any) -> Any:
    """A runnable that looks product A up with the task's tool and answers.

    On a held task it first blocks its event loop (as a synchronous model client or
    ``time.sleep`` in an ``async def`` would).
    """
    from langchain_core.runnables import RunnableLambda

    async def answer(state: dict[str, Any]) -> str:
        prompt = state["messages"][0][1]
        if prompt.startswith(MARKER) and not RELEASE.is_set():
            RELEASE.wait(HOLD_S)  # blocks the loop it runs on
        stock = next(t for t in tools if t.name == "get_stock")
        found = await stock.ainvoke({"product_id": "A"})
        return f"There are 7 units ({found})."

    return RunnableLambda(answer)


def make_blocking_factory(tools: list[Any], *, system_prompt: str, **options: Any) -> Any:
    """A factory that blocks (like a slow synchronous set-up) on the held task (the one
    with a ``calculate`` tool), then makes a runnable that does not block."""
    if any(t.name == "calculate" for t in tools):
        RELEASE.wait(HOLD_S)
    return make_langchain(tools, system_prompt=system_prompt)
