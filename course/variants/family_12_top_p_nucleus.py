"""Exercise 12's variants: four sorted base probabilities whose two most likely tokens reach top_p = 0.80 exactly.

What varies: the distribution ``p = (p0, p1, p2, p3)`` of token ids 0..3 (strictly decreasing,
multiples of 0.005, summing to 1).

What is held, because it is the lesson:

* the thresholds 0.80 (Part A) and 0.81 (Part B): the answers' names (``kept_080``, ``nucleus_081``)
  carry them;
* ``p0 + p1 = 0.80`` exactly, so the Part A nucleus is tokens {0, 1}, the threshold reached exactly
  by the token that stays in, and 0.81 needs exactly one more token (``p2 > 0.01``); the nucleus at
  0.81 is never the whole vocabulary, so "kept one too many" is always a wrong answer;
* the float trap of the seed: an engine's float64 softmax of the logits ``log p`` (``exp(z - max z)``
  divided by its sum, as the notebook's last section computes it) summed by a running sum stops one
  ulp short of 0.80 at the second token, so a rule without a tolerance keeps three tokens; and
  transformers' ascending rule (drop a token while the ascending running sum is at most
  ``1 - top_p``) keeps three tokens in float64, as it does for the seed.

The drawn distributions are a literal table, not floats tested at draw time: NumPy's SIMD ``log``
and ``exp`` may round differently on another processor, and a student's machine and the grader
must draw the same numbers. The table holds every distribution of the 0.005 grid with the
properties above when the softmax is computed with NumPy, with the C library's ``math.log`` and
``math.exp``, and with correctly rounded ``log`` and ``exp`` (mpmath), less those whose two top
tokens are the seed's 0.50 and 0.30 (their Part A answer is the published one); the tests check
every entry again. The seed itself is variant 0 and is never drawn.
"""

from course.variants import Draw, Family

#: Top-p thresholds per answer suffix (held: the answer names carry them).
THRESHOLDS = {"080": 0.80, "081": 0.81}

