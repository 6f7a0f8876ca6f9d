"""Word statistics of a text."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from .tokenize import sentences, words

STOP_WORDS = frozenset({"a", "an", "and", "are", "in", "is", "it", "of", "on", "the", "to"})


def word_frequencies(text: str, *, skip_stop_words: bool = True) -> Counter[str]:
    """How often each word occurs."""
    found = words(text)
    if skip_stop_words:
        found = [w for w in found if w not in STOP_WORDS]
    return Counter(found)


@dataclass(frozen=True)
class TextStats:
    """Counts and averages of a text."""

    words: int
    sentences: int
    average_word_length: float
    top_words: tuple[tuple[str, int], ...]

    @classmethod
    def of(cls, text: str, top: int = 3) -> TextStats:
        """Compute the statistics of ``text``."""
        all_words = words(text)
        total_letters = sum(len(w) for w in all_words)
        average = round(total_letters / len(all_words), 2) if all_words else 0.0
        common = tuple(word_frequencies(text).most_common(top))
        return cls(len(all_words), len(sentences(text)), average, common)

    def summary(self) -> str:
        """One line for a report."""
        top = ", ".join(f"{word} ({count})" for word, count in self.top_words) or "-"
        return (
            f"{self.words} words in {self.sentences} sentences, "
            f"{self.average_word_length} letters a word; top: {top}"
        )
