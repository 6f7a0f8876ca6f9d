"""BFCL v4 categories as a toolproof suite, built from the installed package.

Each BFCL entry becomes one :class:`~toolproof.spec.Task`: its question is the
prompt, its function documents are inline tools (JSON Schema as BFCL's own
function-calling runs convert them), and its one check, ``bfcl.ast``, hands the
calls of the agent's first turn to ``bfcl_eval``'s AST checker together with the
possible answer. The oracle plays the possible answer (first acceptable value of
each argument). Irrelevance categories pass exactly when the first turn makes no
call, as in BFCL's ``relevance_file_runner``. Multi-turn entries are built by
:mod:`._bfcl_multi` (further user turns, worlds on BFCL's backend classes).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from toolproof.spec import (
    CustomCheck,
    InlineResponse,
    InlineTool,
    Problem,
    Solution,
    SolutionCall,
    SpecError,
    Suite,
    SuiteConfig,
    Task,
)
from toolproof.spec.task import Category, LimitsOverride, TaskType

from . import _bfcl_check  # noqa: F401 - registers the bfcl.ast check function
from . import _bfcl_upstream as upstream
from ._bfcl_answers import oracle_call
from ._bfcl_multi import MULTI_TURN_CATEGORIES, build_multi_turn_task

AST_CATEGORIES: dict[str, str] = {
    "simple_python": "python",
    "simple_java": "java",
    "simple_javascript": "javascript",
    "multiple": "python",
    "parallel": "python",
    "parallel_multiple": "python",
    "live_simple": "python",
    "live_multiple": "python",
    "live_parallel": "python",
    "live_parallel_multiple": "python",
}
"""Categories scored by BFCL's AST checker, with the language its type rules follow."""
IRRELEVANCE_CATEGORIES = ("irrelevance", "live_irrelevance")
"""Categories where the right answer is no call at all."""
RELEVANCE_CATEGORIES = ("live_relevance",)
"""Categories where any function call passes (BFCL keeps no ground truth for them)."""
CATEGORIES = (
    *AST_CATEGORIES,
    *IRRELEVANCE_CATEGORIES,
    *RELEVANCE_CATEGORIES,
    *MULTI_TURN_CATEGORIES,
)
SKIPPED: dict[str, str] = {
    "memory": "needs rank_bm25 or sentence-transformers with faiss (heavy, not offline-light)",
    "web_search": "needs live web search (SerpAPI); nothing reaches the network here",
    "format_sensitivity": "a prompt-format sweep, not a task set of its own",
}
"""BFCL v4 categories not run, each with the reason."""
CHECK_FUNCTION = "bfcl.ast"
OK_RESULT = {"status": "recorded"}
_JSON_TYPES = {"dict": "object", "float": "number", "tuple": "array"}


def tool_name(name: str) -> str:
    """The tool name the agent sees: BFCL's with dots as underscores (as BFCL does for FC)."""
    return re.sub(r"[^A-Za-z0-9_]", "_", name)[:64]


def _schema(node: Any, language: str) -> Any:
    """BFCL's parameter document as JSON Schema; Java and JS arguments are source strings."""
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "properties" and isinstance(value, dict):
            out[key] = {k: _param(v, language) for k, v in value.items()}
        elif key == "items":
            out[key] = _schema(value, language)
        elif key == "type" and isinstance(value, str):
            if value != "any":
                out[key] = _JSON_TYPES.get(value, value)
        else:
            out[key] = value
    return out


def _param(node: Any, language: str) -> Any:
    if language == "python" or not isinstance(node, dict):
        return _schema(node, language)
    kind = node.get("type", "any")
    text = f"{node.get('description', '')} This is {language.title()} {kind} type syntax."
    return {"type": "string", "description": text.strip()}


def _tools(entry: dict[str, Any], language: str) -> tuple[list[InlineTool], dict[str, str]]:
    tools: list[InlineTool] = []
    names: dict[str, str] = {}
    for function in entry["function"]:
        name = tool_name(function["name"])
        if name in names:
            raise SpecError(
                [Problem(None, None, entry["id"], f"two functions map to the tool {name!r}")]
            )
        names[name] = function["name"]
        tools.append(
            InlineTool(
                name=name,
                description=function.get("description", ""),
                parameters=_schema(function.get("parameters", {}), language),
                responses=[InlineResponse(result=OK_RESULT)],
            )
        )
    return tools, names


def _prompt(entry: dict[str, Any]) -> str:
    turns = entry["question"][0]
    parts = [
        m["content"] if m["role"] == "user" else f"[{m['role']}] {m['content']}" for m in turns
    ]
    return "\n\n".join(parts)


def _solution(
    entry: dict[str, Any], answer: list[dict[str, Any]], category: str, language: str
) -> tuple[Solution, bool]:
    """The oracle's calls and whether BFCL's own checker accepts them.

    Java and JavaScript strings inside collections are tried quoted, then bare: BFCL's
    converters want one or the other depending on the declared element type.
    """
    docs = {f["name"]: f for f in entry["function"]}
    calls: list[dict[str, dict[str, Any]]] = []
    accepted = False
    for quote in (True,) if language == "python" else (True, False):
        calls = [
            {name: oracle_call(args, language, docs[name], quote)}
            for item in answer
            for name, args in item.items()
        ]
        accepted = bool(
            upstream.check(entry["function"], calls, answer, category, language)["valid"]
        )
        if accepted:
            break
    turn = [SolutionCall(tool=tool_name(n), args=a) for call in calls for n, a in call.items()]
    return Solution(calls=[turn], answer="Done."), accepted


