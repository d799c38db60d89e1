"""Answer key for exercise 11: the estimators k1, k2, k3 at a ratio r and at 1/r, and their signs.

The ratio varies per student (``course.variants.family_11_k_estimators``): :func:`answers` computes any
variant's key from the reference; the module constants are variant 0's (the seed's, r = 2 and 1/2).
"""

from fractions import Fraction

from autograder.reference import kl_estimators_at_ratio
from course.variants.family_11_k_estimators import FAMILY

ESTIMATORS = ("k1", "k2", "k3")
#: Estimators that are never negative (for every r > 0, not just these two: k2 is a square, k3 = u - 1 - log u).
NEVER_NEGATIVE = frozenset(("k2", "k3"))


def ratios(parameters) -> dict:
    """The ratios r = p(x) / q(x) the notebook asks about, keyed by the answer's name."""
    r = float(parameters["r"])
    return {"k_at_2": r, "k_at_half": 1 / r}


def labels(parameters) -> dict:
    """How the feedback names each ratio: ``r = 2`` and ``r = 1/2`` for the seed."""
    r = float(parameters["r"])
    return {"k_at_2": f"r = {r:g}", "k_at_half": f"r = 1/{r:g}"}


def values(parameters) -> dict:
    """``{name: {estimator: value}}`` from the reference."""
    return {name: {k: float(v) for k, v in kl_estimators_at_ratio(ratio).items()}
            for name, ratio in ratios(parameters).items()}


def changes_sign(estimates: dict) -> frozenset:
    """Estimators whose value is negative at one of the two ratios and positive at the other."""
    return frozenset(k for k in ESTIMATORS
                     if min(v[k] for v in estimates.values()) < 0 < max(v[k] for v in estimates.values()))


def answers(parameters) -> dict:
    """One variant's answers, keyed by the names the notebook's answer cells assign."""
    estimates = values(parameters)
    signs = changes_sign(estimates)
    if signs != frozenset(ESTIMATORS) - NEVER_NEGATIVE:
        raise RuntimeError(f"the reference's estimator values at r = {parameters['r']} disagree with the sign facts")
    return {**estimates, "changes_sign": set(signs), "never_negative": set(NEVER_NEGATIVE)}


#: Variant 0: the ratios and the answers.
RATIOS = ratios(FAMILY.seed)
ANSWERS = answers(FAMILY.seed)
CHANGES_SIGN = frozenset(ANSWERS["changes_sign"])


def _f(x: float) -> str:
    return f"{x:.6f}"


def _short(x: float) -> str:
    """A number to six decimals without trailing zeros: 1, 2.45, -0.5, -0.710145."""
    text = f"{x:.6f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def worked(parameters) -> dict:
    """The numbers the worked solution quotes for one variant (``{{ name }}`` in ``solution.md``)."""
    r = float(parameters["r"])
    up, down = (values(parameters)[name] for name in ("k_at_2", "k_at_half"))
    log_r = -up["k1"]
    one_minus_inverse = 1 - 1 / Fraction(str(parameters["r"]))
    exact = 10 ** 4 % one_minus_inverse.denominator == 0  # a decimal of at most four places (0.5, 0.75)
    return {
        "r": f"{r:g}", "r_inverse": f"1/{r:g}",
        "log_r": _f(log_r), "minus_log_r": _f(-log_r),
        "k2": _f(up["k2"]), "k3_up": _f(up["k3"]), "k3_down": _f(down["k3"]),
        "r_minus_1": _short(r - 1), "inverse_minus_1": _short(1 / r - 1),
        # In code, 1 - 1/r as the short decimal it is (0.5 for r = 2), else as the exact expression.
        "one_minus_inverse_code": _short(float(one_minus_inverse)) if exact else f"(1 - 1 / {r:g})",
    }
