"""What the start of a command builds and imports (issue 34): the structure behind a short
start, pinned here; the timings belong to ``benchmarks/bench_startup.py``.

* A built-in toolkit's tool builds its schema on first use, so a run builds the schemas of
  the tools its tasks offer, not all of them; every built-in schema still builds, the same
  as at registration; any other tool's mistakes are still raised where it registers.
* A task's tools import their own built-in toolkits (``toolkits.TOOLS`` says where each
  lives), not all of them; a built-in tool's name is taken before its toolkit loads.
* The sandbox package imports its backends when one is first looked up or registered: a
  run whose tasks run no command imports none; a built-in backend's name stays taken.
* A built-in check kind's module (and a built-in check function's) is imported when a check
  of it first runs: the tables that say where each lives match what the modules register,
  and a plug-in cannot take a built-in name before its module is loaded.
* A run of some tasks reads each file's declared id from its one ``id:`` line, resolves
  each task file's folder once and walks the suite for its digest with ``os.scandir``:
  each the same as before, for every input.
* pydantic is spared its look for plug-ins when toolproof's look found none of its group.
* The command line's own process collects the oldest generation a tenth as often and
  freezes the collector on its way out (no collection of every object at exit); a caller
  that passes ``argv`` keeps its collector as it was.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from toolproof.scoring import base as scoring_base
from toolproof.scoring import evaluators, kind_names
from toolproof.scoring.checks import BUILTIN
from toolproof.scoring.checks import custom as custom_checks
from toolproof.spec import SpecError, load_suite, suite_digest
from toolproof.spec.loader import _QUICK_ID, quick_task_id
from toolproof.tools import ToolContext, load_builtin, registry, schema_from_function, tool
from toolproof.tools.base import BUILTIN_MODULES
from toolproof.tools.toolkits import TOOLS
from toolproof.trajectory import ToolKind
from toolproof_helpers import make_task, write_suite, write_yaml

SRC = Path(__file__).resolve().parents[1] / "src"


def _python(code: str, tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter on this checkout, its caches under ``tmp_path``."""
    full = {**os.environ, "PYTHONPATH": str(SRC), "XDG_CACHE_HOME": str(tmp_path / "cache"), **env}
    full.pop("TOOLPROOF_NO_INDEX", None)
    full.pop("TOOLPROOF_NO_PLUGINS", None)
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        env=full,
        capture_output=True,
        text=True,
        timeout=240,
        cwd=tmp_path,
    )


def test_every_built_in_schema_builds_as_at_registration() -> None:
    load_builtin()
    built_in = [t for t in registry().values() if t.fn.__module__.startswith(BUILTIN_MODULES)]
    assert len(built_in) > 40
    for impl in built_in:
        expected = schema_from_function(impl.fn, name=impl.name, kind=impl._kind)
        assert impl.schema == expected
        assert impl.schema.name == impl.name


@pytest.mark.usefixtures("restore_registries")
def test_a_plug_in_tool_is_checked_where_it_registers() -> None:
    with pytest.raises(TypeError, match="needs a docstring"):

        @tool(name="tp_test_undocumented")
        def undocumented(ctx: ToolContext, a: int) -> int:
            return a

    assert "tp_test_undocumented" not in registry()

    @tool(kind=ToolKind.WRITE, name="tp_test_eager")
    def eager(ctx: ToolContext, a: int) -> int:
        """Echo.

        Args:
            a: A number.
        """
        return a

    assert registry()["tp_test_eager"]._schema is not None  # built at registration


def test_the_toolkit_table_matches_what_the_modules_register() -> None:
    load_builtin()
    own: dict[str, list[str]] = {}
    for name, impl in registry().items():
        if impl.fn.__module__.startswith(BUILTIN_MODULES):
            own.setdefault(impl.fn.__module__.rpartition(".")[2], []).append(name)
            assert impl.toolkit == impl.fn.__module__.rpartition(".")[2]
    assert {kit: tuple(sorted(names)) for kit, names in own.items()} == TOOLS


TAKE = """
from toolproof.tools import ToolContext, tool
try:
    @tool(name="get_stock")
    def get_stock(ctx: ToolContext, product_id: str) -> str:
        \"\"\"Not the inventory's.\"\"\"
        return product_id
except ValueError as exc:
    print(exc)
import sys
print("toolproof.tools.toolkits.inventory" in sys.modules)
"""


