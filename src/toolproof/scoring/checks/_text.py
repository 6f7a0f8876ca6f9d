"""Small text helpers shared by the output and evidence checks."""

from __future__ import annotations

import json
import re
from typing import Any

_NUMBER = re.compile(
    r"(?<![A-Za-z_\d.-])(?:-?\d[\d,]*(?:\.\d+)?(?:[eE][-+]?\d+)?|-?\.\d+)(?![A-Za-z_\d])"
)


def numbers_in(text: str) -> list[float]:
    """Every number written in the text (thousands separators allowed), not the digits of
    an id or a word (``M2``, ``B13``, ``x86``, ``3rd``): an answer that lists ids does not
    state the numbers inside them."""
    out = []
    for match in _NUMBER.findall(text):
        try:
            out.append(float(match.replace(",", "")))
        except ValueError:
            continue
    return out


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out and out[key] != value:
            raise ValueError(
                f"field {key!r} is given twice ({out[key]!r} and {value!r}): commit to one"
            )
        out[key] = value
    return out


def parse_json_loose(text: str) -> Any:
    """Parse the JSON object between the first '{' and the last '}'.

    A field given twice with different values (two candidates) is refused.

    Raises:
        ValueError: there is no such object, it is not valid JSON, or a field is
            given twice with different values.
    """
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        raise ValueError("the answer holds no JSON object")
    return json.loads(text[start : end + 1], object_pairs_hook=_no_duplicates)


def norm(text: str, case_sensitive: bool) -> str:
    """Normalise for comparison."""
    return text if case_sensitive else text.lower()
