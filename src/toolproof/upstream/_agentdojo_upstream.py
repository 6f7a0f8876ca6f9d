"""The installed ``agentdojo`` package: its version, its suites, attacks and ground truth.

Nothing of AgentDojo is copied here: suites, environments, tools, tasks, attacks and
verdicts all come from the installed package. One accommodation makes the light
install work: ``agentdojo.task_suite`` imports ``agentdojo.agent_pipeline``, whose
``__init__`` imports every provider's LLM client, and ``tool_execution`` (which the
ground-truth pipeline uses) imports the Google one for a constant. toolproof runs
none of them, so while the suites are imported, a provider SDK that is not installed
(``cohere``, ``google.genai``) gets an empty stand-in module, which is taken out of
``sys.modules`` again right after: nothing outside AgentDojo's own modules ever sees
it, and with the SDKs installed the real ones are used.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from importlib import metadata, resources
from pathlib import Path
from typing import Any

DISTRIBUTION = "agentdojo"
PINNED_VERSION = "0.1.35"
"""The ``agentdojo`` release whose suites and checkers this integration was proven on."""
BENCHMARK_VERSION = "v1.2.2"
"""AgentDojo's default benchmark version (``agentdojo.scripts.benchmark``), the one run."""
LIGHT_INSTALL = (
    "pip install --no-deps 'agentdojo==0.1.35' 'deepdiff==8.6.1' orderly-set "
    "email-validator dnspython"
)
EXTRA_HINT = f"{LIGHT_INSTALL} (or pip install 'toolproof[agentdojo]')"
STAND_INS = ("cohere", "cohere.types", "google.genai", "google.genai.types", "google.genai.errors")
"""Provider SDK modules AgentDojo's pipeline package imports and toolproof never calls."""


class UpstreamMissing(ImportError):
    """The upstream package is not installed; the message names the install command."""


def installed_version() -> str | None:
    """The installed ``agentdojo`` version, or None when it is not installed."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return None


class _Placeholder:
    """What any name of a stand-in module is: a class nobody instantiates."""


def _stand_in(name: str) -> types.ModuleType:
    module = types.ModuleType(name, "toolproof's stand-in: this provider SDK is not installed")
    module.__path__ = []  # a package, so its submodules can be stood in for too

    def __getattr__(attr: str) -> type:
        if attr.startswith("__"):
            raise AttributeError(attr)
        made = type(attr, (_Placeholder,), {"__module__": name})
        setattr(module, attr, made)
        return made

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    return module


def _missing(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is None
    except (ImportError, ValueError):
        return True


@contextmanager
def _provider_stand_ins() -> Iterator[None]:
    """Stand in for the missing provider SDKs while AgentDojo's modules are imported."""
    added: list[str] = []
    parents: list[tuple[types.ModuleType, str]] = []
    try:
        for name in STAND_INS:
            if name in sys.modules or not _missing(name):
                continue
            parent_name, _, child = name.rpartition(".")
            if parent_name and parent_name not in sys.modules:
                try:
                    __import__(parent_name)
                except ImportError:
                    sys.modules[parent_name] = _stand_in(parent_name)
                    added.append(parent_name)
            sys.modules[name] = module = _stand_in(name)
            added.append(name)
            if parent_name:
                parent = sys.modules[parent_name]
                setattr(parent, child, module)
                parents.append((parent, child))
        yield
    finally:
        for parent, child in parents:
            if isinstance(getattr(parent, child, None), types.ModuleType):
                delattr(parent, child)
        for name in added:
            sys.modules.pop(name, None)


def require() -> None:
    """Raise when agentdojo is not installed.

    Raises:
        UpstreamMissing: it is not, with the install command.
    """
    if installed_version() is None:
        raise UpstreamMissing(f"AgentDojo needs the agentdojo package: {EXTRA_HINT}")


