"""Misconceptions that show in more than one notebook: one key and one sentence wherever they show.

A student who shifts the wrong way in exercise 03 and again in exercise 16, or takes the KL in the
wrong direction in 05 and 18, meets the same name and the same explanation, and an instructor's
batch report counts it once. Sentences are worded for every notebook that uses them: they name the
idea, never a notebook's hidden inputs or expected values. Misconceptions that belong to one notebook
stay in its ``check.py``. :func:`rounded_too_early` recognises the one mistake that needs more than a
comparison with a wrong value: a right value rounded too early (``TOO_FEW_DIGITS``).
"""

from __future__ import annotations

import math

import numpy as np

from autograder.checks._judge import Misconception

# --------------------------------------------------------------------------- the causal shift (03, 16)

SAME_POSITION = Misconception(
    "same-position",
    "Logits and targets are paired at the same position. The logits at a position are computed from the "
    "tokens up to and including it, so they predict the token that comes next, not the one already read "
    "there (trimming both arrays at the same end keeps this same-position pairing).")
SHIFT_BACKWARDS = Misconception(
    "shift-backwards",
    "The shift goes the wrong way: each token was scored by logits computed after reading it. The "
    "logits at a position predict the token that has not been read yet, the one that comes next.")

DOUBLE_SHIFT = Misconception(
    "double-shift",
    "The labels were shifted twice: a loss that shifts its labels itself (as transformers' causal-LM loss "
    "does) must get them unshifted, a copy of input_ids; shifted once more, the logits at a position are "
    "scored against the token two positions later.")

# --------------------------------------------------------------------------- return types (15, 17)

LIST_NOT_ARRAY = Misconception(
    "list-not-array",
    "A Python list (or tuple) came back where the task asks for a NumPy array: return the array you "
    "computed (np.asarray(..., dtype=np.float64) where float64 is asked for), not its .tolist() or a list "
    "built from it.")

# --------------------------------------------------------------------------- log-softmax (15, 16, 18, 19)

NO_MAX_SHIFT = Misconception(
    "no-max-shift",
    "Some values overflowed to inf or NaN: exp(1000) does not fit in a float64. Subtract the maximum "
    "(along the vocabulary axis) before exponentiating; the shift cancels out of the result but keeps "
    "every exponent <= 0.")
NEGATED = Misconception(
    "negated-log-probs",
    "The sign is flipped: log-probabilities are <= 0 (these are negative log-probabilities).")

# --------------------------------------------------------------------------- truncation (12, 13, 19)

NO_RENORMALISE = Misconception(
    "no-renormalise",
    "After truncation the kept probabilities must be renormalised: divide them by their total mass so "
    "that they sum to one again.")
TOP_P_DROPS = Misconception(
    "top-p-drops-threshold-token",
    "The token whose probability makes the running sum reach top_p must be kept: the nucleus is the "
    "smallest prefix of the ranking whose mass is at least top_p.")
TOP_P_EXTRA = Misconception(
    "top-p-keeps-extra",
    "One token too many was kept: stop at the first token whose running sum reaches top_p (>=, not >; "
    "reaching it exactly counts). A running sum computed from logits can also land one rounding step "
    "below a threshold it reaches exactly, so compare with a tiny tolerance.")

# --------------------------------------------------------------------------- KL (05, 06, 10, 11, 18)

KL_DIRECTION = Misconception(
    "kl-direction",
    "The KL's direction is swapped. KL is not symmetric: D_KL(a || b) = sum of a * (log a - log b) takes "
    "its expectation under the first distribution and puts its log first (and with samples from q, the "
    "estimand is D_KL(q || p)).")
RATIO_INVERTED = Misconception(
    "ratio-inverted",
    "The ratio is inverted: r = p(x) / q(x) for samples x from q, so log r = log p - log q (for a policy "
    "against its reference, log pi - log pi_ref: the policy comes first).")
KL_NEGATED = Misconception(
    "kl-negated",
    "KL is never negative: D_KL(a || b) = sum of a * log(a / b), with the first distribution's probability "
    "on top; this value is its negative (the log-ratio taken upside down).")
K1_SIGN = Misconception(
    "k1-sign",
    "k1 has the wrong sign: with r = p/q and samples from q, k1 = -log r = log q - log p.")
K2_HALF = Misconception(
    "k2-missing-half",
    "k2 is missing its factor 1/2: k2 = (log r)^2 / 2.")

# --------------------------------------------------------------------------- units (09, 10, 11, 13)

LOG_BASE = Misconception(
    "log-base",
    "This matches base-2 or base-10 logarithms: log-probabilities, KL and its estimators here are in "
    "nats, with the natural log (np.log).")
