"""scripts/gen_hard_suite.py: the hard tier's generated tasks are its families rendered.

The checked-in task files are byte for byte what the script writes from
``scripts/hard_families/`` (so the suite's digest is what the families say), the script
writes into any folder and removes only files it generated, and a malformed family or
template is refused with an error naming the file, the field and the fix, never a traceback
from deep inside YAML, JSON Schema or Jinja.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof.spec import builtin_suites_dir

SCRIPT = Path(__file__).parents[2] / "scripts" / "gen_hard_suite.py"
TASKS = builtin_suites_dir() / "hard" / "tasks"
EXAMPLES = int(os.environ.get("TOOLPROOF_FUZZ_EXAMPLES", "25"))


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_hard_suite", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen = _script()


@pytest.fixture(scope="module")
def generated() -> dict[Path, str]:
    return dict(gen.generate())


def test_the_checked_in_tasks_are_what_the_families_render(generated: dict[Path, str]) -> None:
    assert gen.differences(generated, TASKS) == []
    assert len(generated) == 84
    assert {p.parent.name for p in generated} == {"", "catalog-sync", "expense-claims"}


def test_every_generated_file_is_named_for_its_task(generated: dict[Path, str]) -> None:
    for name, text in generated.items():
        assert text.startswith(gen.GENERATED), name
        assert yaml.safe_load(text)["id"] == name.stem


def test_it_writes_a_folder_and_removes_only_what_it_generated(tmp_path: Path) -> None:
    families = _copy(tmp_path, "pay-invoices", "catalog-sync")
    tasks = tmp_path / "tasks"
    (tasks / "repo-x").mkdir(parents=True)
    hand = tasks / "repo-x" / "repo-x-one.yaml"
    hand.write_text("# A hand-written task.\nid: repo-x-one\n", encoding="utf-8")
    stale = tasks / "hard-pay-invoices-99.yaml"
    stale.write_text(gen.GENERATED + "suite.py: edit the script.\nid: old\n", encoding="utf-8")
    args = ["--families", str(families), "--tasks", str(tasks)]
    assert gen.main([*args, "--check"]) == 1  # missing and stale files
    assert gen.main(args) == 0
    assert not stale.exists() and hand.exists()
    written = sorted(p.relative_to(tasks) for p in tasks.rglob("hard-*.yaml"))
    assert len(written) == 24
    for name in written:
        assert (tasks / name).read_bytes() == (TASKS / name).read_bytes(), name
    assert gen.main([*args, "--check"]) == 0
    edited = tasks / "catalog-sync" / "hard-catalog-sync-02.yaml"
    edited.write_text(edited.read_text(encoding="utf-8") + "# edited by hand\n", encoding="utf-8")
    assert gen.main([*args, "--check"]) == 1
    assert gen.differences(gen.generate(families), tasks) == [
        "differs: catalog-sync/hard-catalog-sync-02.yaml"
    ]


def test_a_flat_reference_is_grouped_into_turns() -> None:
    calls: list[dict[str, Any]] = [{"tool": f"t{i}"} for i in range(6)]
    calls[1]["_ends_turn"] = True
    turns = gen.turns(calls)
    assert [[c["tool"] for c in turn] for turn in turns] == [
        ["t0", "t1"],
        ["t2", "t3", "t4", "t5"],
    ]
    assert all("_ends_turn" not in c for turn in turns for c in turn)


# --- malformed families: each is refused naming the file, the field and the fix ---------


def _copy(tmp_path: Path, *families: str) -> Path:
    """A families folder holding real families (and their templates), to spoil."""
    root = tmp_path / "families"
    root.mkdir()
    for family in families or ["pay-invoices"]:
        for name in [f"{family}.yaml", f"{family}.task.j2"]:
            shutil.copy(gen.FAMILIES / name, root / name)
    return root


def _edit_family(root: Path, family: str, edit: Callable[[dict[str, Any]], None]) -> None:
    path = root / f"{family}.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")


def _refused(root: Path) -> Any:
    with pytest.raises(gen.FamilyError) as info:
        gen.generate(root)
    assert "(fix: " in str(info.value)
    return info.value


def _variant(**changes: Any) -> Callable[[dict[str, Any]], None]:
    def edit(data: dict[str, Any]) -> None:
        data["variants"][0].update(changes)

    return edit


@pytest.mark.parametrize(
    ("edit", "field", "words"),
    [
        (_variant(suppliers="Acme Paper"), "variants[0].suppliers", "is not of type 'array'"),
        (_variant(fails_once="INV-2"), "variants[0].fails_once", "does not match"),
        (_variant(bulk_tool="yes"), "variants[0].bulk_tool", "is not of type 'boolean'"),
        (_variant(colour="red"), "variants[0]", "colour"),
        (_variant(over_limit=["INV-2999"]), "variants[0].over_limit", "not an invoice"),
        (_variant(fails_once="INV-2104"), "variants[0].fails_once", "names no invoice"),
        (lambda d: d["variants"].append(dict(d["variants"][0])), "variants[16].n", "twice"),
        (lambda d: d.pop("variants"), "(top level)", "'variants' is a required property"),
        (lambda d: d.update(varients=[]), "(top level)", "varients"),
        (lambda d: d.update(family="pay"), "family", "not the file's name"),
        (lambda d: d.update(template="../../etc/passwd"), "template", "does not match"),
        (lambda d: d.update(template="missing.task.j2"), "template", "not beside the family"),
        (lambda d: d.update(header="# by hand\n"), "header", "does not match"),
        (lambda d: d["variant_schema"].update(type=5), "variant_schema.type", "is not valid"),
        (lambda d: d.update(variants=[]), "variants", "should be non-empty"),
    ],
)
def test_a_malformed_family_is_refused_by_field(
    tmp_path: Path, edit: Callable[[dict[str, Any]], None], field: str, words: str
) -> None:
    root = _copy(tmp_path)
    _edit_family(root, "pay-invoices", edit)
    error = _refused(root)
    assert error.path == root / "pay-invoices.yaml"
    assert error.field == field
    assert words in str(error)


def test_an_unquoted_date_is_refused_not_rendered_as_a_date(tmp_path: Path) -> None:
    root = _copy(tmp_path, "meeting-requests")
    path = root / "meeting-requests.yaml"
    text = path.read_text(encoding="utf-8")
    path.write_text(re.sub(r"day: '(2026-03-\d\d)'", r"day: \1", text, count=1), encoding="utf-8")
    error = _refused(root)
    assert error.field == "variants[0].requests[0].day"
    assert "is not of type 'string'" in error.problem


@pytest.mark.parametrize(
    ("content", "field", "words"),
    [
        (b"family: [pay-invoices\n", "(file)", "not YAML (line 2"),
        (b"- just\n- a list\n", "(top level)", "is not of type 'object'"),
        (b"", "(top level)", "None is not of type 'object'"),
        (b"family: \xff\xfe\n", "(file)", "cannot be read"),
        (
            b"family: a\nvariants: []\nfamily: b\n",
            "(file)",
            "line 3, column 1): 'family' given twice",
        ),
    ],
)
def test_a_family_that_is_not_a_yaml_mapping_is_refused(
    tmp_path: Path, content: bytes, field: str, words: str
) -> None:
    root = _copy(tmp_path)
    (root / "pay-invoices.yaml").write_bytes(content)
    error = _refused(root)
    assert (error.field, error.path) == (field, root / "pay-invoices.yaml")
    assert words in str(error)


@pytest.mark.parametrize(
    ("old", "new", "field", "words"),
    [
        (
            "id: hard-pay-invoices-",
            "id: [hard-pay-invoices-",
            "(rendered for variants[0])",
            "not YAML",
        ),
        ("% n =}", "% nn =}", "variants[0]", "'nn' is undefined"),
        ("{% endfor %}", "{% endfro %}", "variants[0]", "line"),
        ("max_steps: {= ", "max_steps: {reference_plus: x} #", "limits.max_steps", "no count"),
        ("solution:\n  calls:", "solution:\n  calls: 3\n  old:", "solution.calls", "flat list"),
    ],
)
def test_a_broken_template_is_refused_naming_its_line_or_field(
    tmp_path: Path, old: str, new: str, field: str, words: str
) -> None:
    root = _copy(tmp_path)
    template = root / "pay-invoices.task.j2"
    text = template.read_text(encoding="utf-8")
    assert old in text
    template.write_text(text.replace(old, new, 1), encoding="utf-8")
    error = _refused(root)
    assert error.field == field
    assert words in str(error)


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 50)
    | st.floats(allow_nan=False)
    | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)
_FAMILIES = ["pay-invoices", "meeting-requests", "ticket-triage", "sql-dunning", "catalog-sync"]


@settings(max_examples=EXAMPLES, derandomize=True, deadline=None)
@given(family=st.sampled_from([*_FAMILIES, "expense-claims"]), data=st.data())
def test_any_spoiled_variant_renders_or_is_refused_never_crashes(
    family: str, data: st.DataObject
) -> None:
    """Whatever value replaces one field of a variant (or one of its items), the script
    either writes a task or raises a FamilyError naming the family file."""
    path = gen.FAMILIES / f"{family}.yaml"
    family_data = yaml.safe_load(path.read_text(encoding="utf-8"))
    variant = family_data["variants"][0]
    key = data.draw(st.sampled_from(sorted(variant)))
    value = data.draw(_JSON)
    if isinstance(variant[key], list) and variant[key] and data.draw(st.booleans()):
        variant[key][data.draw(st.integers(0, len(variant[key]) - 1))] = value
    else:
        variant[key] = value
    family_data["variants"] = [variant]
    env = gen._environment(gen.FAMILIES)
    try:
        gen._validate(path, variant, family_data["variant_schema"], ["variants", 0])
        task = gen.render(path, family_data, 0, env)
    except gen.FamilyError as error:
        assert error.path == path
        assert error.field.startswith("variants[0]")
    else:
        assert isinstance(task["id"], str) and task["solution"]["calls"]
