"""``load_suite(tasks=...)``, what ``run --task`` loads: only the files that may hold a
selected task, another task's broken file no obstacle, the selected task's problems the same
as a full load gives; a file's id is read without parsing only when that is certain."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof.spec import SpecError, load_suite
from toolproof.spec.loader import quick_task_id
from toolproof_helpers import CliResult, make_task, write_yaml

EXAMPLES = int(os.environ.get("TOOLPROOF_FUZZ_EXAMPLES", "200"))
Invoke = Callable[..., CliResult]


def _broken(root: Path, name: str = "bad") -> Path:
    return write_yaml(root / "tasks" / f"{name}.yaml", make_task(id=name, difficulty="hard"))


def test_selecting_one_task_loads_only_it_and_a_broken_other_file_is_no_obstacle(
    suite_dir: Callable[..., Path],
) -> None:
    root = suite_dir([make_task(id="good"), make_task(id="other")])
    _broken(root)
    suite = load_suite(root, tasks=["good"])
    assert [t.id for t in suite.tasks] == ["good"]
    assert suite.digest == load_suite(root, tasks=["other"]).digest  # of every file
    with pytest.raises(SpecError, match=r"bad\.yaml"):
        load_suite(root)  # every file: the broken one is reported, as ever
    assert [t.id for t in load_suite(root, tasks=["o*", "go?d"]).tasks] == ["good", "other"]


def test_a_selected_broken_task_gets_the_problems_a_full_load_gives(
    suite_dir: Callable[..., Path],
) -> None:
    root = suite_dir([make_task(id="good")])
    bad = _broken(root)
    with pytest.raises(SpecError) as whole:
        load_suite(root)
    with pytest.raises(SpecError) as selected:
        load_suite(root, tasks=["bad"])
    assert selected.value.problems == [p for p in whole.value.problems if p.file == bad]
    assert selected.value.problems


def test_a_file_whose_id_is_not_certain_is_loaded_to_know_it(
    suite_dir: Callable[..., Path],
) -> None:
    root = suite_dir([make_task(id="good")])
    task = yaml.safe_dump(make_task(id="flowing"), default_flow_style=True)  # {id: ..., ...}
    (root / "tasks" / "flowing.yaml").write_text(task)
    assert quick_task_id(root / "tasks" / "flowing.yaml") is None
    assert [t.id for t in load_suite(root, tasks=["flowing"]).tasks] == ["flowing"]
    assert [t.id for t in load_suite(root, tasks=["good"]).tasks] == ["good"]
    (root / "tasks" / "flowing.yaml").write_text("{id: flowing, [broken")  # unsure and broken
    with pytest.raises(SpecError, match=r"flowing\.yaml"):
        load_suite(root, tasks=["good"])  # it might be the selected task: reported


def test_a_link_out_of_the_suite_is_refused_before_its_id_is_read(
    suite_dir: Callable[..., Path], tmp_path: Path
) -> None:
    root = suite_dir([make_task(id="good")])
    outside = write_yaml(tmp_path / "outside.yaml", make_task(id="elsewhere"))
    os.symlink(outside, root / "tasks" / "elsewhere.yaml")
    with pytest.raises(SpecError, match="outside the suite"):
        load_suite(root, tasks=["good"])  # not selected by its id, refused all the same


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("id: stock\n", "stock"),
        ("id: 'stock'\n", "stock"),
        ('id: "stock-2.b_c"  # a comment\n', "stock-2.b_c"),
        ("id: stock\r\ndescription: x\r\n", "stock"),
        ("description: x\nid: stock\n", "stock"),
        ("id: &anchor stock\n", None),  # an anchor
        ("id: !!str stock\n", None),  # a tag
        ("id: Stock\n", None),  # not a valid id: the loader says why
        ("id: stock\nid: other\n", None),  # twice: YAML's own rule decides
        ("id: stock\nid: *anchor\n", None),
        ("  id: stock\n", None),  # indented: maybe nested
        ("tools:\n  - id: stock\n", None),
        ("{id: stock}\n", None),
        ("description: |\n  id: stock\n", None),
        ("", None),
    ],
)
def test_the_declared_id_is_read_only_when_certain(
    tmp_path: Path, text: str, expected: str | None
) -> None:
    file = tmp_path / "t.yaml"
    file.write_text(text)
    assert quick_task_id(file) == expected


def test_unreadable_or_oversized_files_have_no_certain_id(tmp_path: Path) -> None:
    file = tmp_path / "t.yaml"
    file.write_bytes(b"id: stock\n\xff\xfe")
    assert quick_task_id(file) is None
    file.write_text("id: stock\n" + "# padding\n" * 200_000)
    assert quick_task_id(file) is None
    assert quick_task_id(tmp_path / "missing.yaml") is None


_LINES = st.sampled_from(
    [
        "id: alpha",
        "id: 'beta'",
        'id: "gamma"',
        "id: &a delta",
        "id: *a",
        "  id: nested",
        "description: text",
        "description: |",
        "  id: inside-a-block",
        "tags: [x, y]",
        "# id: commented",
        "params:",
        "  n: {int_range: [1, 3]}",
        "---",
        "id: alpha # trailing",
        "id:alpha",
        "id :x",
        "ID: upper",
    ]
)


@settings(max_examples=EXAMPLES, derandomize=True, deadline=None)
@given(lines=st.lists(_LINES, max_size=8), crlf=st.booleans())
def test_a_certain_id_is_always_the_id_yaml_reads(
    tmp_path_factory: pytest.TempPathFactory, lines: list[str], crlf: bool
) -> None:
    text = ("\r\n" if crlf else "\n").join(lines) + "\n"
    file = tmp_path_factory.mktemp("quick") / "t.yaml"
    file.write_bytes(text.encode())
    quick = quick_task_id(file)
    if quick is None:
        return
    try:
        data: Any = yaml.safe_load(text)
    except yaml.YAMLError:
        return  # the loader reports the file, selected or not, once it is loaded
    assert isinstance(data, dict) and data.get("id") == quick


def test_run_of_one_task_runs_past_a_broken_other_and_validate_reports_it(
    invoke: Invoke, suite_dir: Callable[..., Path], tmp_path: Path
) -> None:
    root = suite_dir([make_task(id="good")])
    _broken(root)
    ran = invoke("run", root, "--agent", "oracle", "--task", "good", "-o", tmp_path / "r", "-q")
    assert ran.code == 0, ran.err
    checked = invoke("validate", root)
    assert checked.code == 2 and "bad.yaml" in checked.out + checked.err
    whole = invoke("run", root, "--agent", "oracle", "-o", tmp_path / "all", "-q")
    assert whole.code == 2 and "bad.yaml" in whole.err