_PLACEHOLDERS = {"integer": 1, "float": 1.0, "boolean": True, "array": [], "dict": {}}


def _placeholder_call(function: dict[str, Any]) -> SolutionCall:
    """A call with every required argument set: relevance only asks that a call be made."""
    properties = function.get("parameters", {}).get("properties", {})
    args: dict[str, Any] = {}
    for name in function.get("parameters", {}).get("required", []):
        spec = properties.get(name, {})
        args[name] = (
            spec["enum"][0] if spec.get("enum") else _PLACEHOLDERS.get(spec.get("type"), "x")
        )
    return SolutionCall(tool=tool_name(function["name"]), args=args)


def build_task(category: str, entry: dict[str, Any], answer: list[dict[str, Any]]) -> Task:
    """One BFCL entry as a task.

    Raises:
        SpecError: the entry holds ``{{``, which toolproof would read as a template.
    """
    if "{{" in json.dumps([entry, answer]):
        raise SpecError(
            [Problem(None, None, str(entry.get("id")), "holds '{{', read as a template")]
        )
    irrelevance = category in IRRELEVANCE_CATEGORIES
    language = AST_CATEGORIES.get(category, "python")
    tools, names = _tools(entry, language)
    tags = ["bfcl", f"bfcl:{category}"]
    if irrelevance:
        solution = Solution(answer="None of the given functions can do this.")
    elif category in RELEVANCE_CATEGORIES:
        solution = Solution(calls=[[_placeholder_call(entry["function"][0])]], answer="Done.")
    else:
        solution, accepted = _solution(entry, answer, category, language)
        if not accepted:
            tags.append("bfcl-unsatisfiable")
    check = CustomCheck(
        name="bfcl",
        function=CHECK_FUNCTION,
        args={
            "category": category,
            "language": language,
            "functions": entry["function"],
            "answer": answer,
            "names": names,
        },
    )
    return Task(
        id=str(entry["id"]).lower(),
        description=_prompt(entry),
        type=TaskType.SINGLE_TOOL if len(answer) <= 1 else TaskType.MULTI_STEP,
        category=Category.EDGE if irrelevance else Category.NORMAL,
        domain="bfcl",
        tags=tags,
        tools=list(tools),
        limits=LimitsOverride(max_steps=3),
        success=[check],
        solution=solution,
    )


def build_suite(category: str | None = None, *, allow_drift: bool = False) -> Suite:
    """The BFCL suite: one category, or every supported category.

    Raises:
        SpecError: bfcl-eval missing, a version other than the pinned one (without
            ``allow_drift``), or an unknown or unsupported category.
    """
    version = upstream.installed_version()
    if version is None:
        raise SpecError([Problem(None, None, "suite", f"bfcl needs {upstream.EXTRA_HINT}")])
    if version != upstream.PINNED_VERSION and not allow_drift:
        raise SpecError(
            [
                Problem(
                    None,
                    None,
                    "suite",
                    f"bfcl-eval {version} is installed but toolproof is proven on "
                    f"{upstream.PINNED_VERSION}: install it ({upstream.EXTRA_HINT}) "
                    "or pass --allow-drift",
                )
            ]
        )
    if category is not None and category not in CATEGORIES:
        why = SKIPPED.get(category, f"not a BFCL v4 category; known: {', '.join(CATEGORIES)}")
        raise SpecError([Problem(None, None, "suite", f"bfcl:{category}: {why}")])
    chosen = [category] if category else list(CATEGORIES)
    tasks: list[Task] = []
    files: dict[str, Path] = {}
    sha = hashlib.sha256(f"{upstream.DISTRIBUTION}=={version}".encode())
    for name in chosen:
        answers = upstream.load_answers(name)
        for entry in upstream.load_entries(name):
            answer = answers.get(str(entry["id"]), [])
            if name in MULTI_TURN_CATEGORIES:
                try:
                    task = build_multi_turn_task(name, entry, answer, tool_name, _schema)
                except upstream.UpstreamMissing as exc:
                    raise SpecError([Problem(None, None, "suite", f"bfcl:{name}: {exc}")]) from None
            else:
                task = build_task(name, entry, answer)
            tasks.append(task)
            files[task.id] = upstream.data_root() / f"BFCL_v4_{name}.json"
        sha.update(name.encode() + b"\0" + upstream.data_digest(name).encode())
    suite_name = "bfcl" if category is None else f"bfcl-{category.replace('_', '-')}"
    config = SuiteConfig(
        name=suite_name,
        version=f"bfcl-eval-{version}",
        description="Berkeley Function Calling Leaderboard v4, scored by bfcl_eval's checker.",
        canary=f"bfcl-eval {version} (data from the installed package)",
    )
    suite = Suite(config=config, tasks=tasks, root=upstream.data_root(), digest=sha.hexdigest())
    suite._task_files.update(files)
    return suite
