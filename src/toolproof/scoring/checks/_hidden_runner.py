"""The observer of the ``hidden_tests`` check, run inside the sandbox (stdlib only).

Not imported by the harness: its text is run as ``python3 -c TEXT`` in a clean copy of
the workspace, with the job on standard input: ``{"setup": CODE, "cases": [{"id", "expr"}
or {"id", "call", "args", "kwargs"}...]}``. It holds no expected value and judges nothing:
for each case it writes one line of JSON, ``{"case": ID, "value": TYPED}``, with the value
the code returned or the exception it raised, in the typed form of
``toolproof.spec.hidden_values`` (``{"$decimal": "1.50"}``, ``{"$raised": {...}}``...),
preceded by ``{"start": ID}`` so the harness can tell which case a crash belongs to.
Whatever the code under test does to this process (patches, exits, forged lines) can
only change the values it reports about itself; the harness compares them.
"""

import sys

# before any other import: no workspace module may stand in for the standard library's
sys.path[:] = [p for p in sys.path if p not in ("", ".")]

import contextlib  # noqa: E402
import datetime  # noqa: E402
import decimal  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
from typing import Any  # noqa: E402

_MAX_LINE = 200_000
_MAX_ITEMS = 20_000


class _TooBig(Exception):
    pass


def _typed(value: Any, budget: list[int]) -> Any:
    """``value`` as typed JSON (data only: never ``repr`` of an object)."""
    budget[0] -= 1
    if budget[0] < 0:
        raise _TooBig
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if math.isfinite(value):
            return float(value)
        return {"$float": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, decimal.Decimal):
        return {"$decimal": decimal.Decimal.__str__(value)}
    if isinstance(value, datetime.datetime):
        return {"$datetime": datetime.datetime.isoformat(value)}
    if isinstance(value, datetime.date):
        return {"$date": datetime.date.isoformat(value)}
    if isinstance(value, datetime.time):
        return {"$time": datetime.time.isoformat(value)}
    if isinstance(value, datetime.timedelta):
        return {"$timedelta": [value.days, value.seconds, value.microseconds]}
    if isinstance(value, list | tuple):
        return [_typed(v, budget) for v in list(value)]
    if isinstance(value, dict):
        pairs = [(k, v) for k, v in dict.items(value)]
        if all(isinstance(k, str) and not k.startswith("$") for k, _ in pairs):
            return {str.__str__(k): _typed(v, budget) for k, v in pairs}
        return {"$map": [[_typed(k, budget), _typed(v, budget)] for k, v in pairs]}
    if isinstance(value, set | frozenset):
        items = [_typed(v, budget) for v in list(value)]
        return {"$set": sorted(items, key=lambda i: json.dumps(i, sort_keys=True))}
    if isinstance(value, bytes | bytearray):
        return {"$bytes": bytes(value).hex()}
    return {"$object": type(value).__qualname__[:200]}


def _raised(exc: BaseException) -> dict[str, Any]:
    names = [c.__name__ for c in type(exc).__mro__][:40]
    try:
        message = str(exc)[:2000]
    except BaseException:  # a __str__ that raises: the type alone
        message = ""
    return {"$raised": {"type": names[0], "bases": names[1:], "message": message}}


def capture(function: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """Call ``function`` and return what it returned and printed, and its exit status:
    ``{"returned": ..., "stdout": ..., "stderr": ..., "exit": CODE or None}`` (for CLIs)."""
    out, err = io.StringIO(), io.StringIO()
    code: Any = None
    returned: Any = None
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            returned = function(*args, **kwargs)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) or exc.code is None else 1
            if exc.code is None:
                code = 0
    return {"returned": returned, "stdout": out.getvalue(), "stderr": err.getvalue(), "exit": code}


def _arg(value: Any) -> Any:
    """A typed JSON argument as a Python value (the forms a case's ``args`` may use)."""
    if isinstance(value, list):
        return [_arg(v) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        ((tag, body),) = value.items()
        simple: dict[str, Any] = {
            "$decimal": lambda b: decimal.Decimal(str(b)),
            "$float": float,
            "$date": datetime.date.fromisoformat,
            "$datetime": datetime.datetime.fromisoformat,
            "$time": datetime.time.fromisoformat,
            "$timedelta": lambda b: datetime.timedelta(days=b[0], seconds=b[1], microseconds=b[2]),
            "$bytes": bytes.fromhex,
            "$set": lambda b: {_hashable(_arg(i)) for i in b},
            "$map": lambda b: {_hashable(_arg(k)): _arg(v) for k, v in b},
        }
        if tag in simple:
            return simple[tag](body)
    return {k: _arg(v) for k, v in value.items()}


def _hashable(value: Any) -> Any:
    return tuple(_hashable(v) for v in value) if isinstance(value, list) else value


def _resolve(dotted: str) -> Any:
    import importlib

    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            target = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for name in parts[cut:]:
            target = getattr(target, name)
        return target
    raise ModuleNotFoundError(f"no module for {dotted!r}")


def main() -> None:
    """Read the job, run the setup and each case, write one line per case."""
    job = json.loads(sys.stdin.buffer.read().decode("utf-8"))
    sys.stdin.close()
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)  # what the code under test prints goes to standard error
    sys.stdout = sys.stderr
    root = os.getcwd()
    # the workspace after the standard library (a workspace json.py must not shadow it)
    sys.path[:] = [p for p in sys.path if p not in ("", ".", root)]
    site = [i for i, p in enumerate(sys.path) if p.endswith(("site-packages", "dist-packages"))]
    sys.path.insert(site[0] if site else len(sys.path), root)

    def write(record: dict[str, Any]) -> None:
        line = json.dumps(record, allow_nan=False)  # ASCII: no line separator inside
        if len(line) > _MAX_LINE:
            line = json.dumps({"case": record.get("case"), "too_big": len(line)})
        channel.write(line + "\n")
        channel.flush()

    namespace: dict[str, Any] = {"__name__": "__hidden__", "capture": capture}
    setup_error = None
    try:
        exec(compile(job.get("setup") or "", "<setup>", "exec"), namespace)
    except BaseException as exc:  # the package does not import: every case says so
        setup_error = _raised(exc)
    for case in job["cases"]:
        write({"start": case["id"]})
        if setup_error is not None:
            write({"case": case["id"], "setup_error": setup_error})
            continue
        try:
            if "expr" in case:
                value = eval(compile(case["expr"], "<case>", "eval"), namespace)
            else:
                args = [_arg(a) for a in case.get("args", [])]
                kwargs = {k: _arg(v) for k, v in case.get("kwargs", {}).items()}
                value = _resolve(case["call"])(*args, **kwargs)
            try:
                typed = _typed(value, [_MAX_ITEMS])
            except (_TooBig, RecursionError):
                write({"case": case["id"], "too_big": True})
                continue
        except BaseException as exc:  # SystemExit too: it is the code's answer
            typed = _raised(exc)
        write({"case": case["id"], "value": typed})
    channel.close()
    os._exit(0)


if __name__ == "__main__":
    main()
