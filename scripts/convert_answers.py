"""Convert a task's one-number ``output`` check into a typed ``answer`` check (issue 31).

Usage: ``python scripts/convert_answers.py FILE...`` (edits the files in place, prints
what it did and what it left alone).

Only the plain case is converted, as text so that comments and layout stay:

* an ``output`` check whose only conditions are ``number`` (and ``tolerance``, ``name``,
  ``weight``) becomes ``kind: answer`` with ``type: {type: number}``, ``expected`` the
  number and the same tolerance;
* ``solution:`` gains ``submit:`` with the same value (the oracle hands it in);
* a level rule naming the old check ``output_N`` names ``answer_N`` (same index).

A task with ``user_turns`` or a user in conversation is left alone (submitting ends the
episode), and so is an output check that also asks for text (two facts in one answer),
or a task where another check (output, judge, evidence on the answer) reads the free
text: those are converted by hand, or stay free text.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

_ITEM = re.compile(r"^  - kind: output\s*$")
_FIELD = re.compile(r"^    (\w+): (.*)$")
_ALLOWED = {"number", "tolerance", "name", "weight"}


def convert(text: str) -> tuple[str, str]:
    """The converted text and what happened (``converted`` or why not)."""
    if re.search(r"^user_turns:", text, re.M) or re.search(r"mode: conversation", text):
        return text, "skipped: user turns or a conversation"
    lines = text.split("\n")
    try:
        start = lines.index("success:")
    except ValueError:
        return text, "skipped: no block-style success list"
    index = -1
    for n in range(start + 1, len(lines)):
        line = lines[n]
        if line and not line.startswith(" "):
            break
        if line.startswith("  - "):
            index += 1
        if not _ITEM.match(line):
            continue
        fields: dict[str, str] = {}
        end = n + 1
        while end < len(lines) and (m := _FIELD.match(lines[end])):
            fields[m[1]] = m[2]
            end += 1
        if "number" not in fields or set(fields) - _ALLOWED:
            return text, f"skipped: output check {sorted(fields)} is not a lone number"
        value = fields["number"]
        new = ["  - kind: answer"]
        if "name" in fields:
            new.append(f"    name: {fields['name']}")
        new.append("    type: {type: number}")
        new.append(f"    expected: {value}")
        for key in ("tolerance", "weight"):
            if key in fields:
                new.append(f"    {key}: {fields[key]}")
        lines[n:end] = new
        out = "\n".join(lines)
        out = out.replace("\nsolution:\n", f"\nsolution:\n  submit: {value}\n", 1)
        if "name" not in fields:
            out = re.sub(rf"\boutput_{index}\b", f"answer_{index}", out)
        if "kind: output" in out or "kind: judge" in out:
            return text, "skipped: another check reads the free-text answer"
        if "kind: evidence" in out and not re.search(r"where: (transcript|tool_args)", out):
            return text, "skipped: an evidence check reads the free-text answer"
        return out, "converted"
    return text, "skipped: no output check"


def main(argv: list[str]) -> int:
    """Convert each file named; print one line per file."""
    for name in argv:
        path = Path(name)
        text = path.read_text(encoding="utf-8")
        out, what = convert(text)
        if out != text:
            path.write_text(out, encoding="utf-8")
        print(f"{name}: {what}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
