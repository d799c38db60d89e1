r"""The small amount of arithmetic the explorers draw with, private to the widgets.

These helpers are written for the views: they take what a control produces (1-D float64 arrays,
already validated by the model modules) and return what a picture needs, with no argument checking
of their own. None of them has the name or the signature of anything a notebook asks a student to
write, and none is exported from :mod:`course.widgets`. The instructor's test
``tests/test_widgets_models.py`` keeps every quantity the explorers show equal to the reference
solutions (``autograder.reference``) and to mpmath, so the two cannot drift apart.

Conventions shared with the course (stated in the notebooks):

* softmax and log-softmax subtract the largest logit first, and the log-normaliser is a ``log1p``
  of the other terms (the largest contributes exactly one);
* tokens are ranked by probability with a stable sort (smaller id first among ties);
* a top-p prefix "reaches" the threshold when its running mass is at least
  ``top_p - 8 * V * eps`` (the rounding error of a softmax and a V-term sum);
* the behaviour chain runs temperature, banned tokens, top-k, then top-p.
"""

from __future__ import annotations

import math

import numpy as np

_EPS = float(np.finfo(np.float64).eps)
# Taylor coefficients 1/n!, n = 18 .. 2, for e^x - 1 - x below |x| = 1/2 (no cancellation).
_SERIES = np.array([1.0 / math.factorial(n) for n in range(18, 1, -1)])


def _log_softmax(z: np.ndarray) -> np.ndarray:
    """log softmax(z) of a 1-D array: ``(z - max) - log1p(sum of the other exp terms)``."""
    top = int(np.argmax(z))
    shifted = z - z[top]
    terms = np.exp(shifted)
    terms[top] = 0.0
    return shifted - np.log1p(terms.sum())


def _softmax(z: np.ndarray) -> np.ndarray:
    """softmax(z) of a 1-D array as ``exp(z - max) / sum``."""
    terms = np.exp(z - z.max())
    return terms / terms.sum()


def _ranked(values: np.ndarray) -> np.ndarray:
    """Ids from largest to smallest value; equal values keep increasing id order."""
    return np.argsort(-values, kind="stable")


def _prefix_reaching(sorted_probs: np.ndarray, top_p: float) -> int:
    """How many ranked tokens the top-p rule keeps, before ``min_tokens_to_keep``."""
    if not top_p < 1.0:  # the whole support
        return int(np.count_nonzero(sorted_probs > 0)) or sorted_probs.size
    cumulative = np.cumsum(sorted_probs)
    reached = np.flatnonzero(cumulative >= top_p - 8 * sorted_probs.size * _EPS)
    return int(reached[0]) + 1 if reached.size else sorted_probs.size


