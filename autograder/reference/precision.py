r"""Reference solution of exercise 25 (``module6_further``): log-prob precision, bf16 against fp32.

=============================  ===================================================================
function                       what it computes
=============================  ===================================================================
:func:`round_to_bfloat16`      the nearest bfloat16 value (ties to even), as float64
:func:`logprobs_at_precision`  the log-softmax of bf16 logits, output kept (``"float32"``) or
                               rounded to bf16 (``"bfloat16"``)
:func:`precision_ratios`       per vocabulary entry, ``exp(lp_bf16 - lp_fp32)`` (trainer / sampler)
:func:`bf16_error_bounds`      the largest rounding error of a log-prob, and of the ratio it causes
=============================  ===================================================================

bfloat16 keeps float32's 8 exponent bits and 8 significand bits (7 stored, 1 implicit). A finite
``x = m 2^E`` with ``m`` in ``[0.5, 1)`` (``np.frexp``) lies on a grid of spacing ``2^(E - 8)``, so
rounding to the nearest grid point is ``rint(x / 2^(E - 8)) * 2^(E - 8)``: exact in float64 (dividing
by a power of two is exact, ``rint`` rounds half to even). Below ``2^-126`` the grid is the subnormal
one, spacing ``2^-133``; beyond the largest bfloat16, ``(2 - 2^-7) 2^127``, values round to infinity.
The tests check this against ``ml_dtypes.bfloat16`` (the JAX project's NumPy dtype) on many draws;
the reference does not import it, so the grader needs nothing beyond NumPy.

Everything returned is float64; bad input raises ``TypeError``/``ValueError`` naming the argument.
"""

from __future__ import annotations

import numpy as np

from autograder.reference._validation import as_float_array
from autograder.reference.softmax import stable_log_softmax

#: The two precisions of :func:`logprobs_at_precision` (what is done with the log-softmax's output).
PRECISIONS = ("float32", "bfloat16")
#: Significand bits of bfloat16, the implicit one included.
BF16_SIGNIFICAND_BITS = 8
#: The largest finite bfloat16, (2 - 2^-7) * 2^127.
BF16_MAX = float.fromhex("0x1.fep127")
#: The exponent of the subnormal grid's spacing (2^-133): the smallest normal 2^-126 times 2^-7.
_SUBNORMAL_SPACING_EXPONENT = -133


def _spacing_exponent(x: np.ndarray) -> np.ndarray:
    """The exponent of the bfloat16 grid spacing around each ``x`` (integers, as float64's frexp gives)."""
    _, exponent = np.frexp(x)  # x = m 2^E, 0.5 <= |m| < 1; frexp(0) = (0, 0)
    return np.maximum(exponent - BF16_SIGNIFICAND_BITS, _SUBNORMAL_SPACING_EXPONENT)


def _round(x: np.ndarray) -> np.ndarray:
    spacing_exp = _spacing_exponent(x)
    rounded = np.ldexp(np.rint(np.ldexp(x, -spacing_exp)), spacing_exp)
    # Rounding up out of the top binade gives 2^128, which bfloat16 cannot hold: infinity, as IEEE rounds.
    return np.where(np.abs(rounded) > BF16_MAX, np.copysign(np.inf, x), rounded)


def round_to_bfloat16(x):
    r"""Round to the nearest bfloat16 value, ties to the even significand, and return float64.

    The float64 value is rounded once (not through float32 first; for float32 inputs the two agree).

    Parameters
    ----------
    x : array_like of float, finite

    Returns
    -------
    numpy.ndarray of float64, the shape of ``x``
        Each entry is a bfloat16 value (``±inf`` beyond :data:`BF16_MAX`).

    Examples
    --------
    >>> round_to_bfloat16([1.0 + 2**-8, 1.0 + 3 * 2**-8, -10.03, 255.9]).tolist()
    [1.0, 1.015625, -10.0, 256.0]
    """
    return _round(as_float_array(x, "x", allow_empty=True))


def _bf16_logits(logits) -> np.ndarray:
    z = as_float_array(logits, "logits", min_ndim=1, logits=True)
    rounded = _round(z)
    if not np.all(np.isfinite(rounded)):
        raise ValueError("logits must lie inside bfloat16's range (|z| at most about 3.39e38)")
    return rounded


def _check_precision(precision) -> str:
    if not isinstance(precision, str):
        raise TypeError(f"precision must be one of {list(PRECISIONS)}, got {type(precision).__name__}")
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {list(PRECISIONS)}")
    return precision


