"""`BooleanParser`: a yes or no answer, in a few languages."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from chainkit._text import described
from chainkit.parsers._answer import bare
from chainkit.parsers.base import Parser, checked_text
from chainkit.parsers.errors import ParseError, ParserConfigError, ParserTypeError

YES_NO: Final[Mapping[str, bool]] = {
    **dict.fromkeys(("yes", "y", "true", "oui", "ja", "sí", "si", "sim", "да"), True),
    **dict.fromkeys(("no", "n", "false", "non", "nein", "não", "nao", "нет"), False),
    **dict.fromkeys(("是", "对", "對", "はい"), True),
    **dict.fromkeys(("否", "不", "错", "錯", "いいえ"), False),
}
"""The words `BooleanParser` reads by default (English, French, German, Spanish, Italian,
Portuguese, Russian, Chinese, Japanese), in lower case."""


class BooleanParser(Parser):
    """True or False from the first word of the reply: yes/no, true/false and their French,
    German, Spanish, Italian, Portuguese, Russian, Chinese (是/否) and Japanese counterparts
    (`YES_NO`), in any case, with quotes, bold marks or a full stop around ("**Yes.**", "是的",
    "No, it is not"). `words` replaces them: `{"approve": True, "reject": False}`. A reply
    that starts with none raises `ParseError`.
    """

    output_type = bool

    def __init__(self, words: Mapping[str, bool] | None = None, *, max_retries: int = 0) -> None:
        super().__init__(max_retries=max_retries)
        self.words = YES_NO if words is None else _checked_words(words)
        # Longest first, so that "non" is not read as "n" and "no".
        self._ordered = sorted(self.words, key=len, reverse=True)

    def parse(self, text: str) -> bool:
        answer = bare(checked_text(self, text)).casefold()
        for word in self._ordered:
            if answer.startswith(word) and _ends_at(answer, len(word), word):
                return self.words[word]
        raise ParseError(self.name, self._expected(), text)

    def instructions(self) -> str:
        return f"Answer with {self._expected()}, and nothing else."

    def _expected(self) -> str:
        if self.words is YES_NO:
            return "yes or no"
        yes = next(word for word, value in self.words.items() if value)
        no = next(word for word, value in self.words.items() if not value)
        return f"{yes} or {no}"


_WORD_ENDS: Final = frozenset(" \t\r\n,.;:!?)…，。！？、")
"""What may follow the answer's first word: not a letter, nor "/" ("n/a", "yes/no")."""


def _ends_at(answer: str, end: int, word: str) -> bool:
    """Whether the word ends there (a word in a script written without spaces ends
    anywhere)."""
    return end == len(answer) or answer[end] in _WORD_ENDS or _unspaced(word)


def _unspaced(word: str) -> bool:
    """Chinese and Japanese: scripts written without spaces between words."""
    return any("\u3040" <= char <= "\u30ff" or "\u4e00" <= char <= "\u9fff" for char in word)


def _checked_words(words: object) -> dict[str, bool]:
    if not isinstance(words, Mapping):
        raise ParserTypeError(
            f"BooleanParser words must map words to True or False, got {described(words)}"
        )
    checked: dict[str, bool] = {}
    for word, value in words.items():
        if not isinstance(word, str) or not word.strip() or not isinstance(value, bool):
            raise ParserTypeError(
                "BooleanParser words must map non-empty words (str) to True or False, got "
                f"{described(word)}: {described(value)}"
            )
        checked[word.strip().casefold()] = value
    if set(checked.values()) != {True, False}:
        raise ParserConfigError(
            "BooleanParser words need at least one word for True and one for False, got "
            f"{sorted(checked)}"
        )
    return checked