def _renormalised(log_probs: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """Probabilities renormalised onto ``keep`` (zero elsewhere)."""
    inside = _log_softmax(log_probs[keep])
    return np.exp(inside)[np.cumsum(keep) - 1] * keep


def _tempered_log_probs(z: np.ndarray, temperature: float) -> np.ndarray:
    """log softmax(z / T), shifted by the largest logit first so small T never overflows."""
    return _log_softmax((z - z.max()) / temperature)


def _truncation_stages(tempered: np.ndarray, banned: tuple, top_k: int | None, top_p: float,
                       min_tokens_to_keep: int) -> dict:
    """The support after each stage of the chain, for a picture that says which stage cut a token.

    ``tempered`` are the tempered log-probabilities. Returns a dict mapping ``"banned"``,
    ``"top-k"`` and ``"top-p"`` to the boolean support left after that stage. Raises
    ``ValueError`` when the bans leave nothing to sample.
    """
    keep = np.ones(tempered.size, dtype=bool)
    if banned:
        keep[list(banned)] = False
        if not keep.any():
            raise ValueError("every token is banned: the behaviour policy would be empty")
    masks = {"banned": keep.copy()}
    if top_k is not None and top_k < keep.sum():
        allowed = np.flatnonzero(keep)
        ranked = allowed[_ranked(tempered[allowed])]
        keep[:] = False
        keep[ranked[:top_k]] = True
    masks["top-k"] = keep.copy()
    if top_p < 1.0:
        allowed = np.flatnonzero(keep)
        ranked = allowed[_ranked(tempered[allowed])]
        inside = np.exp(_log_softmax(tempered[ranked]))
        count = max(_prefix_reaching(inside, top_p), min(min_tokens_to_keep, ranked.size))
        keep[:] = False
        keep[ranked[:count]] = True
    masks["top-p"] = keep
    return masks


def _log_kept_mass(tempered: np.ndarray, keep: np.ndarray) -> float:
    """log Z_S <= 0, the tempered mass of the kept tokens.

    From the small removed mass with ``log1p`` when most is kept (the whole support gives exactly
    0), else from a log-sum-exp of the kept log-probabilities.
    """
    removed = float(np.exp(tempered[~keep]).sum())
    if removed < 0.5:
        return math.log1p(-removed)
    kept = tempered[keep]
    return min(0.0, float(kept.max() + np.log(np.exp(kept - kept.max()).sum())))


def _kept_logprob(tempered: np.ndarray, keep: np.ndarray, token: int, log_mass: float) -> float:
    """The token's log-probability after renormalising onto ``keep`` (-inf outside it)."""
    if not keep[token]:
        return -math.inf
    if np.count_nonzero(keep) == 1:
        return 0.0
    # log Z_S <= 0, so this is never below the tempered value; the clamp keeps it <= 0.
    return min(0.0, float(tempered[token] - log_mass))


def _inv_power(mass: float, n: int) -> float:
    """``mass ** -n`` through logs, ``inf`` past the largest float64."""
    try:
        return math.exp(-n * math.log(mass))
    except OverflowError:
        return math.inf


def _exp_minus_one_minus(x: np.ndarray) -> np.ndarray:
    """``e^x - 1 - x`` >= 0 for an array, a series near 0 where ``expm1(x) - x`` would cancel."""
    x = np.asarray(x, dtype=np.float64)
    out = np.empty_like(x)
    small = np.abs(x) < 0.5
    xs = x[small]
    poly = np.zeros_like(xs)
    for coefficient in _SERIES:
        poly = poly * xs + coefficient
    out[small] = poly * xs * xs
    xl = x[~small]
    with np.errstate(over="ignore", invalid="ignore"):
        out[~small] = np.where(np.isneginf(xl), np.inf, np.expm1(xl) - xl)
    return out


def _estimator_bars(log_r: np.ndarray) -> dict:
    """Heights of the k1, k2, k3 bars at outcomes with finite log r = log p - log q."""
    return {"k1": -log_r, "k2": 0.5 * log_r * log_r, "k3": _exp_minus_one_minus(log_r)}


def _kl_between(a: np.ndarray, b: np.ndarray) -> float:
    r"""KL(a || b) = sum over a > 0 of a log(a / b), ``inf`` where a > 0 = b.

    Written as :math:`\sum_i a_i\,h(u_i)` with :math:`u_i = \log(b_i/a_i)` and
    :math:`h(u) = e^u - 1 - u \ge 0` (which adds :math:`\sum_i b_i - a_i = 0` on the common support,
    plus b's mass where a = 0), so every term is non-negative and close distributions keep their
    digits (``log1p`` of the exact difference ``b - a``).
    """
    inside = a > 0
    if np.any(inside & (b == 0)):
        return math.inf
    ai, bi = a[inside], b[inside]
    with np.errstate(divide="ignore"):
        u = np.where(np.abs(bi - ai) < 0.5 * ai, np.log1p((bi - ai) / ai), np.log(bi) - np.log(ai))
    # sum_i a_i (e^u_i - 1) = sum b - sum a over the common support; b's mass outside closes it.
    correction = math.fsum(b) - math.fsum(a)
    outside = math.fsum(b[~inside])
    total = float(np.sum(ai * _exp_minus_one_minus(u))) + outside - correction
    return max(total, 0.0)
