import unittest

from textkit import TextStats, normalize_space, sentences, slugify, word_frequencies, words
from textkit.wrap import wrap_paragraph


class TextkitTest(unittest.TestCase):
    def test_tokens(self) -> None:
        self.assertEqual(normalize_space("  a \n b\t c "), "a b c")
        self.assertEqual(words("It's a well-known Fact."), ["it's", "a", "well-known", "fact"])
        self.assertEqual(sentences("One. Two! 3 is next? yes"), ["One.", "Two!", "3 is next? yes"])

    def test_slugs(self) -> None:
        self.assertEqual(slugify("Crème brûlée: the Chef's Guide"), "creme-brulee-the-chefs-guide")
        self.assertEqual(slugify("!!!"), "untitled")
        self.assertEqual(slugify("alpha beta gamma", max_length=10), "alpha-beta")

    def test_stats(self) -> None:
        text = "The cat sat. The cat ran to the mat."
        self.assertEqual(word_frequencies(text)["cat"], 2)
        stats = TextStats.of(text, top=1)
        self.assertEqual((stats.words, stats.sentences), (9, 2))
        self.assertEqual(stats.top_words, (("cat", 2),))
        self.assertIn("9 words in 2 sentences", stats.summary())

    def test_wrap(self) -> None:
        text = "one two three four five six"
        self.assertEqual(wrap_paragraph(text, 10), "one two\nthree four\nfive six")
        self.assertEqual(
            wrap_paragraph(text, 14, indent="- ", hanging="  "),
            "- one two\n  three four\n  five six",
        )


if __name__ == "__main__":
    unittest.main()
