"""Answers that commit: spotting an answer that offers several candidates for one fact.

An ``output`` check asks for one fact. An answer that hedges (names the right
value *and* a rival for the same fact) must not pass. The rule, with examples,
is in ``docs/writing-tasks.md`` ("Answers that commit"):

* **numbers**: a *rival* is another number in the answer of a compatible kind
  (same currency, percent or unit word, or a bare number) that is not within the
  tolerance of the expected value and is not one of the question's own figures.
  Numbers inside dates, times and ids (``2026-03-01``, ``10:30``, ``CHK-1``)
  are not numbers here. The answer hedges when a rival is joined to the
  expected value only by connectors (``12 or 15``, ``12/15``, ``12-15``,
  ``between 10 and 20``, ``12, 15``) or by nothing at all (``12 15``, and so a
  spray of numbers ``0 1 2 ... 199``), or when it names a rival and says it is
  unsure (``maybe``, ``perhaps``, ``possibly``, ``probably``, ``either``,
  ``not sure``, ``might be``, ``could be``, ...).
* **text** (``contains``, ``any_of``, ``equals``, and ``regex`` over the options
  its pattern accepts on their own; dates are options, bare figures are not): when
  the expected text is one
  of a set of options in the task's world (keys of one collection, or one
  field's values across a collection, three or more of them for the first rule),
  the answer hedges when it names every option, when a rival option is joined
  to the expected text only by connectors (``P3 or P4``), or when it names a
  rival and says it is unsure.

A check with ``allow_multiple: true`` skips all this (the task wants a list),
and every value the check itself expects is never a rival.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from toolproof.trajectory import Trajectory

CONNECTORS = frozenset(
    {
        "or",
        "either",
        "and",
        "and/or",
        "to",
        "between",
        "maybe",
        "perhaps",
        "possibly",
        "probably",
        "alternatively",
        "otherwise",
        "else",
        "/",
        "-",
        "\u2013",  # en dash
        "\u2014",  # em dash
        "~",
        "vs",
        "versus",
        "the",
        "a",
        "an",
    }
)
"""Words that, alone between two values, offer them as alternatives."""

UNSURE = re.compile(
    r"\b(?:maybe|perhaps|possibly|probably|either|alternatively|not\s+sure|unsure|"
    r"not\s+certain|uncertain|might\s+be|could\s+be|or\s+else|i\s+think|i\s+guess)\b",
    re.IGNORECASE,
)
"""Phrases that say the answer is not committed to one value."""

_CURRENCY_SIGNS = {"$": "usd", "€": "eur", "£": "gbp", "¥": "jpy"}
_CURRENCY_CODES = {
    "usd": "usd",
    "dollar": "usd",
    "dollars": "usd",
    "eur": "eur",
    "euro": "eur",
    "euros": "eur",
    "gbp": "gbp",
    "jpy": "jpy",
    "yen": "jpy",
    "chf": "chf",
}
_NUMBER = re.compile(r"^([($€£¥]*)(-?\d[\d,]*(?:\.\d+)?)(%?)([)\].,;:!?|]*)$")
_RANGE = re.compile(
    r"^([($€£¥]*-?\d[\d,.]*%?)([/\u2013\u2014~]|-)([($€£¥]*\d[\d,.]*%?[)\].,;:!?]*)$"
)
_GLUED = re.compile(r"(?<=[;|])")
"""Where one word holds a list (``41;42;43``, ``41|42``): split after each separator."""
_OPEN = "open"
_BARE = "bare"


@dataclass(frozen=True)
class _Num:
    value: float
    index: int
    kind: str


def _tokens(text: str) -> list[str]:
    out: list[str] = []
    for raw in (piece for word in text.split() for piece in _GLUED.split(word) if piece):
        match = _RANGE.match(raw)
        if match and raw.count("-") <= 1:  # 12-15, 12/15 (a date 2026-03-01 stays whole)
            out.extend([match.group(1), match.group(2), match.group(3)])
        else:
            out.append(raw)
    return out


def _word(token: str) -> str:
    return token.strip("()[].,;:!?\"'").lower()


def _numbers(tokens: list[str]) -> list[_Num]:
    found: list[_Num] = []
    for i, token in enumerate(tokens):
        match = _NUMBER.match(token)
        if match is None:
            continue
        try:
            value = float(match.group(2).replace(",", ""))
        except ValueError:
            continue
        sign = next((c for c in match.group(1) if c in _CURRENCY_SIGNS), None)
        after = _word(tokens[i + 1]) if i + 1 < len(tokens) else ""
        before = _word(tokens[i - 1]) if i > 0 else ""
        if sign is not None:
            kind = "cur:" + _CURRENCY_SIGNS[sign]
        elif match.group(3) == "%" or after in ("%", "percent"):
            kind = "pct"
        elif after in _CURRENCY_CODES:
            kind = "cur:" + _CURRENCY_CODES[after]
        elif before in _CURRENCY_CODES:
            kind = "cur:" + _CURRENCY_CODES[before]
        elif match.group(4) or not after:
            kind = _BARE  # ends a clause
        elif after in CONNECTORS:
            kind = _OPEN  # "12 or 15 EUR": takes the kind of what follows
        elif after.isalpha() or after.startswith("°"):
            kind = "unit:" + after.removesuffix("s")
        else:
            kind = _BARE
        found.append(_Num(value, i, kind))
    return found


def _compatible(a: str, b: str) -> bool:
    return a == b or {a, b} & {_BARE, _OPEN} != set()


def _only_connectors(words: Iterable[str], skip: frozenset[str] = frozenset()) -> bool:
    return all(w in CONNECTORS or w in skip or not w for w in words)


def number_hedge(answer: str, target: float, tolerance: float, question: str) -> str | None:
    """Why the answer offers a rival for ``target``, or None when it commits.

    Args:
        answer: The final answer.
        target: The expected number.
        tolerance: Absolute tolerance of the check.
        question: The task's description: its own figures are never rivals.

    Returns:
        A sentence naming the rival, or None.
    """
    tokens = _tokens(answer)
    numbers = _numbers(tokens)
    asked = [n.value for n in _numbers(_tokens(question))]
    hits = [n for n in numbers if abs(n.value - target) <= tolerance]
    rivals = [
        n
        for n in numbers
        if abs(n.value - target) > tolerance
        and not any(abs(n.value - q) <= max(tolerance, 1e-9) for q in asked)
        and any(_compatible(n.kind, h.kind) for h in hits)
    ]
    if not hits or not rivals:
        return None
    units = frozenset(_word(t) for t in tokens if _word(t) in _CURRENCY_CODES) | {"%"}
    for hit in hits:
        for rival in rivals:
            low, high = sorted((hit.index, rival.index))
            between = [_word(t) for t in tokens[low + 1 : high]]
            first = numbers_at(numbers, low)
            skip = units
            if first is not None and first.kind.startswith("unit:"):
                unit = first.kind.removeprefix("unit:")
                skip = skip | {unit, unit + "s"}
            listed = (
                bool(between)
                or tokens[low].endswith((",", ";", "|"))  # "12, 15" lists
                or (_plain(tokens[low]) and _plain(tokens[high]))  # so does "12 15" ("1 2 3 ...")
            )
            if listed and _compatible(hit.kind, rival.kind) and _only_connectors(between, skip):
                return f"it offers {_show(rival.value)} beside {_show(target)}"
    if UNSURE.search(answer):
        return f"it names {_show(rivals[0].value)} too and is not sure"
    return None


_PLAIN = re.compile(r"[$€£¥]?-?\d[\d,]*(?:\.\d+)?%?[.,;]?")


def _plain(token: str) -> bool:
    """A number alone in its token, not opening or closing a bracket (``(15`` in
    ``42 (15 + 27)`` shows the work; ``15 27`` side by side lists)."""
    return _PLAIN.fullmatch(token) is not None


def numbers_at(numbers: list[_Num], index: int) -> _Num | None:
    """The number at a token index, if any."""
    return next((n for n in numbers if n.index == index), None)


def _show(value: float) -> str:
    return f"{value:g}"


def _scalars(value: Any) -> Iterator[str]:
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, str | int | float):
        yield str(value)


def option_sets(records: Any) -> list[set[str]]:
    """Sets of options in a world: keys of one collection, one field's values across it."""
    sets: list[set[str]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if len(node) >= 2:
                sets.append({str(k) for k in node})
            entries = list(node.values())
        elif isinstance(node, list):
            entries = list(node)
        else:
            return
        rows = [e for e in entries if isinstance(e, dict)]
        if len(rows) >= 2:
            fields = {f for row in rows for f in row}
            for field in fields:
                values = {v for row in rows for v in _scalars(row.get(field))}
                if len(values) >= 2:
                    sets.append(values)
        for entry in entries:
            walk(entry)

    walk(records)
    return sets


def _mentions(text: str, option: str) -> list[re.Match[str]]:
    return list(re.finditer(_word_pattern(option), text, re.IGNORECASE))


def _names(text: str, option: str) -> bool:
    """Whether ``text`` names ``option`` as a word (the first match only)."""
    return re.search(_word_pattern(option), text, re.IGNORECASE) is not None


def _word_pattern(option: str) -> str:
    return rf"(?<![0-9A-Za-z]){re.escape(option)}(?![0-9A-Za-z])"


def _usable(option: str) -> bool:
    """An option distinctive enough to count: not a bare figure (``12``, ``3.5``), which
    turns up anywhere; a date (``2026-03-09``) is one."""
    if _DATE.fullmatch(option):
        return True
    return len(option) >= 2 and not re.fullmatch(r"[-\d.,\s]+", option)


_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def regex_options(pattern_matches: Callable[[str], object], records: Any) -> list[str]:
    """The world's options that a regex check's pattern matches on their own (``R3`` for
    ``\\bR3\\b``): the texts it expects, for the option rule of :func:`text_hedge`.

    Args:
        pattern_matches: ``text -> True``, the check's own match (its flags and timeout);
            anything else (False, a timeout) is no match, and a timeout ends the scan,
            so a backtracking pattern costs one timeout, not one per option.
        records: The world's initial records.
    """
    seen: dict[str, None] = {}
    for options in option_sets(records):
        for option in options:
            if option in seen or not _usable(option):
                continue
            matched = pattern_matches(option)
            if matched is True:
                seen[option] = None
            elif matched is not False:  # timed out
                return list(seen)
    return list(seen)


def text_hedge(
    answer: str, expected: list[str], records: Any, question: str, *, any_of: bool = False
) -> str | None:
    """Why the answer offers rival options beside an expected text, or None.

    Args:
        answer: The final answer.
        expected: The texts the check expects (``contains``, ``any_of`` or ``equals``).
        records: The world's initial records, where the option sets come from.
        question: The task's description: options it names are never rivals.
        any_of: The texts are alternatives (only those that appear are checked).

    Returns:
        A sentence naming the rivals, or None.
    """
    wanted = {e.lower() for e in expected}
    present = [e for e in expected if _mentions(answer, e)] if any_of else expected
    for item in present:
        if not _usable(item):
            continue
        for options in option_sets(records):
            lowered = {o.lower() for o in options}
            if item.lower() not in lowered:
                continue
            rivals = sorted(
                o
                for o in options
                if o.lower() not in wanted
                and _usable(o)
                and o.lower() not in item.lower()
                and item.lower() not in o.lower()
                and not _mentions(question, o)
            )
            named = [o for o in rivals if _mentions(answer, o)]
            if not named:
                continue
            if len(options) >= 3 and len(named) == len(rivals):
                return f"it names every option ({', '.join([item, *named])})"
            if _joined(answer, item, named):
                return f"it offers {named[0]!r} beside {item!r}"
            if UNSURE.search(answer):
                return f"it names {named[0]!r} too and is not sure"
    return None


def _joined(answer: str, item: str, rivals: list[str]) -> bool:
    for mine in _mentions(answer, item):
        for rival in rivals:
            for other in _mentions(answer, rival):
                low, high = sorted((mine, other), key=lambda m: m.start())
                gap = answer[low.end() : high.start()]
                words = [_word(w) for w in re.split(r"[\s,]+", gap)]
                if _only_connectors(words):
                    return True
    return False


def dumped(text: str, expected: list[str], sets: list[set[str]], question: str) -> set[str]:
    """The expected texts ``text`` names only as part of naming every option of their set.

    An answer that lists every contact names the two it should point out, but points
    out none of them: for each option set of the world (:func:`option_sets`; three or
    more options) holding an expected text and at least two other options beside the
    expected ones, when ``text`` names every one of those others (those the question
    names aside), the expected texts of that set are dumped. A set made of expected
    texts only (list every product), or with one other option (a fourth meeting a right
    answer may name beside the three required), is not.
    """
    wanted = {e.lower(): e for e in expected if _usable(e)}
    out: set[str] = set()
    for options in sets:
        if len(options) < 3:
            continue
        mine = [wanted[o] for o in {o.lower() for o in options} if o in wanted]
        if not mine:
            continue
        rivals = [
            o for o in options if o.lower() not in wanted and _usable(o) and not _names(question, o)
        ]
        if len(rivals) >= 2 and all(_names(text, o) for o in rivals):
            out.update(mine)
    return out


DUMP_MIN_VALUES = 8
"""Worlds with fewer distinct values than this are never read as dumped (too few to tell)."""
DUMP_SHARE = 0.6
"""The share of a world's values a text must name to be a dump of it."""
_DUMP_MAX_VALUES = 2000


def world_values(records: Any, question: str) -> list[str]:
    """The distinct, distinctive values of a world that the question does not name: the
    keys of its collections (ids: a mapping whose values are all records) and the text of
    every scalar, bare figures aside (at most 2,000)."""
    seen: dict[str, None] = {}

    def walk(node: Any, depth: int) -> None:
        if len(seen) >= _DUMP_MAX_VALUES or depth > 8:
            return
        if isinstance(node, dict):
            rows = len(node) >= 2 and all(isinstance(v, dict) for v in node.values())
            for key, value in node.items():
                if rows and _usable(str(key)):  # a collection's ids, not field names
                    seen.setdefault(str(key).lower(), None)
                walk(value, depth + 1)
        elif isinstance(node, list):
            for value in node:
                walk(value, depth + 1)
        else:
            for text in _scalars(node):
                if _usable(text) and len(text) <= 200:
                    seen.setdefault(text.lower(), None)

    walk(records, 0)
    asked = question.lower()  # a value the question names is in it: the regex only then
    return [v for v in seen if v not in asked or not _names(question, v)]


def world_dump(text: str, values: list[str]) -> str | None:
    """Why ``text`` is a dump of the world (it names most of its values), or None.

    An answer that repeats every id, date and name it read contains whatever a check
    expects without committing to any of it. A text that names at least
    :data:`DUMP_SHARE` of a world's distinct values (:func:`world_values`; worlds of at
    least :data:`DUMP_MIN_VALUES` of them) is one.
    """
    if len(values) < DUMP_MIN_VALUES:
        return None
    lowered = text.lower()
    named = sum(1 for v in values if v in lowered and _names(text, v))
    if named >= DUMP_SHARE * len(values):
        return f"it repeats most of the world ({named} of its {len(values)} values)"
    return None


DOUBT = re.compile(
    r"(?<![\w])(?:maybe|perhaps|possibly|probably|not\s+sure|unsure|not\s+certain|uncertain|"
    r"might\s+be|could\s+be|i\s+think|i\s+guess|or\s+maybe\s+not|quiz[aá]s|tal\s+vez|"
    r"no\s+estoy\s+segur[oa]|vielleicht|nicht\s+sicher|peut[-\s][eê]tre|pas\s+s[uû]r|forse|"
    r"non\s+sono\s+sicur[oa]|talvez|n[aã]o\s+tenho\s+certeza|misschien|"
    r"not\s+true|untrue|not\s+the\s+case|is\s+wrong|is\s+incorrect|is\s+false|es\s+falso|"
    r"no\s+es\s+cierto|stimmt\s+nicht|ist\s+falsch|c'est\s+faux|n'est\s+pas\s+vrai)(?![\w])"
    r"|(?:也许|可能|不确定|たぶん|多分)",
    re.IGNORECASE,
)
"""Phrases by which an answer doubts or denies what it says, in the languages most seen."""


def self_doubt(answer: str) -> str | None:
    """Why a free-text answer commits to nothing it states, or None.

    An answer that says it is unsure (``maybe``, ``not sure``, ``quizás``, ``vielleicht``)
    or denies its own statement (``it is not true that``, ``es falso``) offers the right
    words without standing by them: it fails every ``output`` check, whatever else it
    names. No reference answer of the built-in suites uses these phrases; a clarifying
    question asks without them (``Which one should I pay?``).
    """
    found = DOUBT.search(answer)
    if found is None:
        return None
    return f"it doubts or denies what it says ({found[0]!r})"


PASTED_MIN_CHARS = 12
"""A tool result at least this long, found verbatim in the answer, makes it a dump."""

PASTED_PROSE_MIN_CHARS = 40
"""The same for a free-text (``output``) answer: a short result quoted word for word (a
one-line file, a status) may be the honest answer there, a long one is a dump."""


def pasted_output(
    text: str, trajectory: Trajectory, min_chars: int = PASTED_MIN_CHARS
) -> str | None:
    """Why a free-text answer is a paste of tool output rather than a stated value, or None.

    The loose reading looks for the one value the answer commits to; an answer that
    copies what a tool returned (a result of at least :data:`PASTED_MIN_CHARS`
    characters, whitespace aside) hands the reader the tool's output to pick from instead.
    """
    flat = " ".join(text.split())
    for call, outcome in trajectory.tool_calls():
        if outcome is None or outcome.is_error:
            continue
        pasted = " ".join(outcome.content.split())
        if len(pasted) >= min_chars and pasted in flat:
            return f"it repeats the result of {call.name} word for word"
    return None
