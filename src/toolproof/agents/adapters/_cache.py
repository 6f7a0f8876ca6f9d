"""The model-call cache (``--cache DIR``): record every request and reply, replay them.

A request is keyed by the sha256 of its canonical JSON (provider, model,
messages, tools and sampling parameters; not the endpoint, the key or the
streaming mode), plus the episode's epoch: the k epochs of a task are k
samples, and one cached reply must not stand in for all of them. A later run
with the same cache answers from disk and makes no provider call. Entries are
written atomically (a temporary file renamed into place), so concurrent
episodes and runs sharing a cache never see a torn file; two writers of one
key write the same reply.

Layout: ``DIR/ab/abcdef….json`` holding ``{"key", "request", "reply"}``. The model
gateway stores its replies the same way, as they went over the wire (``get_raw``/``put_raw``:
``{"status", "content_type", "body"}``), so that framework and command-line agents replay
byte for byte.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ._reply import ModelReply


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no spaces: equal requests give equal text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def request_key(request: Mapping[str, Any]) -> str:
    """The cache key of a request."""
    return hashlib.sha256(canonical_json(request).encode()).hexdigest()


class ModelCache:
    """Model replies on disk, by request key.

    Attributes:
        hits: Requests answered from the cache by this object.
        misses: Requests that were not in it.
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.hits = 0
        self.misses = 0

    def path(self, key: str) -> Path:
        """Where a key's entry lives."""
        return self.root / key[:2] / f"{key}.json"

    def get(self, request: Mapping[str, Any]) -> ModelReply | None:
        """The recorded reply to a request, or None (an unreadable entry counts as missing)."""
        path = self.path(request_key(request))
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
            reply = ModelReply.model_validate(entry["reply"])
        except (OSError, ValueError, KeyError, TypeError, ValidationError):
            self.misses += 1
            return None
        self.hits += 1
        return reply

    def get_raw(self, request: Mapping[str, Any]) -> dict[str, Any] | None:
        """The wire reply the gateway recorded for a request, or None."""
        path = self.path(request_key(request))
        try:
            reply = json.loads(path.read_text(encoding="utf-8"))["reply"]
            if not (isinstance(reply["body"], str) and isinstance(reply["content_type"], str)):
                raise TypeError("not a wire reply")
        except (OSError, ValueError, KeyError, TypeError):
            self.misses += 1
            return None
        self.hits += 1
        return dict(reply)

    def put_raw(self, request: Mapping[str, Any], reply: Mapping[str, Any]) -> Path:
        """Record a wire reply of the gateway, atomically."""
        return self._write(request, dict(reply))

    def put(self, request: Mapping[str, Any], reply: ModelReply) -> Path:
        """Record a reply, atomically."""
        return self._write(request, reply.model_dump(mode="json"))

    def _write(self, request: Mapping[str, Any], reply: dict[str, Any]) -> Path:
        key = request_key(request)
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        entry = {"key": key, "request": request, "reply": reply}
        fd, tmp = tempfile.mkstemp(prefix=f".{key[:12]}-", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(json.dumps(entry, indent=1, sort_keys=True, ensure_ascii=False))
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path