@cache
def modules() -> types.SimpleNamespace:
    """AgentDojo's modules toolproof uses, imported once.

    Raises:
        UpstreamMissing: agentdojo or one of the packages its suites need is missing.
    """
    require()
    try:
        with _provider_stand_ins():
            import agentdojo.attacks  # noqa: F401 - registers every attack
            from agentdojo.agent_pipeline.ground_truth_pipeline import GroundTruthPipeline
            from agentdojo.agent_pipeline.tool_execution import tool_result_to_str
            from agentdojo.attacks.attack_registry import ATTACKS
            from agentdojo.attacks.base_attacks import BaseAttack
            from agentdojo.base_tasks import BaseInjectionTask, BaseUserTask
            from agentdojo.functions_runtime import FunctionCall, FunctionsRuntime
            from agentdojo.task_suite.load_suites import get_suites
    except ImportError as exc:
        raise UpstreamMissing(
            f"AgentDojo's suites need {exc.name or exc}: {LIGHT_INSTALL}"
        ) from None
    return types.SimpleNamespace(
        GroundTruthPipeline=GroundTruthPipeline,
        tool_result_to_str=tool_result_to_str,
        ATTACKS=ATTACKS,
        BaseAttack=BaseAttack,
        BaseInjectionTask=BaseInjectionTask,
        BaseUserTask=BaseUserTask,
        FunctionCall=FunctionCall,
        FunctionsRuntime=FunctionsRuntime,
        get_suites=get_suites,
    )


def suites() -> dict[str, Any]:
    """AgentDojo's task suites at :data:`BENCHMARK_VERSION`, by name."""
    found: dict[str, Any] = modules().get_suites(BENCHMARK_VERSION)
    return found


UNSUPPORTED_ATTACKS = {"manual": "asks a person to type each injection (input())"}
"""Attacks of AgentDojo's registry toolproof does not place, beside the DoS ones."""


def attack_names() -> list[str]:
    """The attacks toolproof can place: AgentDojo's registry less the DoS attacks and
    :data:`UNSUPPORTED_ATTACKS`."""
    return sorted(
        name
        for name, cls in modules().ATTACKS.items()
        if not cls.is_dos_attack and name not in UNSUPPORTED_ATTACKS
    )


class _TargetPipeline:
    """What an AgentDojo attack asks of the attacked pipeline: only its ``name``."""

    def __init__(self, name: str) -> None:
        self.name = name


TARGET_MODEL = "local"
"""The pipeline name handed to attacks that address the model by name. The tasks are
built before any agent is known, so the model is then addressed as AgentDojo's own
``DEFAULT_MODEL_NAME`` ("the AI language model") rather than "Local model"."""


@cache
def attack(suite_name: str, name: str) -> Any:
    """AgentDojo's attack ``name`` against ``suite_name``, built once.

    Raises:
        KeyError: no such attack, or a DoS attack (not supported).
    """
    if name not in attack_names():
        raise KeyError(name)
    cls = modules().ATTACKS[name]
    made = cls(suites()[suite_name], _TargetPipeline(TARGET_MODEL))
    if getattr(made, "model_name", None) == "Local model":  # our placeholder: name no model
        from agentdojo.attacks.base_attacks import DEFAULT_MODEL_NAME

        made.model_name = DEFAULT_MODEL_NAME
    return made


def system_message() -> str:
    """AgentDojo's default system message (``data/system_messages.yaml``)."""
    import yaml

    text = (resources.files("agentdojo") / "data" / "system_messages.yaml").read_text("utf-8")
    return str(yaml.safe_load(text)["default"]).strip()


@cache
def data_digest() -> str:
    """sha256 over the installed package's suite data files (environments, vectors)."""
    import hashlib

    sha = hashlib.sha256(f"{DISTRIBUTION}=={installed_version()}".encode())
    root = Path(str(resources.files("agentdojo"))) / "data"
    for item in sorted(p for p in root.rglob("*") if p.is_file()):
        sha.update(f"{item.relative_to(root)}\0".encode() + item.read_bytes() + b"\0")
    return sha.hexdigest()


def data_root() -> Path:
    """The installed package's data directory (where the suites' environments are)."""
    return Path(str(resources.files("agentdojo"))) / "data"
