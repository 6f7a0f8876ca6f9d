"""Reading a script from a YAML file, for `python -m toolproof.testing`.

The format is documented in the package docstring (`toolproof.testing`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from toolproof.testing._replies import ScriptedError, ScriptedReply, ScriptedToolCall
from toolproof.testing._script import Policy, WhenExhausted, sequence_policy

_REPLY_FIELDS = ("content", "error", "latency_s", "tool_calls", "truncated", "usage")
_CALL_FIELDS = ("arguments", "id", "name")
_ERROR_FIELDS = ("body", "headers", "message", "retry_after", "status", "times")
_TOP_FIELDS = ("per_conversation", "replies", "when_exhausted")


class ScriptFileError(ValueError):
    """A script file that cannot be read; the message names the file, line and field."""


def load_script(path: str | Path) -> Policy:
    """Read a YAML script file into a policy.

    Args:
        path: The file.

    Returns:
        A `Script`, or a per-conversation `sequence_policy` when the file sets
        `per_conversation: true`.

    Raises:
        ScriptFileError: If the file is not valid YAML or not a valid script.
        OSError: If the file cannot be read.
    """
    import yaml  # imported here: only the CLI needs it

    text = Path(path).read_text(encoding="utf-8")
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ScriptFileError(f"{path}: not valid YAML: {exc}") from exc
    options: dict[str, Any] = {}
    if isinstance(data, dict):
        unknown = sorted(set(data) - set(_TOP_FIELDS))
        if unknown:
            raise ScriptFileError(
                f"{path}: unknown top-level field {unknown[0]!r}; expected {', '.join(_TOP_FIELDS)}"
            )
        options = {k: v for k, v in data.items() if k != "replies"}
        data = data.get("replies")
    if not isinstance(data, list):
        raise ScriptFileError(
            f"{path}: a script is a list of replies, or a mapping with a 'replies' list; "
            f"got {type(data).__name__}"
        )
    lines = _item_lines(root)
    replies = []
    for i, item in enumerate(data):
        where = f"{path}:{lines[i] if i < len(lines) else '?'}: replies[{i}]"
        try:
            replies.append(_reply(item, where))
        except ScriptFileError:
            raise
        except (TypeError, ValueError) as exc:
            raise ScriptFileError(f"{where}: {exc}") from exc
    when_exhausted = options.get("when_exhausted", "error")
    if when_exhausted not in ("error", "done"):
        raise ScriptFileError(
            f"{path}: when_exhausted must be 'error' or 'done', got {when_exhausted!r}"
        )
    per_conversation = options.get("per_conversation", False)
    if not isinstance(per_conversation, bool):
        raise ScriptFileError(
            f"{path}: per_conversation must be true or false, got {per_conversation!r}"
        )
    exhausted: WhenExhausted = "done" if when_exhausted == "done" else "error"
    return sequence_policy(replies, per_conversation=per_conversation, when_exhausted=exhausted)


def _item_lines(root: Any) -> list[int]:
    """The 1-based line of each reply, read from the composed YAML node tree."""
    import yaml

    node = root
    if isinstance(root, yaml.MappingNode):
        node = next((value for key, value in root.value if key.value == "replies"), None)
    if not isinstance(node, yaml.SequenceNode):
        return []
    return [item.start_mark.line + 1 for item in node.value]


def _fields(value: object, allowed: tuple[str, ...], where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ScriptFileError(f"{where}: must be a mapping, got {value!r}")
    unknown = sorted(set(value) - set(allowed))
    if unknown:
        raise ScriptFileError(
            f"{where}: unknown field {unknown[0]!r}; expected {', '.join(allowed)}"
        )
    return value


def _reply(item: object, where: str) -> ScriptedReply:
    if isinstance(item, str):
        return ScriptedReply(content=item)
    fields = _fields(item, _REPLY_FIELDS, where)
    calls = fields.get("tool_calls") or []
    if not isinstance(calls, list):
        raise ScriptFileError(f"{where}.tool_calls: must be a list, got {calls!r}")
    usage = fields.get("usage")
    if usage is not None and not (isinstance(usage, list) and len(usage) == 2):
        raise ScriptFileError(
            f"{where}.usage: must be [prompt_tokens, completion_tokens], got {usage!r}"
        )
    return ScriptedReply(
        content=fields.get("content"),
        tool_calls=[_call(call, f"{where}.tool_calls[{j}]") for j, call in enumerate(calls)],
        usage=(usage[0], usage[1]) if usage is not None else None,
        error=_error(fields["error"], f"{where}.error") if "error" in fields else None,
        latency_s=float(fields.get("latency_s", 0.0)),
        truncated=bool(fields.get("truncated", False)),
    )


def _call(item: object, where: str) -> ScriptedToolCall:
    fields = _fields(item, _CALL_FIELDS, where)
    if "name" not in fields:
        raise ScriptFileError(f"{where}: a tool call needs a name")
    arguments = fields.get("arguments", {})
    if arguments is None:
        arguments = {}
    try:
        return ScriptedToolCall(fields["name"], arguments, fields.get("id"))
    except ValueError as exc:
        raise ScriptFileError(f"{where}: {exc}") from exc


def _error(item: object, where: str) -> ScriptedError:
    if isinstance(item, int):
        return ScriptedError(item)
    fields = _fields(item, _ERROR_FIELDS, where)
    if "status" not in fields:
        raise ScriptFileError(f"{where}: an error needs a status, e.g. status: 429")
    try:
        return ScriptedError(**fields)
    except ValueError as exc:
        raise ScriptFileError(f"{where}: {exc}") from exc