def test_a_built_in_tool_name_is_taken_before_its_toolkit_loads(tmp_path: Path) -> None:
    done = _python(TAKE, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "tool 'get_stock' is already registered by inventory; choose another name",
        "False",
    ]


BACKEND = """
import sys
from toolproof.sandbox import BACKENDS, Sandbox, SandboxError, sandbox
print([m for m in BACKENDS if m in sys.modules])
try:
    @sandbox("bwrap")
    class Mine(Sandbox):
        isolated = False
except SandboxError as exc:
    print(type(exc).__name__, "bwrap" in str(exc))
from toolproof.sandbox import get_backend
print(get_backend("bwrap").__module__)
"""


def test_a_built_in_backend_name_is_taken_when_a_plug_in_registers(tmp_path: Path) -> None:
    done = _python(BACKEND, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "[]",  # importing the package imports no backend
        "SandboxError True",
        "toolproof.sandbox.bwrap._backend",
    ]


def test_the_kind_tables_match_what_the_modules_register() -> None:
    every = evaluators()  # imports every built-in module
    own = {
        kind: fn.__module__.rpartition(".")[2]
        for kind, fn in every.items()
        if fn.__module__.startswith(scoring_base.CHECKS_PACKAGE + ".")
    }
    assert own == scoring_base.BUILTIN_KINDS
    assert set(scoring_base.BUILTIN_KINDS.values()) <= set(BUILTIN)
    functions = {
        name: custom_checks._FUNCTIONS[name].__module__.rpartition(".")[2]
        for name in custom_checks._FUNCTIONS
        if custom_checks._FUNCTIONS[name].__module__.startswith(scoring_base.CHECKS_PACKAGE)
    }
    assert functions == custom_checks.BUILTIN_FUNCTIONS
    assert kind_names() == sorted(every)


CLAIM = """
import sys
from toolproof.scoring import check, check_function
which = sys.argv[1]
try:
    if which == "kind":
        check("hidden_tests")(lambda spec, ctx, index: None)
    else:
        check_function("attack")(lambda ctx: True)
except ValueError as exc:
    print(exc)
print(sorted(m for m in sys.modules if m.startswith("toolproof.scoring.checks.")))
"""


@pytest.mark.parametrize(
    ("which", "message"),
    [
        ("kind", "check kind 'hidden_tests' is already registered"),
        ("function", "check function 'attack' is already registered"),
    ],
)
def test_a_built_in_name_is_taken_before_its_module_loads(
    tmp_path: Path, which: str, message: str
) -> None:
    done = _python(CLAIM, tmp_path, which)
    assert done.returncode == 0, done.stderr
    said, modules = done.stdout.splitlines()
    assert said == message
    assert "toolproof.scoring.checks.hidden_tests" not in modules  # not loaded to refuse it
    assert "toolproof.scoring.checks.attack" not in modules


RUN = """
import json, sys
from toolproof.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    assert exc.code in (0, None), exc.code
from toolproof.tools import registry
built = sorted(name for name, t in registry().items() if t._schema is not None)
checks = sorted(m for m in sys.modules if m.startswith("toolproof.scoring.checks."))
kits = sorted(m for m in sys.modules if m.startswith("toolproof.tools.toolkits."))
from toolproof.sandbox import BACKENDS
backends = [m for m in BACKENDS if m in sys.modules]
print(json.dumps({"built": built, "checks": checks, "kits": kits, "backends": backends}))
"""


def test_a_run_builds_only_its_tools_schemas_and_loads_only_its_check_kinds(
    tmp_path: Path,
) -> None:
    run = ["run", "core", "--agent", "oracle", "--task", "stock-sum", "--quiet"]
    for out in ("first", "second"):  # cold, then with the suite recorded as checked
        done = _python(RUN, tmp_path, *run, "--out", str(tmp_path / out))
        assert done.returncode == 0, done.stderr
        seen = json.loads(done.stdout.strip().splitlines()[-1])
        assert set(seen["built"]) <= {"get_stock", "calculate", "list_products"}, seen
        unused = {"hidden_tests", "lint", "state", "evidence", "output", "ask"}
        loaded = {m.rpartition(".")[2] for m in seen["checks"]}
        assert {"answer", "process"} <= loaded and not unused & loaded, loaded
        kits = {m.rpartition(".")[2] for m in seen["kits"]}
        assert kits == {"inventory", "calculator"}, kits  # the toolkits of its tools
        assert seen["backends"] == []  # it runs no command: no sandbox backend


