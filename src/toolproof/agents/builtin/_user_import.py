"""The one door through which toolproof imports a user's ``module:attr`` (an agent, a
factory, an MCP agent's function, a framework's tool factory).

Importing user code runs it: the module's top level, and a module ``__getattr__`` while
the attribute is looked up. Whatever that code raises, even ``SystemExit`` or
``KeyboardInterrupt`` (any :class:`BaseException`), is a problem with the agent spec: a
:class:`~toolproof.spec.SpecError` naming the module, the exception and the fix (exit 2),
never the run's exit status and never a traceback. A module that ends the process
outright (``os._exit``) cannot be caught in the process that imports it.

One ``KeyboardInterrupt`` is not the module's: the one Python raises for a real Ctrl-C
(SIGINT) that arrives while the module imports. To tell them apart, the import runs with a
SIGINT handler that records the signal before handing it to the handler that was there
(:func:`sigint_witness`); a ``KeyboardInterrupt`` is passed on only when a SIGINT was
received meanwhile (:func:`pass_on_ctrl_c`), so a real Ctrl-C still ends the run as
docs/cli.md says (the module raising ``KeyboardInterrupt`` itself is its error). Off the
main thread no signal handler runs, so there every ``KeyboardInterrupt`` is the module's.
A suite's ``custom`` check modules are imported under the same rule (``engine.preflight``).
"""

from __future__ import annotations

import importlib
import signal
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

from toolproof.spec import Problem, SpecError


def import_target(target: str, what: str) -> Any:
    """Import ``module:attr`` (the current directory is importable).

    Args:
        target: ``module:attr``; ``attr`` may be dotted.
        what: The field named in errors (e.g. ``agent``).

    Raises:
        SpecError: malformed target; module or attribute not found; the module's code
            (importing it or looking up the attribute) raised anything at all.
        KeyboardInterrupt: a real Ctrl-C arrived meanwhile (see the module).
    """
    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise _error(what, f"{target!r} must look like 'module:attr', e.g. 'my_agent:agent'")
    cwd = str(Path.cwd())
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    with sigint_witness() as received:
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            message = f"cannot import module {module_name!r}: {_describe(exc)}; check PYTHONPATH"
            raise _error(what, message) from None
        except BaseException as exc:  # the module's own code ran and raised
            pass_on_ctrl_c(exc, received)
            raise _error(
                what,
                f"importing module {module_name!r} raised {_describe(exc)}; the module must "
                "import without raising or exiting (move that code under "
                "`if __name__ == '__main__':` or into the agent)",
            ) from None
        obj: Any = module
        for part in attr.split("."):
            try:
                found = hasattr(obj, part)
                value = getattr(obj, part) if found else None
            except BaseException as exc:  # a module or class __getattr__ of the user's
                pass_on_ctrl_c(exc, received)
                raise _error(
                    what,
                    f"looking up {attr!r} in module {module_name!r} raised {_describe(exc)}; "
                    "name an attribute the module defines",
                ) from None
            if not found:
                raise _error(what, f"module {module_name!r} has no attribute {attr!r}")
            obj = value
    return obj


def _error(what: str, message: str) -> SpecError:
    return SpecError([Problem(None, None, what, message)])


def _describe(exc: BaseException) -> str:
    """``Type(text)`` of an exception, whatever its ``__str__`` does (bounded, valid text)."""
    name = type(exc).__name__
    try:
        text = str(exc)
    except BaseException:  # an exception whose str() raises
        return name
    if not isinstance(text, str):
        return name
    text = text.encode("utf-8", "replace").decode("utf-8")[:500]
    return f"{name}({text})" if text else name


def pass_on_ctrl_c(exc: BaseException, received: list[int]) -> None:
    """Re-raise ``exc`` when it is a real Ctrl-C (a SIGINT arrived during the import).

    Args:
        exc: What the user's code raised.
        received: The count :func:`sigint_witness` yields.
    """
    if isinstance(exc, KeyboardInterrupt) and received[0]:
        raise exc


@contextmanager
def sigint_witness() -> Iterator[list[int]]:
    """Within the block, count the SIGINTs that arrive, then let the handler that was
    installed (Python's, which raises ``KeyboardInterrupt``, or the run's) act as it would.

    Only a Python-level handler is wrapped: under ``SIG_IGN`` or ``SIG_DFL`` no
    ``KeyboardInterrupt`` comes from a signal, so any is the module's. The previous
    handler is put back afterwards, also over one the module installed itself.

    Yields:
        A one-item list: how many SIGINTs arrived so far.
    """
    received = [0]
    if threading.current_thread() is not threading.main_thread():
        yield received
        return
    previous = signal.getsignal(signal.SIGINT)
    if not callable(previous):
        yield received
        return
    handler = previous

    def witness(signum: int, frame: FrameType | None) -> None:
        received[0] += 1
        handler(signum, frame)

    try:
        signal.signal(signal.SIGINT, witness)
    except ValueError:  # signals are owned elsewhere (an embedding interpreter)
        yield received
        return
    try:
        yield received
    finally:
        signal.signal(signal.SIGINT, previous)
