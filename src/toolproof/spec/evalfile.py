"""The evaluation file (``toolproof.yaml``): a matrix of agents, models and suites, run by
one command (``toolproof run --config FILE``; ``toolproof run`` alone finds
``toolproof.yaml`` in the working directory).

Example::

    name: nightly                     # the matrix folder: runs/eval-nightly (or out:)
    suites:
      - core                          # a suite name, folder or provided suite
      - {suite: security, tasks: ["sec-*"]}
    agents:
      - {name: gpt, agent: "openai:{model}", args: {base_url: "http://127.0.0.1:8000/v1"}}
      - {name: lc, agent: "langchain:my_agent:build", model: "openai:{model}"}
    models: [gpt-4o-mini, gpt-4o]     # each agent runs with each model ({model})
    epochs: 3
    seed: 7
    budgets: {limit: 20, max_cost: 5.0}
    gates: {min_success: 0.5, max_infra_errors: 0.05}

Every mistake is a ``FILE:LINE: FIELD: MESSAGE`` problem, as in task files (the same
YAML-with-lines loader and :class:`SpecError`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ._yamlsrc import load_document
from .errors import Problem, SpecError

EVAL_FILE = "toolproof.yaml"
"""The evaluation file ``toolproof run`` finds in the working directory."""

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SuiteEntry(_Strict):
    """One suite of the matrix, with an optional task filter."""

    suite: str = Field(description="A built-in suite name, a suite folder or a provided suite.")
    tasks: list[str] = Field(
        default_factory=list, description="Glob patterns of the task ids to run (all: empty)."
    )


class AgentEntry(_Strict):
    """One agent of the matrix."""

    name: str = Field(description="A short label: the cell folders and the board use it.")
    agent: str = Field(
        description="The agent spec, as --agent takes it; '{model}' is replaced by each model."
    )
    model: str | None = Field(
        None,
        description=(
            "--model of a framework or cmd agent (PROVIDER:MODEL), '{model}' replaced by each "
            "model; None: the agent names its model itself (or has none)."
        ),
    )
    args: dict[str, Any] = Field(
        default_factory=dict, description="Agent options, as --agent-arg key=value gives them."
    )

    @field_validator("name")
    @classmethod
    def _label(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError(
                f"must be 1-64 letters, digits, '_', '.', '-' (a folder name), got {value!r}"
            )
        return value


class Budgets(_Strict):
    """The run budgets of every cell (``--limit``, ``--sample``, ``--max-tokens``,
    ``--max-cost``)."""

    limit: int | None = Field(None, ge=1, description="Only the first N selected tasks.")
    sample: int | None = Field(None, ge=1, description="N tasks drawn with the seed.")
    max_tokens: int | None = Field(None, ge=1, description="Agent tokens per cell.")
    max_cost: float | None = Field(None, gt=0, allow_inf_nan=False, description="USD per cell.")


class Gates(_Strict):
    """What every cell must reach for the matrix to pass (exit 0)."""

    min_success: float | None = Field(
        None, ge=0, le=1, description="Lowest success rate of a cell (pass@strict)."
    )
    max_infra_errors: float | None = Field(
        None, ge=0, le=1, description="Largest share of infra errors (--max-infra-errors)."
    )


class EvalFile(_Strict):
    """An evaluation: which agents, models and suites to run, how, and what must hold."""

    name: str = Field("eval", description="The evaluation's name (its folder: runs/eval-NAME).")
    suites: list[str | SuiteEntry] = Field(min_length=1, description="The suites.")
    agents: list[AgentEntry] = Field(min_length=1, description="The agents.")
    models: list[str] = Field(
        default_factory=list,
        description="Models each agent runs with ('{model}' in agent or model); none: once.",
    )
    epochs: int = Field(1, ge=1, description="Runs per task (--epochs).")
    seed: int | None = Field(None, description="Overrides each suite's seed (--seed).")
    parallel: int = Field(8, ge=1, description="Episodes in flight per cell (--parallel).")
    budgets: Budgets = Field(default_factory=Budgets, description="Per-cell budgets.")
    gates: Gates = Field(default_factory=Gates, description="What every cell must reach.")
    out: str | None = Field(None, description="The matrix folder (default runs/eval-NAME).")

    @field_validator("name")
    @classmethod
    def _label(cls, value: str) -> str:
        return AgentEntry._label(value)

    def cells(self) -> list[Cell]:
        """Every (suite, agent, model) of the matrix, suites outermost."""
        out: list[Cell] = []
        for entry in self.suites:
            suite = entry if isinstance(entry, SuiteEntry) else SuiteEntry(suite=entry)
            for agent in self.agents:
                uses = "{model}" in agent.agent or "{model}" in (agent.model or "")
                models: list[str | None] = list(self.models) if uses and self.models else [None]
                out.extend(Cell(suite, agent, model) for model in models)
        return out


class Cell:
    """One run of the matrix: a suite, an agent and (maybe) a model."""

    def __init__(self, suite: SuiteEntry, agent: AgentEntry, model: str | None) -> None:
        self.suite, self.agent_entry, self.model_name = suite, agent, model

    @property
    def agent(self) -> str:
        """The --agent spec, with the model put in."""
        return self._fill(self.agent_entry.agent)

    @property
    def model(self) -> str | None:
        """The --model value (framework and cmd agents), with the model put in."""
        value = self.agent_entry.model
        return None if value is None else self._fill(value)

    def _fill(self, text: str) -> str:
        return text.replace("{model}", self.model_name) if self.model_name else text

    @property
    def label(self) -> str:
        """The cell's folder name: suite, agent label and model, filesystem-safe."""
        parts = [self.suite.suite, self.agent_entry.name]
        if self.model_name:
            parts.append(self.model_name)
        return re.sub(r"[^A-Za-z0-9_.-]+", "_", "-".join(parts))[:120]


def load_eval_file(path: Path) -> EvalFile:
    """Load and validate an evaluation file.

    Raises:
        SpecError: every problem, as ``FILE:LINE: FIELD: MESSAGE``.
    """
    from .loader import _problems

    data, source = load_document(path)
    if not isinstance(data, dict):
        raise SpecError([Problem(path, 1, "", "expected a mapping of fields at the top level")])
    try:
        config = EvalFile.model_validate(data)
    except ValidationError as exc:
        raise SpecError(_problems(exc, data, source)) from None
    problems = []
    labels: dict[str, int] = {}
    for index, agent in enumerate(config.agents):
        if agent.name in labels:
            problems.append(
                Problem(
                    path,
                    source.line_of(("agents", index, "name")),
                    f"agents[{index}].name",
                    f"{agent.name!r} is also agents[{labels[agent.name]}]; names must differ",
                )
            )
        labels.setdefault(agent.name, index)
        uses = "{model}" in agent.agent or "{model}" in (agent.model or "")
        if uses and not config.models:
            problems.append(
                Problem(
                    path,
                    source.line_of(("agents", index, "agent")),
                    f"agents[{index}].agent",
                    "uses {model} but the file lists no models; add models: [...]",
                )
            )
    if problems:
        raise SpecError(problems)
    return config
