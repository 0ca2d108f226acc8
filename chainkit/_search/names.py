"""NameWords: the words of each tool's name, and the tools whose names hold each word.

Used by the tool retriever: a name says the operation ("car_rental_pricing"), so the tool
whose name holds the most words of a request is a candidate for it even when the whole
question, dominated by a longer request, ranks it low.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)


class NameWords(Generic[K]):
    """The words of each key's name. Written by one thread at a time (under the caller's lock)
    and read by any number meanwhile: each entry is replaced whole, never changed in place."""

    def __init__(self) -> None:
        self._words: dict[K, frozenset[str]] = {}
        self._keys: dict[str, frozenset[K]] = {}

    def add(self, names: Mapping[K, Iterable[str]]) -> None:
        """Records the words of each key's name (a key already recorded is replaced); each
        word's keys are replaced once for the whole batch."""
        self.remove(names)
        added: dict[str, set[K]] = {}
        for key, words in names.items():
            self._words[key] = found = frozenset(words)
            for word in found:
                added.setdefault(word, set()).add(key)
        for word, keys in added.items():
            self._keys[word] = self._keys.get(word, frozenset()) | keys

    def remove(self, keys: Iterable[K]) -> None:
        """Forgets the names of `keys`; a key not recorded is skipped."""
        gone: dict[str, set[K]] = {}
        for key in keys:
            for word in self._words.pop(key, ()):
                gone.setdefault(word, set()).add(key)
        for word, removed in gone.items():
            left = self._keys[word] - removed
            if left:
                self._keys[word] = left
            else:
                del self._keys[word]

    def naming_most(self, words: Iterable[str]) -> set[K]:
        """The keys whose names hold the most of `words`, at least two of them (one word, such
        as "get" or "weather", is shared by too many names to say an operation)."""
        asked = frozenset(words)
        holders = [keys for keys in map(self._keys.get, asked) if keys]
        found: set[K] = set()
        for index, keys in enumerate(holders):
            for others in holders[index + 1 :]:
                found |= keys & others
        if not found:  # most requests: no name holds two of their words
            return found
        named = self._words
        shared = {key: len(named.get(key, frozenset()) & asked) for key in found}
        most = max(shared.values(), default=0)
        return {key for key, count in shared.items() if count == most}
