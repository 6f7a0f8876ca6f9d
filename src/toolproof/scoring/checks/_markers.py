"""Words and signs that keep a free-text answer from committing to the value it names.

The loose reader (:mod:`._loose`) refuses an answer whose value is denied, doubted,
bounded, asked, made conditional, retracted or attributed to something else, in the
languages it knows. Two reaches:

* **anywhere in the message** (:data:`DOUBT`): doubt and retraction (``maybe``, ``I
  think``, ``not sure``, ``quizás``, ``vielleicht``, ``peut-être``, ``scratch that``,
  ``I mean``, ``never mind``): one such word takes back every value in the message;
* **in the sentence of the value** (:data:`CLAUSE`): negation (``not``, ``no es``,
  ``n'est pas``, ``nicht``, ``не``), approximation and bounds (``about``, ``at least``,
  ``up to``, ``before``, ``after``, ``environ``, ``etwa``, ``unos``), condition (``if``,
  ``unless``, ``si``, ``wenn``), alternatives (``or``, ``o``, ``oder``, ``ou``) and
  deflection (``other``, ``another``, ``instead``, ``otro``, ``autre``, ``andere``); a
  question mark ending the sentence; and, right next to the value, a sign that bounds
  or doubts it (``~42``, ``≈42``, ``≤ 42``, ``> 42``, ``42+``, ``42±4``, ``42?``).
"""

from __future__ import annotations

import bisect
import re

__all__ = ["CLAUSE", "DOUBT", "SIGNS_AFTER", "SIGNS_BEFORE", "Sentences", "sentence_of"]


def _words(*phrases: str) -> str:
    return "|".join(p.replace(" ", r"\s+") for p in phrases)


DOUBT = re.compile(
    r"(?<![\w])(?:"
    + _words(
        "maybe", "perhaps", "possibly", "probably", "likely", "unlikely", "presumably",
        "not sure", "not certain", "unsure", "uncertain", "i think", "i guess", "i believe",
        "i assume", "i suppose", "i'd say", "it seems", "seems", "appears", "might", "may be",
        "could be", "should be", "would be", "guess", "estimate", "estimated", "ballpark",
        "alternatively", "either", "or else", "scratch that", "strike that", "disregard",
        "ignore that", "ignore the", "never mind", "nevermind", "i mean", "i meant",
        "or rather", "make that", "correction", "i take that back", "retract", "oops",
        "sorry", "wait", "quiz[aá]s", "tal vez", "acaso", "probablemente", "no estoy seguro",
        "creo", "supongo", "quiero decir", "perd[oó]n", "olvida", "vielleicht", "eventuell",
        "wahrscheinlich", "vermutlich", "ich glaube", "ich denke", "nicht sicher",
        "ich meine", "vergiss", "peut[-\\s]?[eê]tre", "probablement", "sans doute",
        "je pense", "je crois", "pas s[uû]r", "je veux dire", "oubliez", "forse",
        "probabilmente", "credo", "penso", "talvez", "provavelmente", "acho", "misschien",
        "waarschijnlijk", "может быть", "наверное", "возможно", "allegedly", "supposedly",
        "apparently", "reportedly", "unconfirmed", "unverified", "tentative", "tentatively",
        "provisional", "provisionally", "preliminary", "as of now", "for now", "last i checked",
        "in theory", "on paper", "nominally", "pending confirmation", "subject to change",
        "projected", "if correct", "ربما", "شايد", "शायद", "아마",
    )
    + r")(?![\w])|(?:也许|或许|可能|大概|我觉得|たぶん|多分|かもしれ|おそらく)",
    re.IGNORECASE,
)  # fmt: skip
"""Doubt and retraction: anywhere in the message, they take every value back."""

