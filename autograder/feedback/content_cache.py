"""Results of pure formatting functions, kept by content for the next page that shows the same text.

Every page of a class shows the same instructor cells (the exercise's Markdown, its locked code), and
many students hand in the same code: highlighting and rendering them again for each of a thousand
pages was most of a page's cost. A :class:`ContentCache` maps ``(what, text)`` to the markup a pure
function made of ``text``, so a page built from the cache is the page built without it, byte for
byte. It lives in one grading process (a pool or Dask worker): each process has its own, nothing of it
is ever written anywhere, and what it returns depends only on the text asked about.

It is bounded in characters (keys and values), not entries: student code is at most
``autograder.limits.HIGHLIGHT_CELL_CHARS`` per cell, and its Pygments markup up to 25 characters per character.
The least recently used entries go first; an entry larger than a tenth of the bound is never kept.
"""

from __future__ import annotations

import collections
from typing import Callable


class ContentCache:
    """An LRU map from ``(what, text)`` to a string, holding at most ``max_chars`` characters in all."""

    def __init__(self, max_chars: int):
        if not isinstance(max_chars, int) or max_chars < 0:
            raise ValueError(f"ContentCache: max_chars must be an int >= 0, got {max_chars!r}")
        self.max_chars = max_chars
        self.chars = 0
        self.hits = self.misses = 0
        self._entries: collections.OrderedDict = collections.OrderedDict()

    def get(self, what: str, text: str, make: Callable[[str], str]) -> str:
        """``make(text)``, from the cache when ``(what, text)`` was made before."""
        key = (what, text)
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
            self.hits += 1
            return found
        self.misses += 1
        value = make(text)
        size = len(what) + len(text) + len(value)
        if size <= self.max_chars // 10:
            self._entries[key] = value
            self.chars += size
            while self.chars > self.max_chars:
                (old_what, old_text), old = self._entries.popitem(last=False)
                self.chars -= len(old_what) + len(old_text) + len(old)
        return value

    def clear(self) -> None:
        self._entries.clear()
        self.chars = 0

    def __len__(self) -> int:
        return len(self._entries)


#: One per process: 16 M characters (some 16-64 MB) at the most.
PAGES = ContentCache(16_000_000)