AWAY = """
import json, sys
from toolproof.cli import main
try:
    main(sys.argv[1:])
except SystemExit as exc:
    assert exc.code in (0, None), exc.code
away = ["jinja2", "toolproof.gateway", "toolproof.envs", "toolproof.report.html",
        "toolproof.agents.adapters._via_gateway", "toolproof.scoring.checks.judge",
        "toolproof.scoring.checks._loose"]
print(json.dumps([m for m in away if m in sys.modules]))
"""


def test_a_run_without_models_or_pinned_tools_loads_none_of_their_machinery(
    tmp_path: Path,
) -> None:
    """The summary table printed (not ``--quiet``), yet no Jinja (the HTML report's), no
    model gateway (no model, no ``--max-model-calls``), no pinned environments (no
    ``toolenv``), no side models' adapters or judge, no loose reading (a typed answer)."""
    run = ["run", "core", "--agent", "oracle", "--task", "stock-sum", "--out"]
    done = _python(AWAY, tmp_path, *run, str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
    assert "stock-sum" in done.stderr + done.stdout  # the summary table was printed


SPARE = """
import json, sys
from toolproof.cli import _common
_common.load_plugins()
from pydantic.plugin import _loader
spared = _loader._plugins is not None
from pydantic import BaseModel
class Probe(BaseModel):
    x: int = 0
after = _loader._plugins
_loader._plugins = None  # pydantic's own look, for comparison
own = list(_loader.get_plugins())
print(json.dumps({"spared": spared, "after": len(after), "own": len(own)}))
"""


def _pydantic_site(root: Path) -> Path:
    """A site folder whose one distribution has a ``pydantic`` plug-in entry point."""
    info = root / "pydantic_probe_plugin-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pydantic-probe-plugin\n")
    (info / "entry_points.txt").write_text("[pydantic]\nprobe = pydantic_probe_plugin:plugin\n")
    (root / "pydantic_probe_plugin.py").write_text(
        "class _Plugin:\n"
        "    def new_schema_validator(self, *args, **kwargs):\n"
        "        return None, None, None\n"
        "plugin = _Plugin()\n"
    )
    return root


@pytest.mark.parametrize("with_plugin", [False, True], ids=["none", "a-pydantic-plugin"])
def test_pydantic_is_spared_its_look_only_when_it_would_find_nothing(
    tmp_path: Path, with_plugin: bool
) -> None:
    env = {}
    if with_plugin:
        env["PYTHONPATH"] = os.pathsep.join([str(SRC), str(_pydantic_site(tmp_path / "site"))])
    for _ in range(2):  # the look made, then from the plug-in cache
        done = _python(SPARE, tmp_path, **env)
        assert done.returncode == 0, done.stderr
        seen = json.loads(done.stdout.strip().splitlines()[-1])
        assert seen["spared"] is (not with_plugin)
        assert seen["after"] == seen["own"] == (1 if with_plugin else 0)


EXIT = """
import atexit, gc, sys
atexit.register(lambda: print(gc.get_threshold()[2]))
atexit.register(lambda: print("frozen" if gc.get_freeze_count() else "not frozen"))
from toolproof.cli import main
if sys.argv[1] == "own":
    sys.argv[1:] = ["list"]
    main()
else:
    main(["list"])
"""


@pytest.mark.parametrize(
    ("how", "expected"), [("own", ["frozen", "100"]), ("argv", ["not frozen", "10"])]
)
def test_only_the_process_own_command_line_paces_and_freezes_the_collector(
    tmp_path: Path, how: str, expected: list[str]
) -> None:
    done = _python(EXIT, tmp_path, how)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-2:] == expected  # atexit: last registered runs first
    assert "core" in done.stdout  # the command itself did its work


# A run of some tasks reads each task file's declared id without parsing it, and resolves
# each file's path with its folder resolved once: both as before, for every input.

