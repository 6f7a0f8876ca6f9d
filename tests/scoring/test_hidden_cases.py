"""Hidden cases below the episode: the typed values, the observer's output read as hostile
bytes, one interpreter's crash confined to its case, and the hidden run looking like a
visible one (issue #30).

Every run here is real: the observer runs as ``python3 -c`` in the bwrap sandbox (and the
process backend where the test says so) on a small tree written for the test.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof.sandbox import get_backend
from toolproof.scoring.checks._hiddenrun import CaseRun, _read, run_cases
from toolproof.scoring.checks.hidden_tests import verdict
from toolproof.spec import SandboxSpec
from toolproof.spec.hidden_checks import HiddenCase, HiddenTestsCheck
from toolproof.spec.hidden_values import Raised, TypedSet, ValueFormError, decode, same
from toolproof.tools.toolkits.shell import backend_name

EXAMPLES = int(os.environ.get("TOOLPROOF_FUZZ_EXAMPLES", "40"))
PKG = "import os\n\ndef double(x):\n    return x * 2\n"


def check(
    *cases: dict[str, Any], setup: str = "import pkg\n", timeout_s: float = 20
) -> HiddenTestsCheck:
    return HiddenTestsCheck.model_validate(
        {"setup": setup, "fail_to_pass": list(cases), "timeout_s": timeout_s}
    )


def observe(spec: HiddenTestsCheck, package: str = PKG, backend: str | None = None) -> CaseRun:
    return run_cases(spec, {"pkg/__init__.py": package.encode()}, SandboxSpec(backend=backend))


def outcomes(spec: HiddenTestsCheck, run: CaseRun) -> dict[str, str | None]:
    return {c.id: verdict(c, run) for c in spec.cases()}


# -- typed values ---------------------------------------------------------------------------

VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**30), 10**30)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=20)
    | st.decimals(allow_nan=False, allow_infinity=False, places=3)
    | st.dates()
    | st.datetimes()
    | st.timedeltas(),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner, inner)
        | st.dictionaries(st.text(max_size=5), inner, max_size=3)
        | st.frozensets(st.integers(-50, 50) | st.text(max_size=3), max_size=4)
    ),
    max_leaves=12,
)


def _plain(value: Any) -> Any:
    """What the harness's decoded form of a Python value is (tuples as lists, sets typed)."""
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, frozenset | set):
        return TypedSet(tuple(_plain(v) for v in value))
    return value


@settings(max_examples=EXAMPLES, derandomize=True, deadline=None)
@given(st.lists(VALUES, min_size=1, max_size=6))
def test_what_the_code_returns_comes_back_as_the_same_data(values: list[Any]) -> None:
    """Any value of the supported types, returned in the sandbox, is read back equal to
    itself (a round trip through the observer's JSON and the harness's decoder)."""
    literal = repr(values).replace("inf", "float('inf')").replace("nan", "float('nan')")
    setup = "import datetime\nfrom decimal import Decimal\nVALUES = " + literal + "\n"
    spec = check(
        *({"id": f"v{n}", "expr": f"VALUES[{n}]", "expect": None} for n in range(len(values))),
        setup=setup,
    )
    run = run_cases(spec, {}, SandboxSpec(backend="process"))
    assert not run.problems, run.problems
    for n, value in enumerate(values):
        assert same(_plain(value), run.values[f"v{n}"]), (value, run.values[f"v{n}"])