LOG_BASE_10 = Misconception(
    "log-base-10",
    "This matches base-10 logarithms: log-probabilities, NLL and perplexity here use the natural log "
    "(np.log), and perplexity is exp of the mean NLL.")

# --------------------------------------------------------------------------- numeric answers (05)

TOO_FEW_DIGITS = Misconception(
    "too-few-digits",
    "This number was rounded (or cut) too early: give at least 6 significant digits, or the Python "
    "expression itself, which keeps every digit.")

# --------------------------------------------------------------------------- rollouts (01, 17, 20)

PADDING_COUNTED = Misconception(
    "padding-counted",
    "Padding or prompt positions were counted as response tokens: count only the positions where the "
    "response mask is set.")
FLAGS_EXCLUSIVE = Misconception(
    "flags-exclusive",
    "terminated and truncated answer different questions (did the task end? did an outside limit cut "
    "the episode?): a real terminal event can coincide with an outside limit, so a generic contract or "
    "validator must allow both; whether a task permits it is a separate, semantic check.")

# --------------------------------------------------------------------------- PPO's clip range (29, 30)

CLIP_BOUNDS_SWAPPED = Misconception(
    "clip-bounds-swapped",
    "eps_low and eps_high are swapped: the clip range is [1 - eps_low, 1 + eps_high], so clip-higher "
    "(eps_high > eps_low) widens the room above 1.")
CLIP_IGNORES_SIGN = Misconception(
    "clip-ignores-advantage-sign",
    "The clip was applied whatever the advantage's sign: PPO's minimum of r A and clip(r) A (the pessimistic "
    "bound; the loss is its negative) takes the clipped term only on the side the advantage pushes, above "
    "1 + eps_high for A > 0 and below 1 - eps_low for A < 0. A negative-advantage token whose ratio grew, or a "
    "positive one whose ratio fell, keeps the unclipped term and its gradient.")

# --------------------------------------------------------------------------- numeric answers (11, 12, 13, 14)

NUMBER_AS_TEXT = Misconception(
    "number-as-text",
    "A number was given as text in quotes: write the number itself (0.5) or an expression (math.log(0.5)), "
    "not a string.")


def rounded_too_early(actual, expected) -> bool:
    """Whether every entry of ``actual`` is ``expected`` (within 1e-5 relative) or ``expected`` rounded or
    cut to 1-5 significant digits, and at least one is such a coarse rounding: the answer is right but
    for its precision. Shapes must agree; non-finite entries never count as roundings.

    >>> rounded_too_early(0.693, math.log(2)), rounded_too_early(0.6931, math.log(2))
    (True, True)
    >>> rounded_too_early(0.69315, math.log(2))  # inside 1e-5: not a mistake at all
    False
    >>> rounded_too_early(0.5, math.log(2))  # a different value, not a rounding
    False
    >>> rounded_too_early([0.526, 0.316, 0.158, 0.0], [0.5 / 0.95, 0.3 / 0.95, 0.15 / 0.95, 0.0])
    True
    """
    actual = np.asarray(actual, dtype=np.float64).ravel()
    expected = np.asarray(expected, dtype=np.float64).ravel()
    if actual.shape != expected.shape or not (np.all(np.isfinite(actual)) and np.all(np.isfinite(expected))):
        return False
    coarse = False
    for got, want in zip(actual.tolist(), expected.tolist()):
        if abs(got - want) <= 1e-5 * abs(want) + 1e-9:
            continue
        if want == 0:
            return False
        exponent = math.floor(math.log10(abs(want)))
        roundings = set()
        for digits in range(1, 6):
            unit = 10.0 ** (exponent - digits + 1)
            roundings.update((round(want / unit) * unit, math.trunc(want / unit) * unit))
        if not any(abs(got - r) <= 1e-9 * abs(want) for r in roundings):
            return False
        coarse = True
    return coarse


__all__ = ["CLIP_BOUNDS_SWAPPED", "DOUBLE_SHIFT", "FLAGS_EXCLUSIVE", "K1_SIGN", "K2_HALF", "KL_DIRECTION", "KL_NEGATED", "LIST_NOT_ARRAY", "LOG_BASE", "LOG_BASE_10", "NEGATED", "NO_MAX_SHIFT", "NUMBER_AS_TEXT", "NO_RENORMALISE",
           "PADDING_COUNTED", "RATIO_INVERTED", "SAME_POSITION", "SHIFT_BACKWARDS", "TOO_FEW_DIGITS", "TOP_P_DROPS",
           "TOP_P_EXTRA", "rounded_too_early"]