_EXAMPLES = int(os.environ.get("TOOLPROOF_FUZZ_EXAMPLES", "300"))


def _quick_id_by_search(text: str) -> str | None:
    """The declared id as the whole-text search found it (the reference)."""
    found = _QUICK_ID.findall(text)
    if len(found) != 1 or text.count("\nid:") + text.startswith("id:") != 1:
        return None
    return str(next(part for part in found[0] if part))


_PIECES = st.sampled_from(
    [
        "id:",
        "id: ",
        " ",
        "\t",
        "\n",
        "\r",
        "\r\n",
        "a",
        "b-1",
        "x.y",
        "'q'",
        '"r"',
        "'",
        '"',
        "#c",
        " # note",
        "&a ",
        "!t ",
        "  id: inner",
        "name: n",
        "Ü",
        "_",
    ]
)


@settings(max_examples=_EXAMPLES, derandomize=True, deadline=None)
@given(st.lists(_PIECES, max_size=14).map("".join))
def test_the_declared_id_is_read_as_the_whole_text_search_read_it(
    tmp_path_factory: pytest.TempPathFactory, text: str
) -> None:
    file = tmp_path_factory.mktemp("quick") / "task.yaml"
    file.write_bytes(text.encode("utf-8"))
    assert quick_task_id(file) == _quick_id_by_search(text)


def test_a_task_folder_linked_from_outside_is_refused_with_some_tasks_selected(
    tmp_path: Path,
) -> None:
    root = write_suite(tmp_path / "suite", [make_task(id="good")])
    outside = write_yaml(tmp_path / "elsewhere" / "other.yaml", make_task(id="other"))
    (root / "tasks" / "linked").symlink_to(outside.parent)  # a linked folder is not walked
    suite = load_suite(root, tasks=["good"])
    assert [t.id for t in suite.tasks] == ["good"]
    second = tmp_path / "second"
    write_yaml(second / "suite.yaml", {"name": "s", "version": "1", "canary": "c", "tasks": "more"})
    (second / "more").symlink_to(outside.parent)  # the task folder itself leads outside
    with pytest.raises(SpecError, match="outside the suite"):
        load_suite(second, tasks=["other"])


def _digest_by_rglob(root: Path) -> str:
    """The suite digest as ``rglob`` and ``pathlib`` computed it (the reference)."""
    sha = hashlib.sha256()
    entries = (p for p in root.rglob("*") if "__pycache__" not in p.parts)
    for file in sorted(p for p in entries if p.is_symlink() or p.is_file()):
        sha.update(file.relative_to(root).as_posix().encode())
        sha.update(b"\0")
        if file.is_symlink():
            sha.update(b"symlink:" + os.readlink(file).encode("utf-8", "surrogateescape"))
        else:
            sha.update(file.read_bytes())
        sha.update(b"\0")
    return sha.hexdigest()


def test_the_suite_digest_walks_what_rglob_found_in_the_same_order(tmp_path: Path) -> None:
    root = write_suite(tmp_path / "suite", [make_task(id="good")])
    outside = tmp_path / "outside"
    (outside / "deep").mkdir(parents=True)
    (outside / "deep" / "secret.txt").write_text("not in the suite")
    for rel, text in {
        "a-b": "dash",
        "a/b": "slash",
        "a/c/d.yaml": "nested",
        ".hidden": "dot",
        "tasks/.draft.yaml": "dot in tasks",
        "__pycache__/x.pyc": "cache",
        "tasks/__pycache__/y.pyc": "cache",
        "fixtures/Zed": "upper",
        "fixtures/zed": "lower",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / "linked-folder").symlink_to(outside)  # counted by its target, never walked
    (root / "fixtures" / "linked-file").symlink_to(outside / "deep" / "secret.txt")
    (root / "fixtures" / "dangling").symlink_to(tmp_path / "nowhere")
    os.mkfifo(root / "fixtures" / "pipe")  # neither a file nor a link: not counted
    assert suite_digest(root) == _digest_by_rglob(root)
    before = suite_digest(root)
    (outside / "deep" / "secret.txt").write_text("changed outside")
    assert suite_digest(root) == before  # a link counts by where it points
    (root / "a" / "c" / "d.yaml").write_text("edited")
    assert suite_digest(root) != before
