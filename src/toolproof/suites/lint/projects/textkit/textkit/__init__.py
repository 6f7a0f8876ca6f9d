"""textkit: small text utilities."""

from .slugify import slugify
from .stats import TextStats, word_frequencies
from .tokenize import normalize_space, sentences, words
from .wrap import wrap_paragraph

__all__ = [
    "TextStats",
    "normalize_space",
    "sentences",
    "slugify",
    "word_frequencies",
    "words",
    "wrap_paragraph",
]
