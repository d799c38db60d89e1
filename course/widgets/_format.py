"""Number formatting shared by the widget views and their tests.

A widget must never show a misleading number, so every value goes through
:func:`format_number`: finite values get a fixed number of decimals, ``inf``
and ``NaN`` are spelled out (the view puts the model's one-line reason next
to them), and :func:`parse_number` reads the text back for the tests.
"""

from __future__ import annotations

import html
import math

MINUS = "\u2212"


def format_number(value: float, digits: int = 6, *, scientific: bool = False) -> str:
    """Format a float for display.

    Parameters
    ----------
    value : float
        The number to show.
    digits : int, default 6
        Decimals after the point (or of the mantissa when ``scientific``).
    scientific : bool, default False
        Use exponent notation (for differences at round-off level).

    Returns
    -------
    str
        ``"inf"``, ``"−inf"`` or ``"NaN"`` for non-finite values, otherwise the
        number with a typographic minus sign.

    Examples
    --------
    >>> format_number(1 / 0.9 ** 3)
    '1.371742'
    >>> format_number(float("-inf"))
    '−inf'
    >>> format_number(-2.5e-17, 2, scientific=True)
    '−2.50e-17'
    """
    value = float(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else MINUS + "inf"
    text = f"{value:.{digits}e}" if scientific else f"{value:.{digits}f}"
    if text.startswith("-"):
        # "-0.000000" would suggest a negative value that is not there.
        if float(text) == 0.0:
            text = text[1:]
        else:
            text = MINUS + text[1:]
    return text


def parse_number(text: str) -> float:
    """Read back a number written by :func:`format_number`.

    Examples
    --------
    >>> parse_number("−inf")
    -inf
    >>> parse_number(" 0.800000 ")
    0.8
    """
    cleaned = text.strip().replace(MINUS, "-")
    if cleaned == "NaN":
        return math.nan
    return float(cleaned)


def value_html(name: str, value: float | str, reason: str | None = None, *, digits: int = 6,
               scientific: bool = False) -> str:
    """HTML for one labelled value: ``name``, the number, and a reason if any.

    The number sits in ``<span class="m6-num">`` and the reason in
    ``<span class="m6-reason">`` so that a browser test can read them.
    ``value`` may also be a preformatted string (for non-numeric values).
    """
    shown = value if isinstance(value, str) else format_number(value, digits, scientific=scientific)
    parts = [
        f'<span class="m6-name">{name}</span> ',
        f'<span class="m6-num" style="font-family: monospace; font-weight: 600">{html.escape(shown)}</span>',
    ]
    if reason:
        parts.append(
            f' <span class="m6-reason" style="color: #8a3b00">({html.escape(reason)})</span>'
        )
    # The widget's default line height (28 px) spreads wrapped reasons too far apart.
    return '<div style="line-height: 1.35">' + "".join(parts) + "</div>"
