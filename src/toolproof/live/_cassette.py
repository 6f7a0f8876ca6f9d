"""Cassettes: recorded HTTP exchanges of the live track, matched by request key.

A cassette is a YAML file::

    toolproof_cassette: 1
    exchanges:
      - request: {method: GET, url: "https://api.example.org/v1/x?a=1", body_sha256: null}
        response:
          status: 200
          headers: {content-type: application/json}
          body: '{"x": 1}'          # text; or body_json: {x: 1} in hand-written files

A request matches an exchange when its method, normalised URL (see
:func:`normalise_url`; secret query parameters removed) and body digest are
equal. Secrets are never stored: the proxy scrubs their values before recording.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import yaml

FORMAT = 1
_DEFAULT_PORTS = {"http": 80, "https": 443}


class CassetteError(Exception):
    """A cassette file is missing or malformed (names the file and the fix)."""


def normalise_url(url: str, drop: frozenset[str] = frozenset()) -> str:
    """The form of a URL that requests are matched on.

    Lower-case scheme and host, no default port, no fragment, ``/`` for an
    empty path, query parameters sorted, and the parameters named in ``drop``
    (where secrets travel) removed.
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").rstrip(".")
    port = parts.port
    netloc = host if port is None or port == _DEFAULT_PORTS.get(scheme) else f"{host}:{port}"
    query = sorted(
        (k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in drop
    )
    return urlunsplit((scheme, netloc, parts.path or "/", urlencode(query), ""))


def body_digest(body: bytes) -> str | None:
    """sha256 of a request body; None for an empty one."""
    return hashlib.sha256(body).hexdigest() if body else None


def request_key(method: str, url: str, body: bytes) -> str:
    """The matching key: ``METHOD normalised-url body-digest``."""
    return f"{method.upper()} {url} {body_digest(body) or '-'}"


@dataclass
class Recorded:
    """One stored response."""

    status: int
    headers: dict[str, str]
    body: bytes


@dataclass
class Cassette:
    """The exchanges of one or more cassette files, looked up by request key."""

    exchanges: dict[str, Recorded] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)
    _order: list[dict[str, Any]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def load(cls, paths: list[Path]) -> Cassette:
        """Read cassette files, or every ``*.yaml`` in directories.

        Raises:
            CassetteError: a path is missing, or a file is not a cassette.
        """
        cassette = cls()
        for path in paths:
            if path.is_dir():
                found = sorted(path.glob("*.yaml"))
                if not found:
                    raise CassetteError(f"{path}: no cassette (*.yaml) in this directory")
                for one in found:
                    cassette._read(one)
            elif path.is_file():
                cassette._read(path)
            else:
                raise CassetteError(
                    f"{path}: no such cassette file or directory; fix: give the cassettes of a "
                    "recorded run (RUN_DIR/cassettes) or a suite's shipped ones"
                )
        return cassette

    def _read(self, path: Path) -> None:
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            raise CassetteError(f"{path}: cannot read the cassette: {exc}") from None
        if not isinstance(data, dict) or data.get("toolproof_cassette") != FORMAT:
            raise CassetteError(f"{path}: not a cassette (toolproof_cassette: {FORMAT} missing)")
        exchanges = data.get("exchanges")
        if not isinstance(exchanges, list):
            raise CassetteError(f"{path}: exchanges must be a list")
        for n, item in enumerate(exchanges):
            where = f"{path}: exchanges[{n}]"
            try:
                request, response = item["request"], item["response"]
                method, url = str(request["method"]), str(request["url"])
                status = int(response["status"])
                headers = {
                    str(k).lower(): str(v) for k, v in (response.get("headers") or {}).items()
                }
                if "body_json" in response:
                    body = json.dumps(response["body_json"], ensure_ascii=False).encode()
                    headers.setdefault("content-type", "application/json")
                else:
                    body = str(response.get("body", "")).encode()
            except (KeyError, TypeError, ValueError, AttributeError) as exc:
                raise CassetteError(
                    f"{where}: needs request.method, request.url and response.status ({exc})"
                ) from None
            digest = request.get("body_sha256")
            key = f"{method.upper()} {normalise_url(url)} {digest or '-'}"
            self.exchanges.setdefault(key, Recorded(status, headers, body))
        self.files.append(path)

    def lookup(self, key: str) -> Recorded | None:
        """The recorded response of a request key, or None."""
        return self.exchanges.get(key)

    def add(self, method: str, url: str, body: bytes, response: Recorded) -> None:
        """Record an exchange (the first one of a key wins, as in replay)."""
        key = request_key(method, url, body)
        with self._lock:
            if key in self.exchanges:
                return
            self.exchanges[key] = response
            self._order.append(
                {
                    "request": {
                        "method": method.upper(),
                        "url": url,
                        "body_sha256": body_digest(body),
                    },
                    "response": {
                        "status": response.status,
                        "headers": dict(response.headers),
                        "body": response.body.decode("utf-8", errors="replace"),
                    },
                }
            )

    def save(self, path: Path) -> None:
        """Write the recorded exchanges to ``path`` (atomically)."""
        with self._lock:
            text = yaml.safe_dump(
                {"toolproof_cassette": FORMAT, "exchanges": self._order},
                sort_keys=False,
                allow_unicode=True,
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(path)


def cassettes_digest(paths: list[Path]) -> str:
    """sha256 over the cassette files (sorted by name, contents and names both)."""
    files: list[Path] = []
    for path in paths:
        files.extend(sorted(path.glob("*.yaml")) if path.is_dir() else [path])
    digest = hashlib.sha256()
    for one in sorted(files, key=lambda p: p.name):
        digest.update(one.name.encode() + b"\0" + one.read_bytes() + b"\0")
    return digest.hexdigest()
