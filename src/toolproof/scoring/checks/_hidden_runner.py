"""The test runner of the ``hidden_tests`` check, run inside the sandbox (stdlib only).

Not imported by the harness: its text is copied into the clean directory of a hidden
test run and executed there as ``python3 -I -B RUNNER MODULE...`` (isolated mode: no
PYTHON* variables, no user site, no script directory on ``sys.path``). It reads a nonce
from standard input before any test module is imported, puts the workspace on
``sys.path`` after the standard library (a module of the workspace cannot shadow it),
loads each test module by path, runs the tests with :mod:`unittest` and tripwire tests
whose outcomes are known (one must pass, one fail, one error), and writes one line,
``MARK nonce JSON``, to a copy of standard output taken before the tests could touch it.
It then leaves with ``os._exit`` so that no ``atexit`` hook of the code under test runs.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import traceback
import unittest
from typing import Any

MARK = "@@toolproof-hidden-tests@@"


class _Recorder(unittest.TestResult):
    """Each test's outcome: pass, fail, error or skip (a failed subtest fails its test).

    The method names are unittest's (camelCase) API.
    """

    def __init__(self) -> None:
        super().__init__()
        self.outcomes: dict[str, str] = {}
        self.messages: dict[str, str] = {}

    def _set(self, test: Any, outcome: str, err: Any = None) -> None:
        test_id = test.id()
        if self.outcomes.get(test_id) in ("fail", "error") and outcome == "pass":
            return
        self.outcomes[test_id] = outcome
        if err is not None:
            text = "".join(traceback.format_exception_only(err[0], err[1])).strip()
            self.messages[test_id] = text[-400:]

    def addSuccess(self, test: Any) -> None:
        self._set(test, "pass")

    def addFailure(self, test: Any, err: Any) -> None:
        self._set(test, "fail", err)

    def addError(self, test: Any, err: Any) -> None:
        self._set(test, "error", err)

    def addSkip(self, test: Any, reason: str) -> None:
        self._set(test, "skip")

    def addExpectedFailure(self, test: Any, err: Any) -> None:
        self._set(test, "skip")

    def addUnexpectedSuccess(self, test: Any) -> None:
        self._set(test, "fail")

    def addSubTest(self, test: Any, subtest: Any, err: Any) -> None:
        if err is not None:
            self._set(test, "fail" if issubclass(err[0], test.failureException) else "error", err)


class _TripwireError(Exception):
    pass


def _tripwire(tag: str) -> type[unittest.TestCase]:
    def must_pass(self: unittest.TestCase) -> None:
        self.assertEqual(len(tag), len(tag))

    def must_fail(self: unittest.TestCase) -> None:
        self.assertEqual(len(tag), len(tag) + 1)

    def must_error(self: unittest.TestCase) -> None:
        raise _TripwireError(tag)

    body = {"test_a_" + tag: must_pass, "test_b_" + tag: must_fail, "test_c_" + tag: must_error}
    return type("Check_" + tag, (unittest.TestCase,), body)


def main() -> None:
    """Run the modules named on the command line; print the verdict line."""
    nonce = sys.stdin.readline().strip()
    out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    root = os.getcwd()
    # after the standard library (a workspace decimal.py must not shadow it), before site dirs
    site = [i for i, p in enumerate(sys.path) if p.endswith(("site-packages", "dist-packages"))]
    sys.path.insert(site[0] if site else len(sys.path), root)
    tag = nonce[:12]
    loader = unittest.TestLoader()
    suite = unittest.TestSuite([loader.loadTestsFromTestCase(_tripwire(tag + "x"))])
    import_errors: dict[str, str] = {}
    for rel in sys.argv[1:]:
        name = rel[:-3].replace("/", ".")
        try:
            spec = importlib.util.spec_from_file_location(name, os.path.join(root, rel))
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module
            spec.loader.exec_module(module)
            suite.addTests(loader.loadTestsFromModule(module))
        except BaseException as exc:  # a module that cannot import fails all its tests
            text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            import_errors[name] = text[-400:]
    suite.addTests(loader.loadTestsFromTestCase(_tripwire(tag + "y")))  # before and after
    recorder = _Recorder()
    try:
        suite.run(recorder)
    except BaseException as exc:  # SystemExit or KeyboardInterrupt from the code under test
        import_errors["<run>"] = f"the test run stopped: {type(exc).__name__}: {exc}"[-400:]
    payload = {
        "outcomes": recorder.outcomes,
        "messages": recorder.messages,
        "import_errors": import_errors,
        "tripwire": tag,
    }
    out.write(f"{MARK} {nonce} {json.dumps(payload, sort_keys=True)}\n")
    out.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
