"""Wrapping paragraphs to a width, with an optional hanging indent."""

from __future__ import annotations

from .tokenize import normalize_space


def wrap_paragraph(text: str, width: int = 72, *, indent: str = "", hanging: str = "") -> str:
    """Wrap ``text`` into lines of at most ``width`` characters (longer words stay whole).

    The first line starts with ``indent``, the following ones with ``hanging``.
    """
    if width <= len(indent) or width <= len(hanging):
        raise ValueError(f"width {width} leaves no room after the indent")
    lines: list[str] = []
    current = ""
    for word in normalize_space(text).split():
        if not current:
            current = (hanging if lines else indent) + word
        elif len(current) + 1 + len(word) > width:
            lines.append(current)
            current = hanging + word
        else:
            current = f"{current} {word}"
    if current:
        lines.append(current)
    return "\n".join(lines)