def test_equal_is_strict_about_kinds() -> None:
    assert same(Decimal("1.50"), Decimal("1.5"))
    assert not same(Decimal("1.5"), 1.5) and not same(1, True) and not same("1", 1)
    assert same([1, 2], [1, 2]) and not same([1, 2], [2, 1])
    assert same(TypedSet((1, 2)), TypedSet((2, 1)))
    assert same(0.1 + 0.2, 0.3, "approx", 1e-9) and not same(0.1 + 0.2, 0.3)
    assert same("needle", "a needle here", "contains")
    assert not same(Raised("X", (), ""), Raised("X", (), ""))  # an exception equals nothing


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"$decimal": "abc"}, "not a decimal"),
        ({"$date": "2026-13-01"}, "ISO date"),
        ({"$nope": 1}, "unknown tag"),
        ({"$timedelta": [1, 2]}, "[days, seconds, microseconds]"),
        ({"a": 1, "$b": 2}, "use $map"),
    ],
)
def test_a_malformed_typed_value_is_refused_with_where_and_why(value: Any, message: str) -> None:
    with pytest.raises(ValueFormError, match=re.escape(message)):
        decode(value, "expect")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"id": "a", "expect": 1}, "exactly one of `expr` and `call`"),
        ({"id": "a", "expr": "1", "call": "a.b", "expect": 1}, "exactly one of `expr` and `call`"),
        ({"id": "a", "expr": "1"}, "exactly one of `expect` and `raises`"),
        ({"id": "a", "expr": "1", "expect": 1, "raises": "E"}, "exactly one of `expect`"),
        ({"id": "a b", "expr": "1", "expect": 1}, "letters, digits"),
        ({"id": "a", "call": "nodots", "expect": 1}, "dotted name"),
        ({"id": "a", "expr": "1", "expect": {"$decimal": "x"}}, "not a decimal"),
        ({"id": "a", "expr": "1", "expect": 1, "match": "m"}, "`match` goes with `raises`"),
    ],
)
def test_a_bad_case_is_refused_with_the_field_and_the_fix(
    fields: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        HiddenCase.model_validate(fields)


def test_two_cases_with_one_id_are_refused() -> None:
    with pytest.raises(ValueError, match="used twice"):
        check({"id": "a", "expr": "1", "expect": 1}, {"id": "a", "expr": "2", "expect": 2})


# -- the observer's output is agent bytes ----------------------------------------------------


@pytest.mark.parametrize(
    ("stdout", "problem"),
    [
        ("", "no observation"),
        ('{"case": "a", "value": 4}\n{"case": "a", "value": 4}\n', "reported twice"),
        ('{"case": "a", "value": 4\n', "no observation"),
        ('{"case": "a", "value": "' + "x" * 300_000 + '"}\n', "no observation"),
        ('{"case": "a", "value": {"$decimal": "zz"}}\n', "malformed"),
        ('{"case": "a", "value": "\\udcff"}\n', "no observation"),
        ('{"case": "a", "value": NaN}\n', "no observation"),
        ('{"case": "a", "too_big": true}\n', "too big"),
        ("\x00\xff garbage\n", "no observation"),
    ],
)
def test_missing_unparseable_oversized_or_repeated_output_fails_the_case(
    stdout: str, problem: str
) -> None:
    spec = check({"id": "a", "expr": "4", "expect": 4})
    run = CaseRun()
    _read(stdout, ["a"], run)
    why = verdict(spec.cases()[0], run)
    assert why is not None and problem in why, why


LINES = st.sampled_from(
    [
        '{"case": "a", "value": 4}',
        '{"case": "a", "value": 5}',
        '{"case": "a", "value": {"$decimal": "4"}}',
        '{"start": "a"}',
        '{"case": "b", "value": 4}',
        '{"case": "a"}',
        "4",
    ]
) | st.text(max_size=30)


@settings(max_examples=EXAMPLES * 5, derandomize=True, deadline=None)
@given(st.lists(LINES, max_size=6))
def test_a_case_passes_only_on_one_line_that_carries_its_right_value(lines: list[str]) -> None:
    """Whatever the code prints, a case passes exactly when one line reports it, with the
    right value: a repeat, a wrong value or none fails it."""
    spec = check({"id": "a", "expr": "4", "expect": 4})
    run = CaseRun()
    _read("\n".join(lines), ["a"], run)
    reports = [line for line in lines if line.startswith('{"case": "a", "v')]
    assert (verdict(spec.cases()[0], run) is None) == (reports == ['{"case": "a", "value": 4}'])


# -- real runs ------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["bwrap", "process"])
def test_values_exceptions_and_calls_are_observed(backend: str) -> None:
    spec = check(
        {"id": "expr", "expr": "pkg.double(21)", "expect": 42},
        {
            "id": "call",
            "call": "pkg.double",
            "args": [{"$decimal": "1.25"}],
            "expect": {"$decimal": "2.50"},
        },
        {
            "id": "date",
            "expr": "__import__('datetime').date(2026, 1, 30)",
            "expect": {"$date": "2026-01-30"},
        },
        {"id": "raises", "expr": "pkg.double(None)", "raises": "TypeError", "match": "unsupported"},
        {"id": "wrong", "expr": "pkg.double(2)", "expect": 5},
    )
    found = outcomes(spec, observe(spec, backend=backend))
    assert {k: v is None for k, v in found.items()} == {
        "expr": True,
        "call": True,
        "date": True,
        "raises": True,
        "wrong": False,
    }, found
    assert found["wrong"] == "expected 5, got 4"


def test_an_exit_or_a_crash_fails_only_the_case_it_happens_in() -> None:
    package = (
        PKG
        + "def leave(code):\n    os._exit(code)\n\ndef forever():\n    while True:\n        pass\n"
    )
    spec = check(
        {"id": "before", "expr": "pkg.double(1)", "expect": 2},
        {"id": "exits", "expr": "pkg.leave(0)", "expect": None},
        {"id": "after_exit", "expr": "pkg.double(2)", "expect": 4},
        {"id": "system_exit", "expr": "exit(3)", "raises": "SystemExit"},
        {"id": "loops", "expr": "pkg.forever()", "expect": None},
        {"id": "after_loop", "expr": "pkg.double(3)", "expect": 6},
        timeout_s=6,
    )
    run = observe(spec, package)
    found = outcomes(spec, run)
    assert found["before"] is None and found["after_exit"] is None and found["system_exit"] is None
    assert "ended in this case (exit code 0)" in str(found["exits"])
    assert "wall time" in str(found["loops"]) or "cpu" in str(found["loops"])
    assert found["after_loop"] is None  # the loop had half the time; the rest ran after it
    assert run.launches == 3


def test_a_patch_made_in_one_interpreter_does_not_reach_the_next() -> None:
    """A case that rewrites the package and exits: the cases after it run on a new copy."""
    package = PKG + (
        "def vandal():\n"
        "    with open(__file__, 'a') as f:\n"
        "        f.write('\\ndef double(x):\\n    return 0\\n')\n"
        "    os._exit(0)\n"
    )
    spec = check(
        {"id": "vandal", "expr": "pkg.vandal()", "expect": None},
        {"id": "after", "expr": "pkg.double(5)", "expect": 10},
    )
    assert outcomes(spec, observe(spec, package))["after"] is None


def test_a_setup_that_fails_fails_every_case_even_one_expecting_that_error() -> None:
    spec = check({"id": "a", "expr": "1", "raises": "ImportError"}, setup="import nothing_here\n")
    found = outcomes(spec, observe(spec))
    assert "the setup failed: ModuleNotFoundError" in str(found["a"])


def test_the_hidden_run_looks_like_a_command_of_the_agent(tmp_path: Path) -> None:
    """What the code under test can see of its process is what it sees in one of the
    agent's own ``python3 -c`` commands: the working directory, argv, the environment's
    names; and the workspace holds the package, no runner file, no expected value."""
    probe = (
        "import os, sys\n"
        "def seen():\n"
        "    return [os.getcwd(), sys.argv, sorted(os.environ)]\n"
        "def listing():\n"
        "    return sorted(os.listdir('.'))\n"
    )
    spec = check(
        {"id": "seen", "expr": "pkg.seen()", "expect": None},
        {"id": "listing", "expr": "pkg.listing()", "expect": None},
    )
    run = observe(spec, PKG + probe)
    settings = SandboxSpec()
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text(PKG + probe)
    command = "python3 -c 'import json, pkg; print(json.dumps(pkg.seen()))'"
    with get_backend(backend_name(settings))(tmp_path) as box:
        visible = json.loads(box.exec(command, env=settings.env).stdout)
    assert run.values["seen"] == visible
    assert run.values["seen"][:2] == ["/workspace", ["-c"]]
    assert run.values["listing"] == ["pkg"]


def test_the_job_holds_no_expected_value() -> None:
    spec = check({"id": "a", "expr": "pkg.double(21)", "expect": 12345678})
    assert "12345678" not in repr([c.job() for c in spec.cases()])


def test_a_date_and_a_datetime_are_told_apart() -> None:
    assert not same(dt.date(2026, 1, 1), dt.datetime(2026, 1, 1))
    assert same(decode({"$timedelta": [1, 0, 0]}), dt.timedelta(days=1))


def test_a_workspace_module_cannot_shadow_the_standard_library() -> None:
    """A workspace ``json.py`` or ``decimal.py`` that would kill the interpreter is not the
    one the observer or the cases import: the workspace is on ``sys.path`` after the stdlib."""
    spec = check(
        {"id": "a", "expr": "pkg.double(2)", "expect": 4},
        {"id": "d", "expr": "__import__('decimal').Decimal('1.5')", "expect": {"$decimal": "1.5"}},
    )
    tree = {
        "json.py": b"import os\nos._exit(9)\n",
        "decimal.py": b"import os\nos._exit(8)\n",
        "pkg/__init__.py": PKG.encode(),
    }
    run = run_cases(spec, tree, SandboxSpec())
    assert outcomes(spec, run) == {"a": None, "d": None}, run
