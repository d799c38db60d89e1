"""What a student id may look like: the one check, for every place an id enters the course.

A student id is a name nbgrader turns into folders (``submitted/<id>/``, the exchange's
``<id>+<assignment>+<time>`` inbox entries), gradebook keys, formgrader's links and pages, and
cells of CSV files that instructors open in spreadsheets. So it must be safe in all of them at once.
The rule (:func:`check_student_id`):

* 1 to :data:`~autograder.limits.STUDENT_ID_CHARS` (100) characters, the longest id the student package's own check takes
  (``course.variants.check_id_form``), well inside nbgrader's 128-character gradebook column and a
  file name's 255 bytes with the exchange's suffix;
* only ASCII letters, digits and ``.``, ``_``, ``-``, ``@``;
* first character a letter or a digit.

That admits what institutions and hubs use: Unix account names (on ``make hub`` the account name *is*
the nbgrader id: Debian's default ``NAME_REGEX``, ``^[a-z][-a-z0-9_]*$``, fits), matriculation numbers
(``s1234567``), ``ada.lovelace``, and e-mail addresses used as logins (``ada@uni.example``). It
excludes what would be read as something else somewhere: HTML (``<`` ``>`` ``&`` quotes), whitespace
and control characters, path separators (``/`` ``\\``) and a leading ``.`` (hidden files, ``..``), a
leading ``-`` (an option to a command), the spreadsheet formula starts ``=`` ``+`` ``-`` ``@`` (and
``+`` anywhere: the exchange's separator), and non-ASCII characters (no two ids that look alike but
differ in their bytes, or in Unicode normal form).

The check never changes an id (no trimming, no case folding): an id is either used exactly as given or
refused with a sentence naming what is wrong with it.

>>> check_student_id("ada.lovelace")
'ada.lovelace'
>>> check_student_id("=HYPERLINK(1)")
Traceback (most recent call last):
...
ValueError: student id '=HYPERLINK(1)' starts with '=', which a spreadsheet reads as a formula; a student id is 1 to 100 ASCII letters, digits, '.', '_', '-' and '@', starting with a letter or a digit (such as m6student1, s1234567, ada.lovelace or ada@uni.example)
"""

from __future__ import annotations

import re
import unicodedata

from autograder.limits import STUDENT_ID_CHARS

#: The whole rule as one expression (the checks below say which part a refused id breaks).
SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,%d}" % (STUDENT_ID_CHARS.value - 1))
RULE = (f"a student id is 1 to {STUDENT_ID_CHARS.value} ASCII letters, digits, '.', '_', '-' and '@', starting with a letter or a "
        "digit (such as m6student1, s1234567, ada.lovelace or ada@uni.example)")

_FIRST = {
    "=": "which a spreadsheet reads as a formula",
    "+": "which a spreadsheet reads as a formula",
    "@": "which a spreadsheet reads as a formula",
    "-": "which commands read as an option and a spreadsheet as a formula",
    ".": "which makes a hidden file name (or '..', the folder above)",
    "_": "(the first character must be a letter or a digit)",
}
_MARKUP = {"<": "HTML", ">": "HTML", "&": "HTML", '"': "HTML", "'": "HTML", "`": "HTML"}
_SEPARATORS = {"/": "a path separator", "\\": "a path separator", "+": "the exchange's separator"}


def _named(char: str) -> str:
    """A character as a message shows it: visible, with its code point when it is not plain ASCII."""
    if char.isascii() and char.isprintable() and not char.isspace():
        return repr(char)
    name = unicodedata.name(char, "")
    return f"U+{ord(char):04X}" + (f" ({name})" if name else "")


def problem_of(value) -> str | None:
    """What is wrong with ``value`` as a student id, in words, or None when it is one."""
    if not isinstance(value, str):
        return f"should be text, not {type(value).__name__}"
    if not value:
        return "is empty"
    if len(value) > STUDENT_ID_CHARS.value:
        return f"is {len(value)} characters long, more than {STUDENT_ID_CHARS.value}"
    for position, char in enumerate(value, 1):
        where = f"(character {position})"
        if unicodedata.category(char) in ("Cc", "Cf", "Cs", "Co", "Cn"):
            return f"holds the control character {_named(char)} {where}"
        if char.isspace():
            return f"holds whitespace, {_named(char)} {where}"
        if position == 1 and char in _FIRST:
            return f"starts with {char!r}, {_FIRST[char]}"
        if char in _SEPARATORS:
            return f"holds {char!r}, {_SEPARATORS[char]} {where}"
        if char in _MARKUP:
            return f"holds {char!r}, which {_MARKUP[char]} reads as markup {where}"
        if not char.isascii():
            return f"holds {_named(char)}, which is not ASCII {where}"
        if not (char.isalnum() or char in "._-@"):
            return f"holds {char!r} {where}"
    if not SAFE_ID.fullmatch(value):  # the two statements of the rule agree; this is a safety net
        return "does not fit the rule"
    return None


def check_student_id(value, what: str = "student id") -> str:
    """``value`` unchanged when it is a safe student id; otherwise ``ValueError`` naming the problem.

    ``what`` names the argument in the message (``--student``, ``roster line 4``, ...).

    >>> check_student_id("m6student1")
    'm6student1'
    >>> check_student_id("ann lee", "--student")
    Traceback (most recent call last):
    ...
    ValueError: --student 'ann lee' holds whitespace, U+0020 (SPACE) (character 4); a student id is 1 to 100 ASCII letters, digits, '.', '_', '-' and '@', starting with a letter or a digit (such as m6student1, s1234567, ada.lovelace or ada@uni.example)
    """
    problem = problem_of(value)
    if problem is None:
        return value
    if isinstance(value, str):  # repr: a control character or a lookalike stays visible
        shown = repr(value[:STUDENT_ID_CHARS.value + 20]) + ("..." if len(value) > STUDENT_ID_CHARS.value + 20 else "")
    else:
        shown = f"{type(value).__name__} value"
    raise ValueError(f"{what} {shown} {problem}; {RULE}")


def is_safe(value) -> bool:
    """Whether ``value`` is a safe student id (:func:`check_student_id` without the message)."""
    return isinstance(value, str) and SAFE_ID.fullmatch(value) is not None


__all__ = ["RULE", "SAFE_ID", "check_student_id", "is_safe", "problem_of"]