def logprobs_at_precision(logits, precision):
    r"""Log-probabilities of every vocabulary entry from bf16 logits, at a stated output precision.

    The model emits bf16 logits, so ``logits`` are first rounded to bfloat16 (both sides see the same
    logits). Then :math:`\log\mathrm{softmax}` over the last axis is computed in float32 (PyTorch's
    ``log_softmax`` accumulates a bf16 input in float32 too), and

    * ``"float32"`` keeps that output (vllm==0.33.0 ``Sampler.compute_logprobs``:
      ``logits.log_softmax(dim=-1, dtype=torch.float32)``);
    * ``"bfloat16"`` rounds it to bfloat16, as ``F.log_softmax`` of a bf16 tensor returns it
      (trl==1.16.0 ``selective_log_softmax`` and verl==0.9.1 ``logprobs_from_logits_v2`` on bf16 logits).

    float32's own rounding (relative ``2^-24``) is 2^16 times finer than bfloat16's and is not modelled:
    the log-softmax of the rounded logits is computed exactly in float64 and, for ``"bfloat16"``,
    rounded once.

    Parameters
    ----------
    logits : array_like of float, shape [..., V], finite and inside bfloat16's range
    precision : {"float32", "bfloat16"}

    Returns
    -------
    numpy.ndarray of float64, shape [..., V]

    Examples
    --------
    >>> logprobs_at_precision([0.0, 0.0, 0.0, 0.0], "float32").round(6).tolist()
    [-1.386294, -1.386294, -1.386294, -1.386294]
    >>> logprobs_at_precision([0.0, 0.0, 0.0, 0.0], "bfloat16").tolist()
    [-1.3828125, -1.3828125, -1.3828125, -1.3828125]
    """
    precision = _check_precision(precision)
    log_p = stable_log_softmax(_bf16_logits(logits), axis=-1)
    return _round(log_p) if precision == "bfloat16" else log_p


def precision_ratios(logits):
    r"""Per vocabulary entry, the ratio trainer / sampler when only the log-prob precision differs.

    ``exp(lp_bf16 - lp_fp32)`` with both from :func:`logprobs_at_precision` on the same logits: the
    trainer's bf16 log-softmax over the sampler's float32 one, the direction of an importance weight
    (trl==1.16.0 ``GRPOTrainer``: ``old_per_token_logps - sampling_per_token_logps``).

    Parameters
    ----------
    logits : array_like of float, shape [..., V]

    Returns
    -------
    numpy.ndarray of float64, shape [..., V]

    Examples
    --------
    >>> precision_ratios([0.0, 0.0, 0.0, 0.0]).round(6).tolist()
    [1.003488, 1.003488, 1.003488, 1.003488]
    """
    z = _bf16_logits(logits)
    log_p = stable_log_softmax(z, axis=-1)
    return np.exp(_round(log_p) - log_p)


def bf16_error_bounds(log_probs):
    r"""The largest error a bfloat16 rounding puts on a log-prob, and on the ratio it enters.

    For a log-prob :math:`x = m 2^E` (:math:`0.5 \le |m| < 1`) the bfloat16 grid around it has spacing
    :math:`2^{E-8}`, so round to nearest moves it by at most half of that,

    .. math:: |\mathrm{bf16}(x) - x| \le h(x) = 2^{E-9} = 2^{\lfloor \log_2 |x| \rfloor - 8},

    an **absolute** bound that grows with :math:`|x|` (the relative one, :math:`2^{-8}`, is constant);
    :math:`h(0) = 0`. A ratio :math:`\exp(\mathrm{bf16}(x) - x)` then lies in
    :math:`[e^{-h}, e^{h}]`, so :math:`|r - 1| \le e^{h} - 1`. At :math:`x = -10`: :math:`h = 2^{-5}`
    and the ratio can be off by 3.2%.

    Parameters
    ----------
    log_probs : array_like of float, finite, <= 0

    Returns
    -------
    dict
        ``{"logprob": h(x), "ratio": exp(h(x)) - 1}``, float64 arrays of the shape of ``log_probs``.

    Examples
    --------
    >>> out = bf16_error_bounds([-10.0, -1.0, 0.0])
    >>> out["logprob"].tolist(), out["ratio"].round(6).tolist()
    ([0.03125, 0.00390625, 0.0], [0.031743, 0.003914, 0.0])
    """
    x = as_float_array(log_probs, "log_probs", allow_empty=True)
    if np.any(x > 0):
        raise ValueError("log_probs must be <= 0 (they are logarithms of probabilities)")
    half_spacing = np.where(x == 0, 0.0, np.ldexp(1.0, _spacing_exponent(x) - 1))
    return {"logprob": half_spacing, "ratio": np.expm1(half_spacing)}


__all__ = ["BF16_MAX", "BF16_SIGNIFICAND_BITS", "PRECISIONS", "bf16_error_bounds", "logprobs_at_precision",
           "precision_ratios", "round_to_bfloat16"]
