"""Reading linter output: the harness's JSON reports, and counts in whatever an agent ran."""

from __future__ import annotations

import json

import pytest

from toolproof.envs import count_in_output, harness_argv, parse_report

RUFF_TEXT = (
    "pkg/a.py:1:8: F401 [*] `os` imported but unused\n"
    "pkg/b.py:3:1: E711 Comparison to `None` should be `cond is None`\n"
    "Found 2 errors.\n[*] 1 fixable with the `--fix` option.\n"
)
ESLINT_STYLISH = (
    "\n/workspace/src/a.tsx\n  1:10  error  'x' is defined but never used  no-unused-vars\n"
    "  4:3   warning  React Hook useEffect has a missing dependency  react-hooks/exhaustive-deps\n"
    "\n✖ 3 problems (2 errors, 1 warning)\n  1 error and 0 warnings potentially fixable.\n"
)
NPM_HEADER = "\n> @acme/ui@0.8.2 lint\n> eslint .\n\n"


@pytest.mark.parametrize(
    ("command", "exit_code", "stdout", "expected"),
    [
        ("ruff check .", 1, RUFF_TEXT, 2),
        ("sh scripts/lint.sh", 1, RUFF_TEXT, 2),
        ("ruff check --fix .", 1, "Found 5 errors (4 fixed, 1 remaining).\n", 1),
        ("ruff check --fix .", 0, "Found 3 errors (3 fixed, 0 remaining).\n", 0),
        ("ruff check .", 0, "All checks passed!\n", 0),
        ("ruff check --output-format json .", 1, '[{"code": "F401", "filename": "/w/a.py"}]', 1),
        ("npm run lint", 1, NPM_HEADER + ESLINT_STYLISH, 3),
        ("npx eslint src", 1, ESLINT_STYLISH, 3),
        ("npm run lint", 0, NPM_HEADER, 0),
        ("eslint .", 0, "", 0),
        (
            "eslint -f json .",
            1,
            json.dumps([{"filePath": "/w/a.ts", "errorCount": 2, "warningCount": 1}]),
            3,
        ),
        ("cat scripts/lint.sh", 0, "#!/bin/sh\nexec ruff check .\n", None),
        ("ls -la", 0, "total 4\n", None),
        ("npm run lint", 2, NPM_HEADER + "Oops! Something went wrong! :(\n", None),
        ("npm run lint", None, "", None),
    ],
)
def test_counts_in_what_an_agent_ran(
    command: str, exit_code: int | None, stdout: str, expected: int | None
) -> None:
    assert count_in_output(command, exit_code, stdout, "") == expected


def test_the_harness_ignores_suppressions_and_names_the_config() -> None:
    ruff = harness_argv("ruff", "pyproject.toml", ["."])
    assert ruff[:2] == ["ruff", "check"]
    assert {"--ignore-noqa", "--no-respect-gitignore", "--no-cache"} <= set(ruff)
    assert ruff[ruff.index("--config") + 1] == "pyproject.toml"
    eslint = harness_argv("eslint", "eslint.config.js", ["src"])
    assert {"--no-inline-config", "--max-warnings"} <= set(eslint)
    assert eslint[-1] == "src" and eslint[eslint.index("--format") + 1] == "json"


def test_a_ruff_report_counts_rules_and_files() -> None:
    items = [
        {"code": "F401", "filename": "/workspace/pkg/a.py"},
        {"code": "F401", "filename": "/workspace/pkg/b.py"},
        {"code": None, "filename": "/workspace/pkg/b.py"},
    ]
    report = parse_report("ruff", 1, json.dumps(items), "")
    assert report.errors == 3 and not report.clean
    assert report.by_rule == {"F401": 2, "syntax-error": 1}
    assert report.by_file == {"pkg/a.py": 1, "pkg/b.py": 2}
    assert parse_report("ruff", 0, "[]", "").clean


def test_an_eslint_report_counts_messages_and_parse_failures() -> None:
    items = [
        {"filePath": "/workspace/src/a.tsx", "messages": [{"ruleId": "eqeqeq", "severity": 2}]},
        {"filePath": "/workspace/src/b.ts", "messages": [{"ruleId": None, "fatal": True}]},
        {"filePath": "/workspace/src/c.ts", "messages": []},
    ]
    report = parse_report("eslint", 1, json.dumps(items), "")
    assert report.errors == 2
    assert report.by_rule == {"eqeqeq": 1, "syntax-error": 1}
    assert report.by_file == {"src/a.tsx": 1, "src/b.ts": 1}


def test_a_linter_that_fails_to_run_has_no_count() -> None:
    report = parse_report("eslint", 2, "", "Oops! Something went wrong! :(\nbad config")
    assert report.errors is None and "exit 2" in report.detail and "bad config" in report.detail
    assert parse_report("ruff", 1, "error: TOML parse error", "").errors is None
