"""Secrets scrubbed from everything an agent sees, in every encoding a service may echo them in.

A service that echoes its request (httpbin's ``/anything``, an error page quoting the URL, a
``Location`` header, a JSON dump of the query) rarely echoes a secret as the raw bytes the
proxy sent: a query parameter comes back URL-encoded (``%2F`` or ``%2f``, a space as ``+``), a
JSON body escapes it (``\\u0041``, ``\\/``), an auth header comes back base64-encoded (standard
or URL-safe, padded or not, and inside a longer blob at any byte alignment). A
:class:`Scrubber` matches each secret in all of these at once:

* per character: the raw UTF-8 bytes, each byte also as ``%XX`` (either hex case), a space
  also as ``+``, the character also as a JSON escape (``\\uXXXX`` in either hex case, a
  surrogate pair above U+FFFF, or the short forms ``\\"``, ``\\\\``, ``\\/``, ``\\n`` ...);
  the forms may mix within one occurrence;
* base64: for each of the three byte alignments a secret can start at inside a longer blob,
  the run of characters that depend on the secret's bytes alone, in the standard and the
  URL-safe alphabet (padding is outside that run, so padded and unpadded forms both match);
  each character of that run may itself be URL- or JSON-escaped, as above.

Each match becomes ``<redacted>``. Base64 runs of fewer than :data:`MIN_BASE64_CHARS`
characters (a secret of two or three bytes) are not matched: they would match unrelated text.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterable

REDACTED = b"<redacted>"

MIN_BASE64_CHARS = 4
"""The shortest base64 run matched (shorter ones would hit unrelated text)."""

_JSON_SHORT = {'"': b'\\\\"', "\\": b"\\\\\\\\", "/": b"\\\\/", "\b": b"\\\\b", "\f": b"\\\\f"}
_JSON_SHORT.update({"\n": b"\\\\n", "\r": b"\\\\r", "\t": b"\\\\t"})
"""JSON's two-character escapes, as regex source (a backslash doubled for the regex)."""


def _hex(value: int, digits: int) -> bytes:
    """Regex source matching ``value`` in hex with either letter case."""
    out = []
    for char in f"{value:0{digits}x}":
        out.append(f"[{char}{char.upper()}]" if char.isalpha() else char)
    return "".join(out).encode()


def _char(char: str) -> bytes:
    """Regex source matching one character in any of the encodings the module lists."""
    raw = b"".join(
        b"(?:" + re.escape(bytes([byte])) + b"|%" + _hex(byte, 2) + b")"
        for byte in char.encode("utf-8")
    )
    forms = [raw]
    if char == " ":
        forms.append(rb"\+")
    code = ord(char)
    if code > 0xFFFF:
        high, low = 0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)
        forms.append(rb"\\u" + _hex(high, 4) + rb"\\u" + _hex(low, 4))
    else:
        forms.append(rb"\\u" + _hex(code, 4))
    if char in _JSON_SHORT:
        forms.append(_JSON_SHORT[char])
    return b"(?:" + b"|".join(forms) + b")"


def _text(text: str) -> bytes:
    return b"".join(_char(c) for c in text)


def base64_runs(secret: bytes) -> set[str]:
    """The base64 characters that encode ``secret`` alone, for each byte alignment and both
    alphabets (the part of any blob holding the secret that depends on nothing else)."""
    runs: set[str] = set()
    for offset in range(3):
        encoded = base64.b64encode(bytes(offset) + secret).decode("ascii")
        first = -(-8 * offset // 6)  # the first character with no bit of the prefix
        last = 8 * (offset + len(secret)) // 6  # past the last with no bit of what follows
        run = encoded[first:last]
        if len(run) >= MIN_BASE64_CHARS:
            runs.add(run)
            runs.add(run.replace("+", "-").replace("/", "_"))
    return runs


def _forms(secret: str) -> list[str]:
    """The texts matched per character: the secret and its base64 runs."""
    return [secret, *sorted(base64_runs(secret.encode("utf-8")))]


def pattern(secret: str) -> bytes:
    """Regex source matching ``secret`` in every encoding the module lists."""
    return b"|".join(_text(form) for form in _forms(secret))


def _first_bytes(secrets: Iterable[str]) -> bytes:
    """Regex source of a class holding every byte a match can start with: a lookahead on it
    lets the regex engine skip most positions at once (about five times faster)."""
    firsts = {form[0].encode("utf-8")[:1] for s in secrets for form in _forms(s)}
    firsts |= {b"%", b"+", b"\\"}
    return b"[" + b"".join(re.escape(b) for b in sorted(firsts)) + b"]"


class Scrubber:
    """Replaces every occurrence of some secrets, in any encoding, with ``<redacted>``.

    Args:
        secrets: The secret values (empty ones are ignored).
    """

    def __init__(self, secrets: Iterable[str]) -> None:
        values = sorted({s for s in secrets if s}, key=len, reverse=True)
        self._regex = None
        if values:
            alternatives = b"|".join(b"(?:" + pattern(s) + b")" for s in values)
            self._regex = re.compile(b"(?=" + _first_bytes(values) + b")(?:" + alternatives + b")")

    def __call__(self, data: bytes) -> bytes:
        """``data`` with every occurrence replaced."""
        if self._regex is None:
            return data
        return self._regex.sub(REDACTED, data)

    def text(self, value: str) -> str:
        """Like calling it, for text (a header value, an error message)."""
        if self._regex is None:
            return value
        return self(value.encode("utf-8", "surrogateescape")).decode("utf-8", "surrogateescape")
