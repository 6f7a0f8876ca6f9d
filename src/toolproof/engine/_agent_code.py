"""What agent code raises into the harness, contained to its episode.

Anything an agent's ``act``, ``run`` or clean-up raises (``SystemExit``,
``KeyboardInterrupt``, ``GeneratorExit`` and a stray ``CancelledError`` included) becomes
its episode's ``agent_error`` message; only the run's own cancellation goes on up.
"""

from __future__ import annotations

import asyncio
import inspect
import traceback
from pathlib import Path

from toolproof.agents.limits import AgentFault
from toolproof.trajectory import ingress

_PACKAGE = str(Path(__file__).resolve().parents[1])
"""toolproof's own source: a frame there is the harness's, never the agent's location."""


def error_text(exc: BaseException) -> str:
    """``Type: message at file:line``, bounded, even for an exception whose ``str`` fails.

    The location is the innermost frame outside toolproof's package (the agent's code); an
    error a toolproof adapter raised (a ``cmd:`` command's exit status, with its stderr)
    gets none, rather than the adapter's own line.
    """
    try:
        frames = [
            f
            for f in traceback.extract_tb(exc.__traceback__)
            if not str(Path(f.filename).resolve()).startswith(_PACKAGE)
        ]
        where = f" at {Path(frames[-1].filename).name}:{frames[-1].lineno}" if frames else ""
    except (ValueError, OSError):  # a code object's file name no path can be (a NUL in it)
        where = ""
    try:
        text = f"{type(exc).__name__}: {exc}"
    except BaseException:  # the agent's exception cannot even say what it is
        text = type(exc).__name__
    return _valid(f"{text[:2000]}{where}")


def _valid(text: str) -> str:
    """Agent-made text as the ingress takes it: a lone surrogate (which no store can write)
    is written as its escape, ``\\udcff``, so the message stays the agent's error rather
    than an unstorable record blamed on toolproof."""
    if ingress.lone_surrogate(text) is None:
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


AGENT_RAISES = (Exception, SystemExit, KeyboardInterrupt, GeneratorExit, asyncio.CancelledError)
"""What agent code may raise into the harness; each is contained to its episode."""


def cancelled_from_outside() -> bool:
    """True when the running task itself is being cancelled (Ctrl-C, the runner, a timeout).

    A ``CancelledError`` that agent code raised on its own is then told apart from the
    run's real cancellation, which must go on up.
    """
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def agent_raised(exc: BaseException, what: str) -> str:
    """The agent_error message for an exception out of agent code.

    Raises:
        asyncio.CancelledError: it is the run's own cancellation (not swallowed).
    """
    if isinstance(exc, asyncio.CancelledError) and cancelled_from_outside():
        raise exc
    if isinstance(exc, AgentFault):
        return _valid(str(exc))
    if isinstance(exc, Exception):
        return error_text(exc)
    return f"{what} raised {error_text(exc)} (contained to the episode)"


async def close_agent(agent: object) -> None:
    """The agent's own ``aclose`` or ``close``, if it has one; what it raises is ignored."""
    for name in ("aclose", "close"):
        closer = getattr(agent, name, None)
        if callable(closer):
            try:
                outcome = closer()
                if inspect.isawaitable(outcome):
                    await outcome
            except AGENT_RAISES as exc:  # the agent's own clean-up failing is not scored
                if isinstance(exc, asyncio.CancelledError) and cancelled_from_outside():
                    raise
            return
