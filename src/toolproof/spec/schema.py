"""JSON Schema of the task format, generated from the pydantic models and shipped."""

from __future__ import annotations

from typing import Any

from .suite import SuiteConfig
from .task import Task

SCHEMA_ID = "https://toolproof.dev/schema/task-v1.json"


def task_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) every task file validates against."""
    schema = Task.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = SCHEMA_ID
    schema["title"] = "toolproof task (format v1)"
    return schema


def suite_schema() -> dict[str, Any]:
    """The JSON Schema of ``suite.yaml``."""
    schema = SuiteConfig.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "toolproof suite.yaml"
    return schema
