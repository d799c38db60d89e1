"""Answer key for exercise 12: the top-p nucleus of a sorted four-token distribution at 0.80 and 0.81.

The distribution varies per student (``course.variants.family_12_top_p_nucleus``): :func:`answers`
computes any variant's key from the reference; the module constants are variant 0's (the seed's).
"""

import numpy as np

from autograder.reference import top_p_distribution
from course.variants.family_12_top_p_nucleus import FAMILY, THRESHOLDS

#: Variant 0: the base distribution over token ids 0..3 (already sorted, largest first).
PROBABILITIES = tuple(FAMILY.seed["p"])


def nuclei(parameters) -> dict:
    """``suffix -> renormalised distribution`` over all four ids (zeros outside the nucleus)."""
    # The reference works from logits; log(p) has the softmax p.
    logits = np.log(np.asarray(parameters["p"], dtype=np.float64))
    return {suffix: np.asarray(top_p_distribution(logits, top_p), dtype=np.float64)
            for suffix, top_p in THRESHOLDS.items()}


def answers(parameters) -> dict:
    """The answers for one variant's ``parameters`` (``p``: four sorted probabilities), keyed by the
    names the notebook asks for: ``kept_<suffix>`` (a frozenset of 0-based ids) and
    ``nucleus_<suffix>`` (four probabilities)."""
    out = {}
    for suffix, distribution in nuclei(parameters).items():
        out[f"kept_{suffix}"] = frozenset(int(i) for i in np.flatnonzero(distribution))
        out[f"nucleus_{suffix}"] = distribution
    return out


#: Variant 0's answers.
ANSWERS = answers(FAMILY.seed)
#: Variant 0: ``NUCLEUS[suffix]``, the renormalised distribution over all four ids.
NUCLEUS = {suffix: ANSWERS[f"nucleus_{suffix}"] for suffix in THRESHOLDS}
#: Variant 0: ``KEPT[suffix]``, the 0-based ids inside the nucleus.
KEPT = {suffix: ANSWERS[f"kept_{suffix}"] for suffix in THRESHOLDS}


def _decimal(value: float) -> str:
    """As the notebook's table writes it: at least two decimals, four where the grid needs them."""
    text = f"{value:.4f}".rstrip("0")
    return text + "0" * max(0, 2 - len(text.split(".")[1]))


def _engine_probabilities(p) -> np.ndarray:
    """An engine's float64 softmax of the logits log p (as the notebook's last section computes it)."""
    z = np.log(np.asarray(p, dtype=np.float64))
    e = np.exp(z - z.max())
    return e / e.sum()


def worked(parameters) -> dict:
    """The numbers ``solution.md`` quotes, for ``parameters`` (variant 0 reproduces the seed's text)."""
    p = tuple(float(x) for x in parameters["p"])
    n080, n081 = (answers(parameters)[f"nucleus_{s}"] for s in THRESHOLDS)
    z081 = p[0] + p[1] + p[2]
    engine = _engine_probabilities(p)
    typed = p[0] + p[1]
    if typed == 0.8:
        typed_text = f"`{p[0]!r} + {p[1]!r} == 0.8` holds for the typed-in numbers, but"
    else:
        typed_text = (f"even the typed-in numbers miss it (`{p[0]!r} + {p[1]!r}` is `{typed!r}` in float64), "
                      "and")
    return {
        "p0": _decimal(p[0]), "p1": _decimal(p[1]), "p2": _decimal(p[2]), "p3": _decimal(p[3]),
        "z081": _decimal(z081),
        "nucleus_080": f"{n080[0]:.6g},\\ {n080[1]:.6g}",
        "nucleus_081": ",\\ ".join(f"{v:.6f}" for v in n081[:3]),
        "token0_080": f"{n080[0]:.6g}",
        "token0_081": f"{n081[0]:.3f}",
        "typed_sum": typed_text,
        "engine_p0": repr(float(engine[0])), "engine_p1": repr(float(engine[1])),
        "engine_sum": repr(float(np.cumsum(engine)[1])),
    }

