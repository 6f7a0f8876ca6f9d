"""Value types of an episode's record and their JSONL form.

Map::

    Trajectory = prompt (Message...) + steps (Step = assistant Message + ToolResults
                 + Usage + timing + state digest/diff/snapshot) + termination
"""

from . import ingress, jsonl
from .types import (
    FORMAT_VERSION,
    Message,
    StateDiff,
    Step,
    Termination,
    ToolCall,
    ToolKind,
    ToolResult,
    ToolSchema,
    Trajectory,
    Usage,
)

__all__ = [
    "FORMAT_VERSION",
    "Message",
    "StateDiff",
    "Step",
    "Termination",
    "ToolCall",
    "ToolKind",
    "ToolResult",
    "ToolSchema",
    "Trajectory",
    "Usage",
    "ingress",
    "jsonl",
]
