"""The shipped JSON Schema of the task format: generated from the models, true to the loader.

Regenerate the shipped files with::

    toolproof schema > src/toolproof/schema/task.schema.json
    toolproof schema --suite > src/toolproof/schema/suite.schema.json
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

import toolproof
from toolproof.spec import builtin_suites_dir, suite_schema, task_schema
from toolproof.spec._yamlsrc import load_document
from toolproof_helpers import FIXTURES, make_task

SHIPPED = Path(toolproof.__file__).parent / "schema"
TASK_FILES = sorted(
    p for p in builtin_suites_dir().glob("*/tasks/**/*") if p.suffix in (".yaml", ".yml", ".json")
)
SUITE_FILES = sorted(builtin_suites_dir().glob("*/suite.yaml"))


@functools.cache
def _task_schema_once() -> dict[str, Any]:
    """The task schema, generated once for the ~600 shipped files (each generation: ~25 ms)."""
    return task_schema()


def _errors(schema: dict[str, Any], document: Any) -> list[str]:
    validator = Draft202012Validator(schema)
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(document)]


def test_schemas_are_valid_draft_2020_12() -> None:
    Draft202012Validator.check_schema(task_schema())
    Draft202012Validator.check_schema(suite_schema())


@pytest.mark.parametrize(
    "path", TASK_FILES, ids=[p.relative_to(builtin_suites_dir()).as_posix() for p in TASK_FILES]
)
def test_every_shipped_task_file_validates(path: Path) -> None:
    document, _ = load_document(path)
    assert _errors(_task_schema_once(), document) == []


@pytest.mark.parametrize("path", SUITE_FILES, ids=[p.parent.name for p in SUITE_FILES])
def test_every_shipped_suite_yaml_validates(path: Path) -> None:
    assert _errors(suite_schema(), yaml.safe_load(path.read_text())) == []


def test_the_sample_fixtures_validate() -> None:
    for path in (FIXTURES / "tasks").iterdir():
        assert _errors(task_schema(), yaml.safe_load(path.read_text())) == [], path.name


def test_templates_stand_for_typed_values_but_not_for_nonsense() -> None:
    task = make_task(
        difficulty="{{ level }}",
        category="{{ situation }}",
        limits={"max_steps": "{{ steps }}"},
        success=[
            {"kind": "output", "number": "{{ total }}", "tolerance": "{{ 0.5 }}"},
            {"kind": "output", "any_of": "{{ names if known else ['unknown'] }}"},
        ],
        faults=[{"tool": "get_stock", "calls": ["{{ n }}"]}],
        world={"records": "{{ initial }}"},
    )
    assert _errors(task_schema(), task) == []
    for bad in (
        make_task(difficulty="hard"),
        make_task(success=[{"kind": "output", "number": "seven"}]),
        make_task(success=[{"kind": "output", "any_of": "not a template"}]),
        make_task(world="{{ whole_world }}"),  # whole models stay strict
        make_task(colour="red"),
        make_task(tools=None),
    ):
        assert _errors(task_schema(), bad), bad


def test_the_schema_accepts_what_the_loader_accepts(tmp_path: Path) -> None:
    from toolproof.spec import load_task
    from toolproof_helpers import write_yaml

    task = make_task(
        params={"names": {"value": ["7", "seven"]}, "steps": {"int": [3, 6]}},
        limits={"max_steps": "{{ steps }}"},
        success=[{"kind": "output", "any_of": "{{ names }}"}],
    )
    load_task(write_yaml(tmp_path / "stock.yaml", task))
    assert _errors(task_schema(), task) == []


@pytest.mark.parametrize(
    "path", TASK_FILES, ids=[p.relative_to(builtin_suites_dir()).as_posix() for p in TASK_FILES]
)
def test_shipped_task_files_parse_the_same_without_libyaml(path: Path) -> None:
    # toolproof uses libyaml when PyYAML has it, else pure Python: a task must mean the
    # same to both, or a suite loads on one machine and not on another.
    document, _ = load_document(path)
    try:
        pure = yaml.safe_load(path.read_text(encoding="utf-8"))  # no libyaml
    except yaml.YAMLError as exc:
        pytest.fail(f"{path} is not valid YAML without libyaml: {exc}")
    assert pure == document


def test_params_are_not_templates() -> None:
    # The loader validates params as written; the schema must not promise otherwise.
    assert _errors(task_schema(), make_task(params={"a": {"int": [1, 5]}})) == []
    assert _errors(task_schema(), make_task(params={"a": {"int": ["{{ b }}", 5]}}))


def test_the_schema_catches_what_the_loader_refuses() -> None:
    document = yaml.safe_load((FIXTURES / "broken" / "unknown-field.yaml").read_text())
    assert any("colour" in e for e in _errors(task_schema(), document))


def test_fields_carry_descriptions_for_editors() -> None:
    schema = task_schema()
    assert schema["$id"].startswith("https://")
    for name, prop in schema["properties"].items():
        assert prop.get("description"), name


@pytest.mark.parametrize(
    ("name", "make"), [("task.schema.json", task_schema), ("suite.schema.json", suite_schema)]
)
def test_shipped_schema_files_equal_the_generated_ones(name: str, make: Any) -> None:
    shipped = SHIPPED / name
    expected = json.dumps(make(), indent=2, sort_keys=True) + "\n"
    assert shipped.read_text(encoding="utf-8") == expected, (
        f"{shipped} is stale; regenerate it with "
        f"`toolproof schema{' --suite' if name.startswith('suite') else ''} > {shipped}`"
    )


def test_suite_yaml_points_editors_at_the_shipped_schema() -> None:
    for path in SUITE_FILES:
        first = path.read_text().splitlines()[0]
        if "$schema=" in first:
            target = (path.parent / first.split("$schema=", 1)[1].strip()).resolve()
            assert target == (SHIPPED / "suite.schema.json").resolve()