#: The distributions a student can draw (see the module's docstring for how they were chosen).
DISTRIBUTIONS = (
    (0.415, 0.385, 0.105, 0.095), (0.415, 0.385, 0.11, 0.09), (0.415, 0.385, 0.12, 0.08),
    (0.415, 0.385, 0.125, 0.075), (0.415, 0.385, 0.135, 0.065), (0.415, 0.385, 0.15, 0.05),
    (0.415, 0.385, 0.155, 0.045), (0.415, 0.385, 0.165, 0.035), (0.415, 0.385, 0.17, 0.03),
    (0.415, 0.385, 0.18, 0.02), (0.415, 0.385, 0.185, 0.015), (0.415, 0.385, 0.195, 0.005),
    (0.455, 0.345, 0.15, 0.05), (0.455, 0.345, 0.165, 0.035), (0.455, 0.345, 0.17, 0.03),
    (0.48, 0.32, 0.175, 0.025), (0.48, 0.32, 0.19, 0.01),
    (0.485, 0.315, 0.105, 0.095), (0.485, 0.315, 0.165, 0.035),
    (0.55, 0.25, 0.105, 0.095), (0.55, 0.25, 0.125, 0.075), (0.55, 0.25, 0.165, 0.035),
    (0.55, 0.25, 0.185, 0.015), (0.55, 0.25, 0.19, 0.01),
    (0.555, 0.245, 0.165, 0.035), (0.555, 0.245, 0.19, 0.01),
    (0.565, 0.235, 0.105, 0.095), (0.565, 0.235, 0.11, 0.09), (0.565, 0.235, 0.115, 0.085),
    (0.565, 0.235, 0.12, 0.08), (0.565, 0.235, 0.125, 0.075), (0.565, 0.235, 0.155, 0.045),
    (0.565, 0.235, 0.16, 0.04), (0.565, 0.235, 0.165, 0.035), (0.565, 0.235, 0.17, 0.03),
    (0.565, 0.235, 0.175, 0.025), (0.565, 0.235, 0.18, 0.02), (0.565, 0.235, 0.185, 0.015),
    (0.565, 0.235, 0.19, 0.01), (0.565, 0.235, 0.195, 0.005),
    (0.57, 0.23, 0.11, 0.09), (0.57, 0.23, 0.135, 0.065), (0.57, 0.23, 0.14, 0.06),
    (0.57, 0.23, 0.145, 0.055), (0.57, 0.23, 0.18, 0.02), (0.57, 0.23, 0.185, 0.015),
    (0.57, 0.23, 0.19, 0.01),
    (0.575, 0.225, 0.165, 0.035), (0.575, 0.225, 0.185, 0.015), (0.575, 0.225, 0.19, 0.01),
    (0.58, 0.22, 0.11, 0.09), (0.58, 0.22, 0.115, 0.085), (0.58, 0.22, 0.12, 0.08),
    (0.58, 0.22, 0.135, 0.065), (0.58, 0.22, 0.14, 0.06), (0.58, 0.22, 0.145, 0.055),
    (0.58, 0.22, 0.155, 0.045), (0.58, 0.22, 0.165, 0.035), (0.58, 0.22, 0.17, 0.03),
    (0.58, 0.22, 0.175, 0.025), (0.58, 0.22, 0.18, 0.02), (0.58, 0.22, 0.195, 0.005),
    (0.585, 0.215, 0.105, 0.095), (0.585, 0.215, 0.125, 0.075), (0.585, 0.215, 0.13, 0.07),
    (0.585, 0.215, 0.135, 0.065), (0.585, 0.215, 0.14, 0.06), (0.585, 0.215, 0.145, 0.055),
    (0.585, 0.215, 0.165, 0.035), (0.585, 0.215, 0.17, 0.03), (0.585, 0.215, 0.175, 0.025),
    (0.585, 0.215, 0.18, 0.02), (0.585, 0.215, 0.19, 0.01), (0.585, 0.215, 0.195, 0.005),
    (0.625, 0.175, 0.105, 0.095), (0.625, 0.175, 0.115, 0.085), (0.625, 0.175, 0.12, 0.08),
    (0.625, 0.175, 0.125, 0.075), (0.625, 0.175, 0.13, 0.07), (0.625, 0.175, 0.135, 0.065),
    (0.625, 0.175, 0.14, 0.06), (0.625, 0.175, 0.145, 0.055), (0.625, 0.175, 0.15, 0.05),
    (0.625, 0.175, 0.155, 0.045), (0.625, 0.175, 0.16, 0.04), (0.625, 0.175, 0.165, 0.035),
    (0.625, 0.175, 0.17, 0.03),
    (0.63, 0.17, 0.105, 0.095), (0.63, 0.17, 0.135, 0.065), (0.63, 0.17, 0.14, 0.06),
    (0.655, 0.145, 0.11, 0.09), (0.655, 0.145, 0.12, 0.08), (0.655, 0.145, 0.125, 0.075),
    (0.665, 0.135, 0.13, 0.07),
    (0.69, 0.11, 0.105, 0.095),
)

SEED = {"p": (0.50, 0.30, 0.15, 0.05)}


def _draw(d: Draw) -> dict:
    return {"p": tuple(d.choice(DISTRIBUTIONS))}


def _decimal(value: float) -> str:
    """A probability as the task writes it: two decimals, three where the grid needs them."""
    text = f"{value:.3f}"
    return text[:-1] if text.endswith("0") else text


def _rows(parameters) -> list:
    return [("p: base probabilities of token ids 0, 1, 2, 3 (sorted)", ", ".join(_decimal(x) for x in parameters["p"])),
            ("top_p of Part A, of Part B", ", ".join(f"{t:.2f}" for t in THRESHOLDS.values()))]


FAMILY = Family("12_top_p_nucleus", SEED, _draw, _rows)