CLAUSE = re.compile(
    r"(?<![\w])(?:"
    + _words(
        # negation
        "not", "no", "never", "none", "neither", "nor", "isn't", "aren't", "wasn't",
        "weren't", "doesn't", "don't", "didn't", "cannot", "can't", "won't", "wrong",
        "incorrect", "false", "untrue", "nicht", "kein", "keine", "keinen", "nie",
        "niemals", "falsch", "pas", "non", "jamais", "ni", "faux", "nunca", "jam[aá]s",
        "tampoco", "ning[uú]n", "ninguna", "nem", "n[aã]o", "nenhum", "niet", "geen",
        "nooit", "mai", "nessuno", "не", "нет", "ні",
        # approximation and bounds
        "about", "approximately", "approx", "around", "roughly", "circa", "ca", "nearly",
        "almost", "some", "over", "under", "above", "below", "more than", "less than",
        "fewer than", "at least", "at most", "up to", "upwards of", "or so", "give or take",
        "plus or minus", "between", "range", "ranging", "somewhere", "ish", "environ",
        "presque", "au moins", "au plus", "plus de", "moins de", "etwa", "ungef[aä]hr",
        "rund", "fast", "mindestens", "h[oö]chstens", "mehr als", "weniger als", "unos",
        "unas", "aproximadamente", "alrededor", "cerca", "casi", "al menos", "m[aá]s de",
        "menos de", "almeno", "quasi", "pi[uù] di", "meno di", "pelo menos", "mais de",
        "quase", "ongeveer", "около", "примерно", "before", "after", "until", "till",
        "since", "no later than", "no earlier than", "earliest", "latest", "vor", "nach",
        "bis", "seit", "avant", "apr[eè]s", "antes", "despu[eé]s", "hasta", "prima",
        "dopo", "entro", "до", "после", "rounded", "rounding", "minimum", "maximum",
        "north of", "south of", "plus", "minus", "doubled", "halved", "times", "each", "per",
        "net", "gross", "excluding", "including", "expected", "ليس", "لا", "حوالي", "تقريبا",
        "नहीं", "लगभग", "약",
        # condition and alternatives
        "if", "unless", "assuming", "provided", "otherwise", "depending", "whether",
        "or", "si", "sinon", "wenn", "falls", "sonst", "andernfalls", "o", "u", "oder",
        "ou", "oppure", "ovvero", "или", "либо",
        # the value given for something else
        "other", "another", "else", "instead", "different", "otro", "otra", "autre",
        "andere", "anderen", "anderes", "altro", "altra", "outro", "outra", "другой",
    )
    + r")(?![\w])|[~±≈≃\u223c<>≤≥⩽⩾≲≳]"
    r"|(?:不是|不|没有|没|非|無|无|ない|아니|或者|或|其他|还是|または|か\?|大约|约|左右"
    r"|以上|以下|至少|最多|約|くらい|ぐらい|程度|前後|ではない|じゃない)",
    re.IGNORECASE,
)  # fmt: skip
"""Negation, bounds, condition, alternatives and deflection: in the value's sentence."""

SIGNS_BEFORE = frozenset("~≈≃\u223c<>≤≥⩽⩾±≲≳")
"""A sign right before a value bounds or approximates it (``~42``, ``≤ 42``)."""

SIGNS_AFTER = frozenset("+±?~†‡")
"""A sign right after a value opens it up, asks it or hangs a footnote on it (``42+``,
``42±4``, ``42?``, ``42†``); so does a lone ``*`` (``42*``, not ``**42**``) or ``ish``."""

_SENTENCE_END = re.compile(r"[.;!?\n](?=\s|$)|[\n\u3002\uff01\uff1f]")


class Sentences:
    """The sentences of one text, split once (a long answer names its value many times)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._ends = [m.end() for m in _SENTENCE_END.finditer(text)]
        self._seen: dict[tuple[int, int], str | None] = {}

    def _span(self, start: int, end: int) -> tuple[int, int]:
        i = bisect.bisect_right(self._ends, start)
        begin = self._ends[i - 1] if i else 0
        j = bisect.bisect_right(self._ends, end)
        return begin, self._ends[j] if j < len(self._ends) else len(self.text)

    def around(self, start: int, end: int) -> str:
        """The sentence holding ``text[start:end]``, with its closing mark, and the three
        words before it (so ``ca. 42`` and ``approx. 42`` keep their abbreviation)."""
        begin, finish = self._span(start, end)
        lead = " ".join(self.text[max(0, begin - 80) : begin].split()[-3:])
        return f"{lead} {self.text[begin:finish]}"

    def afterthought(self) -> str | None:
        """A fragment of a sentence, four words at most, that takes a value back wherever it
        stands (``42. Or not.``, ``No. 42.``, ``Or less.``), if any."""
        begin = 0
        for finish in [*self._ends, len(self.text)]:
            fragment = self.text[begin:finish]
            begin = finish
            if not fragment.strip() or len(fragment.split()) > 4:
                continue
            hit = CLAUSE.search(fragment)
            if hit is not None:
                return hit[0]
        return None

    def marker(self, start: int, end: int) -> str | None:
        """What in the sentence of ``text[start:end]`` takes a value back (:data:`CLAUSE`,
        or a question), looked for once per sentence."""
        span = self._span(start, end)
        if span not in self._seen:
            sentence = self.around(start, end)
            hit = CLAUSE.search(sentence)
            question = sentence.rstrip().endswith(("?", "\uff1f")) or "¿" in sentence
            self._seen[span] = "a question" if question else (None if hit is None else hit[0])
        return self._seen[span]


def sentence_of(text: str, start: int, end: int) -> str:
    """:meth:`Sentences.around` for one occurrence."""
    return Sentences(text).around(start, end)
