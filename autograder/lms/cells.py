"""What goes into one CSV cell: Unicode normalisation, spreadsheet safety, numbers.

Three rules, each in one place:

* **Comparison.** Ids and emails are compared after Unicode NFC normalisation (:func:`key`): a roster
  typed on one system and a gradebook filled on another may spell "José" with a precomposed "é"
  (NFC) or with "e" and a combining accent (NFD). :func:`loose_key` is the loosest comparison a
  Moodle database makes (MySQL's default collations ignore case and accents): two accounts equal
  under it may be one account to Moodle.
* **Spreadsheet safety** (OWASP, "CSV Injection"): a cell starting with ``= + - @``, a tab or a
  carriage return is a formula to Excel and LibreOffice. Free text (names, sections) gets a leading
  ``'`` (:func:`spreadsheet_text`). Ids are never altered, because the importer compares them byte
  for byte: an id that would need the quote is not written at all (:func:`formula_like`), and the
  student is listed instead.
* **Numbers** are plain decimals with at most four places, no exponent and no thousands separator
  (:func:`number`): what Canvas's converter and Moodle's ``unformat_float`` both read unchanged.
"""

from __future__ import annotations

import math
import unicodedata

#: First characters that make a spreadsheet cell a formula (OWASP's list).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def nfc(text: str) -> str:
    """``text`` in Unicode normal form C, stripped of surrounding whitespace.

    >>> nfc(" Jose\\u0301 ") == "Jos\\u00e9"
    True
    """
    return unicodedata.normalize("NFC", str(text)).strip()


def key(text: str) -> str:
    """The form in which ids and emails are compared: NFC, then case-folded.

    >>> key("Jose\\u0301@Uni.Example") == key("jos\\u00e9@uni.example")
    True
    """
    return nfc(text).casefold()


def loose_key(text: str) -> str:
    """The loosest equality a Moodle database applies to a user field (case and accents ignored).

    MySQL's and MariaDB's default collations (``utf8mb4_unicode_ci``, ``utf8mb4_0900_ai_ci``) compare
    ``José`` and ``jose`` as equal; PostgreSQL compares bytes. Two accounts equal here can be one
    account to some Moodle site, so the export refuses both.

    >>> loose_key("José@X.org") == loose_key("jose@x.org")
    True
    """
    decomposed = unicodedata.normalize("NFKD", str(text).strip())
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def has_control(text: str) -> bool:
    """True if ``text`` holds a control character (``\\n``, ``\\t``, NUL, ...).

    >>> has_control("ada\\n"), has_control("ada")
    (True, False)
    """
    return any(unicodedata.category(c) == "Cc" for c in text)


def formula_like(text: str) -> bool:
    """True if a spreadsheet would read a cell starting this way as a formula.

    >>> [formula_like(t) for t in ("=1+1", "-5", "@x", "\\tx", "ada", "")]
    [True, True, True, True, False, False]
    """
    return text.startswith(FORMULA_STARTS)


def clean_text(text: str) -> str:
    """Free text for a cell: NFC, control characters replaced by spaces, runs of spaces collapsed.

    >>> clean_text("Ada\\nLovelace\\t ")
    'Ada Lovelace'
    """
    text = "".join(" " if unicodedata.category(c) == "Cc" else c for c in nfc(text))
    return " ".join(text.split())


def spreadsheet_text(text: str) -> str:
    """Free text made safe to open in a spreadsheet: OWASP's leading ``'`` before a formula start.

    >>> spreadsheet_text('=HYPERLINK("http://x")'), spreadsheet_text("Ada")
    ('\\'=HYPERLINK("http://x")', 'Ada')
    """
    text = clean_text(text)
    return "'" + text if formula_like(text) else text


def number(value: float, places: int = 4) -> str:
    """A non-negative score as both importers read it: plain decimal, at most ``places`` places.

    >>> [number(v) for v in (87.5, 60.25, 8.35, 2 / 3 * 10, 0.0, 100.0, 1e-7)]
    ['87.5', '60.25', '8.35', '6.6667', '0', '100', '0']
    """
    value = float(value)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"a score must be a finite number >= 0, got {value!r}")
    text = f"{value:.{places}f}".rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text
