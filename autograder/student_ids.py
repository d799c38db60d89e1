"""The one rule for the form of a student id, wherever an id enters the course.

An id travels into file names (``submitted/<id>/``), the exchange's folder names, gradebook rows,
formgrader's pages and links, and the LMS files; the rule keeps every one of those places plain text.
"""

from __future__ import annotations

import unicodedata

#: Longest id accepted (nbgrader's gradebook column is 128; institutional ids are far shorter).
MAX_ID_CHARS = 64
#: Characters allowed besides letters and digits (never as the first character).
PUNCTUATION = "._-@"


def check_student_id(value, *, name: str = "student id") -> str:
    """``value`` in NFC if it has a safe form; ``ValueError`` naming what is wrong otherwise.

    Safe: 1 to ``MAX_ID_CHARS`` characters, each a letter or a digit (any script) or one of ``. _ - @``,
    the first a letter, a digit or ``_``. So no HTML, quotes, spaces, path separators, control characters,
    nbgrader's ``+`` and ``*``, and no leading ``- . @`` (options, hidden files, spreadsheet formulas).
    """
    if not isinstance(value, str):
        raise ValueError(f"{name}: expected text, got {type(value).__name__}")
    text = unicodedata.normalize("NFC", value)
    if not text:
        raise ValueError(f"{name}: is empty")
    if len(text) > MAX_ID_CHARS:
        raise ValueError(f"{name}: has {len(text)} characters, at most {MAX_ID_CHARS} are allowed")
    for char in text:
        if not (char.isalnum() or char in PUNCTUATION):
            raise ValueError(f"{name} {text[:MAX_ID_CHARS]!r}: the character {char!r} is not allowed "
                             f"(letters, digits and {' '.join(PUNCTUATION)} only)")
    if not (text[0].isalnum() or text[0] == "_"):
        raise ValueError(f"{name} {text!r}: must start with a letter, a digit or _")
    return text


def is_safe_student_id(value) -> bool:
    try:
        check_student_id(value)
    except ValueError:
        return False
    return True
