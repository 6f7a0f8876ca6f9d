"""The words a loose answer may use besides its value: an allowlist, so the reading fails closed.

A list of words that take a value back (``maybe``, ``not``, ``just kidding``) is never
complete: every language and every turn of phrase adds one. So once the loose reading
has found exactly the expected value and no rival, the rest of the message must be made
of words known to be neutral, or it commits to nothing:

- the value's own text, and every other candidate span the parser read (a number in
  words, a date with its month name, an id);
- :data:`FRAME`: a small fixed set of English words that carry no doubt, bound,
  negation or condition ("the answer is", "in total", "I checked");
- the task's own words: its prompt and the text of its world's records, minus
  :data:`NEVER` (words that could bound, negate or hedge, which a prompt may use
  innocently: "at least", "not", "or");
- the answer's declared words: its unit, its field names, its options, the words of
  the expected value.

Characters outside letters, digits, spaces, plain punctuation and currency signs (an
emoji shrug, a combining strike-through, ``?``, ``~``, ``<``, ``≈``, ``±``, ``|``) fail
closed too. The cost is a false negative on ``pass@loose`` only, for an honest answer in
other words; ``submit_answer`` (``pass@strict``) never depends on wording.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Iterator
from typing import Any

import regex

__all__ = [
    "FRAME",
    "NEVER",
    "Vocabulary",
    "answer_words",
    "task_texts",
    "unknown_words",
    "words_of",
]


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


FRAME = _words(
    """
    a an the this that these those it its there here what which who whom whose when where
    is are was be been being am has have had holds hold holding contains contain comes come
    came equals equal makes make gives give gets get got shows show showed shown says say
    said reports reported returns returned lists listed reads read of in on at to for from
    by with within across into onto per each every all both and as so then thus therefore
    hence overall altogether together combined grand total totals sum sums count counts
    number numbers amount amounts value values result results answer answers final figure
    quantity quantities currently current now today presently i we you your yours our ours
    my me us they them their he she him her his found find checked check looked look
    looking computed compute calculated calculate counted added add adds adding out based
    according ok okay done yes here's thats unit units item items piece pieces account
    accounts balance balances stock stocks date dates day days time times id ids status
    version versions file files path paths name names named called located location let
    know need anything else if help hope helps thanks thank please glad happy questions
    further exactly precisely confirmed s ve re ll m d
    """
)
"""Neutral words any loose answer may use (lower case)."""

NEVER = _words(
    """
    not no never none nothing nobody neither nor or either unless whether except but
    however although though yet maybe perhaps possibly probably likely unlikely
    approximately approx about around roughly nearly almost circa some least most more less
    fewer than over under above below between beyond up wrong incorrect false untrue bad
    invalid unverified unconfirmed guess guessed guessing estimate estimated estimation
    assume assuming assumed suppose supposedly allegedly apparently seems seem seemed think
    thought believe unsure sure uncertain unknown unclear doubt doubtful might may could
    would should can cannot cant won isn wasn aren weren don doesn didn instead rather
    other another else previous previously last old former formerly earlier before after
    until will soon later pending hypothetically theoretically kidding joke joking ignore
    disregard wait actually correction scratch mean meant sorry oops if when then
    """
)
"""Words never taken from the task's own text: they could bound, negate or hedge."""

_ENDINGS = ("s", "es", "d", "ed", "ing", "er", "ers")
"""Endings by which an inflected word is known from its stem."""

_WORD = regex.compile(r"[\p{L}\p{M}]+")
_MARK = regex.compile(r"\p{M}")
_ALLOWED_CHARS = regex.compile(r"[\p{L}\p{Nd}\s.,:;!'\"`*()\[\]\-/#%&@_+=\p{Sc}]")


def words_of(text: str) -> Iterator[str]:
    """The lower-case words of ``text`` (letters, split at anything else)."""
    for match in _WORD.finditer(text):
        yield match[0].lower()


class Vocabulary:
    """The words one task's loose answers may use besides their values."""

    def __init__(self, task_text: Iterable[str] = (), answer_text: Iterable[str] = ()) -> None:
        words: set[str] = set(FRAME)
        for text in task_text:
            words.update(w for w in words_of(text) if w not in NEVER)
        for text in answer_text:
            words.update(words_of(text))
        self.words = frozenset(words)

    def knows(self, word: str) -> bool:
        """Whether ``word`` is known, or an inflection of a known word (``booked`` of
        ``book``, ``accounts`` of ``account``, ``used`` of ``use``)."""
        if word in self.words:
            return True
        stems = [word[: -len(end)] for end in _ENDINGS if word.endswith(end)]
        stems += [stem + "e" for stem in stems]
        return any(len(stem) >= 3 and stem in self.words for stem in stems)

    def with_answer(self, answer_text: Iterable[str]) -> Vocabulary:
        """This vocabulary and the words of an answer's declaration."""
        out = Vocabulary()
        out.words = self.words | {w for text in answer_text for w in words_of(text)}
        return out


def answer_words(check: Any) -> list[str]:
    """The words an answer's declaration gives: its unit, field names, options, title and
    description, and the words of its expected value."""
    out: list[str] = [str(check.unit or "")]

    def walk(schema: Any) -> None:
        if not isinstance(schema, dict):
            return
        for key in ("title", "description"):
            if isinstance(schema.get(key), str):
                out.append(schema[key])
        for option in schema.get("enum") or []:
            out.append(str(option))
        for name, sub in (schema.get("properties") or {}).items():
            out.append(str(name).replace("_", " "))
            walk(sub)
        walk(schema.get("items"))

    walk(check.type)
    _texts(check.expected, out, [1_000])
    return out


def _texts(node: Any, out: list[str], budget: list[int], depth: int = 0) -> None:
    if budget[0] <= 0 or depth > 8:
        return
    if isinstance(node, str):
        budget[0] -= 1
        out.append(node[:500])
    elif isinstance(node, dict):
        for key, value in node.items():
            if isinstance(key, str):
                out.append(key[:200])
            _texts(value, out, budget, depth + 1)
    elif isinstance(node, list | tuple):
        for value in node:
            _texts(value, out, budget, depth + 1)


def task_texts(prompt: str, records: Any) -> list[str]:
    """The prompt and the text of a world's records (at most 5,000 strings)."""
    out = [prompt]
    _texts(records, out, [5_000])
    return out


def unknown_words(
    text: str, spans: Iterable[tuple[int, int]], vocabulary: Vocabulary, raw: str = ""
) -> str | None:
    """The first word or character of ``text`` (normalised), outside the value ``spans``,
    that the vocabulary does not know as neutral (None: every one is known). ``raw``: the
    text as the agent wrote it, for combining marks (normalising drops them)."""
    mark = _MARK.search(unicodedata.normalize("NFC", raw))  # a strike-through, even on the value
    if mark is not None:
        return f"the mark {mark[0]!r} (U+{ord(mark[0]):04X})"
    chars = list(text)
    for start, end in spans:
        for i in range(max(start, 0), min(end, len(chars))):
            chars[i] = " "
    rest = "".join(chars)
    for char in rest:
        if not _ALLOWED_CHARS.fullmatch(char):
            return repr(char)
    for word in words_of(rest):
        if not vocabulary.knows(word):
            return repr(word)
    return None
