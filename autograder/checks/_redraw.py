"""Random hidden inputs that keep the property their case relies on, under every student's seed.

A coding check's random cases are drawn per student (``variant.seed(...)``, see
:mod:`autograder.variants`). Some of them were picked to discriminate a misconception: a batch with a
padding position, a nucleus threshold far from every prefix sum, a ratio above the cap. With the
checks' own seeds those properties held by luck; with a student's seed they must hold by rule, so a
draw that lacks one is drawn again from the same generator. The first draw is kept when it already has
the property, which is what makes variant 0 (the checks' own seeds) byte-identical to the cases the
checks had before they varied.
"""

from __future__ import annotations

from typing import Callable, TypeVar

T = TypeVar("T")

#: Draws tried before giving up: every property guarded here holds for most draws, so running out
#: means the property (or the draw) is wrong, an authoring error.
ATTEMPTS = 1000


def redraw(draw: Callable[[], T], holds: Callable[[T], bool], what: str) -> T:
    """``draw()`` again (the same generator, further on) until ``holds`` is true of the result.

    ``what`` names the property for the error raised when ``ATTEMPTS`` draws all lack it."""
    for _ in range(ATTEMPTS):
        value = draw()
        if holds(value):
            return value
    raise RuntimeError(f"no random hidden input among {ATTEMPTS} draws has {what}: fix the draw or the property")


__all__ = ["ATTEMPTS", "redraw"]
