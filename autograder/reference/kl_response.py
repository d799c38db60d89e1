r"""Reference solution of exercise 28, KL across a whole response (``module6_further``).

A two-step policy: the first token :math:`a` is drawn from :math:`q_1 = \mathrm{softmax}(\theta_1)` over
:math:`V_1` tokens, the second :math:`b` from :math:`q_2(\cdot\mid a) = \mathrm{softmax}(\theta_2[a])` over
:math:`V_2` tokens; the reference has logits ``ref1`` [V1] and ``ref2`` [V1, V2] of the same shapes, and an
older policy (the sampler, for the off-policy functions) ``old1``, ``old2``. Every expectation is an exact
sum over the :math:`V_1 V_2` responses: no sampling.

=================================  ===================================================================
function                           what it returns
=================================  ===================================================================
:func:`sequence_kl_gradient`       :math:`\nabla D_{\mathrm{KL}}(\pi_\theta\|\pi_{\text{ref}})` of the whole response
:func:`reward_return_gradient`     the expected policy gradient of k1 in the reward, summed into returns
:func:`per_token_loss_gradient`    value and expected gradient of a per-token KL loss summed over the response
:func:`off_policy_loss_gradient`   the same with samples from an older policy and a per-token weight
:func:`response_kl_weights`        the weight on each response's summed KL under a loss normaliser
=================================  ===================================================================

Gradients are dicts ``{"step1": [V1], "step2": [V1, V2]}`` (with respect to ``theta1`` and ``theta2``);
bad input raises ``TypeError``/``ValueError`` naming the argument.
"""

from __future__ import annotations

import numpy as np

from autograder.reference._validation import as_float, as_float_array, as_int, as_int_array
from autograder.reference.further import AGGREGATION_MODES
from autograder.reference.softmax import stable_log_softmax

#: The per-token KL losses: Schulman's k1, k2, k3, and verl's ``k3+`` (k3's value, k2's gradient).
ESTIMATORS = ("k1", "k2", "k3", "k3+")
#: The per-token weight on a KL loss term when samples come from an older policy: none, the ratio
#: pi/pi_old held constant, or the ratio with its gradient (TRL's ``use_bias_correction_kl``).
WEIGHTS = ("none", "detached", "differentiable")


def _tree(step1, step2, names: tuple, like: tuple | None = None) -> tuple:
    """Log-probabilities of one two-step policy given as logits [V1] and [V1, V2]; ``like`` holds the
    shapes of theta1 and theta2, which every other policy of the tree must have."""
    first = as_float_array(step1, names[0], ndim=1, logits=True)
    if like is not None and first.shape != like[0]:
        raise ValueError(f"{names[0]} must have the shape of theta1, {like[0]}, got {first.shape}")
    second = as_float_array(step2, names[1], ndim=2, logits=True)
    if second.shape[0] != first.shape[0]:
        raise ValueError(f"{names[1]} must have one row per first token, shape [{first.shape[0]}, V2], "
                         f"got {second.shape}")
    if like is not None and second.shape != like[1]:
        raise ValueError(f"{names[1]} must have the shape of theta2, {like[1]}, got {second.shape}")
    return stable_log_softmax(first, axis=-1), stable_log_softmax(second, axis=-1)


def _trees(*pairs) -> list:
    """Several policies over the same tree (theta first), each of the shapes of the first."""
    out = []
    for step1, step2, names in pairs:
        out.append(_tree(step1, step2, names, (out[0][0].shape, out[0][1].shape) if out else None))
    return out


def _name(value, allowed: tuple, argument: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{argument} must be one of {list(allowed)}, got {type(value).__name__}")
    if value not in allowed:
        raise ValueError(f"{argument} must be one of {list(allowed)}, got an unknown name")
    return value


def _centred(q: np.ndarray, weighted: np.ndarray) -> np.ndarray:
    r""":math:`\sum_x q(x)\,w(x)\,(e_x - q) = q w - q \sum_x q w` from :math:`q w` (``weighted``): the expected
    score-weighted sum for a softmax, whose score is :math:`\nabla_\theta \log q(x) = e_x - q`."""
    return weighted - q * np.sum(weighted, axis=-1, keepdims=True)


def _times_k3(s: np.ndarray, log_s: np.ndarray, log_q: np.ndarray, log_p: np.ndarray) -> np.ndarray:
    r""":math:`s\,k_3 = s\,(r - 1 - \log r)`, :math:`r = p/q`, with :math:`s\,r` formed in log space (where
    :math:`q` underflows and :math:`s` and :math:`p` do not, :math:`r` alone overflows). ``expm1`` keeps the
    precision near :math:`r = 1`."""
    log_r = log_p - log_q
    with np.errstate(over="ignore"):
        small = np.where(log_r < 1.0, s * np.expm1(np.minimum(log_r, 1.0)), 0.0)
        large = np.where(log_r >= 1.0, np.exp(np.where(log_r >= 1.0, log_s + log_r, -np.inf)) - s, 0.0)
    return small + large - s * log_r


def _times_k3_slope(s: np.ndarray, log_s: np.ndarray, log_q: np.ndarray, log_p: np.ndarray) -> np.ndarray:
    r""":math:`s\,\partial k_3/\partial\log q = s\,(1 - r)`, the same way (for :math:`s = q` it is :math:`q - p`)."""
    log_r = log_p - log_q
    with np.errstate(over="ignore"):
        small = np.where(log_r < 1.0, -s * np.expm1(np.minimum(log_r, 1.0)), 0.0)
        large = np.where(log_r >= 1.0, s - np.exp(np.where(log_r >= 1.0, log_s + log_r, -np.inf)), 0.0)
    return small + large


def _value_weighted(estimator: str, s, log_s, log_q, log_p) -> np.ndarray:
    """``s * k`` for the estimator whose VALUE the loss reports (k3+ reports k3's)."""
    gap = log_q - log_p  # log q - log p = -log r
    if estimator == "k1":
        return s * gap
    if estimator == "k2":
        return 0.5 * s * gap ** 2
    return _times_k3(s, log_s, log_q, log_p)


def _slope_weighted(estimator: str, s, log_s, log_q, log_p) -> np.ndarray:
    """``s * dk/dlog q`` for the estimator whose GRADIENT the loss has (k3+ has k2's: straight-through)."""
    if estimator == "k1":
        return s.copy()
    if estimator in ("k2", "k3+"):
        return s * (log_q - log_p)
    return _times_k3_slope(s, log_s, log_q, log_p)


def _one_step(estimator: str, weight: str, log_s, log_q, log_p) -> tuple:
    r"""Value and expected gradient, at one position (last axis), of the loss term :math:`c(x)\,k(x)` with
    :math:`x \sim s`: :math:`c = 1` (``"none"``), :math:`c = \mathrm{sg}(q/s)` (``"detached"``) or :math:`c = q/s`
    (``"differentiable"``, whose gradient :math:`c\,\nabla\log q` adds k's own value to its slope)."""
    s, q = np.exp(log_s), np.exp(log_q)
    if weight == "none":
        value = _value_weighted(estimator, s, log_s, log_q, log_p)
        slope = _slope_weighted(estimator, s, log_s, log_q, log_p)
    else:  # s * (q / s) = q: the weight turns the sampler's expectation into the policy's
        value = _value_weighted(estimator, q, log_q, log_q, log_p)
        slope = _slope_weighted(estimator, q, log_q, log_q, log_p)
        if weight == "differentiable":
            slope = slope + value
    return np.sum(value, axis=-1), _centred(q, slope)


def _two_steps(estimator, weight, theta, ref, old) -> dict:
    (log_q1, log_q2), (log_p1, log_p2), (log_s1, log_s2) = theta, ref, old
    value1, grad1 = _one_step(estimator, weight, log_s1, log_q1, log_p1)
    value2, grad2 = _one_step(estimator, weight, log_s2, log_q2, log_p2)
    # Step 2 is reached through a first token drawn from the SAMPLER: a token-level weight corrects only
    # the token's own conditional, so the second step's terms count with s1(a), whatever the weight.
    visit = np.exp(log_s1)
    return {"value": float(value1 + np.sum(visit * value2)), "step1": grad1, "step2": visit[:, None] * grad2}


def sequence_kl_gradient(theta1, theta2, ref1, ref2):
    r"""Exact gradient of the sequence-level reverse KL :math:`D_{\mathrm{KL}}(\pi_\theta\|\pi_{\text{ref}})` of
    the two-step policy, with respect to ``theta1`` and ``theta2``.

    With :math:`d_1(a) = \log q_1(a) - \log p_1(a)`, :math:`d_2(b\mid a)` likewise and
    :math:`K_2(a) = D_{\mathrm{KL}}(q_2(\cdot\mid a)\,\|\,p_2(\cdot\mid a))`, the chain rule of the KL gives
    :math:`D = \sum_a q_1(a)\,[d_1(a) + K_2(a)]`, so

    * ``"step1"``: :math:`q_1 \odot (c - \mathbb E_{q_1} c)` with :math:`c = d_1 + K_2`: the first token's own
      KL **and the KL of everything after it**;
    * ``"step2"``: row :math:`a` is :math:`q_1(a)\; q_2(\cdot\mid a) \odot (d_2 - \mathbb E_{q_2} d_2)`.

    Examples
    --------
    >>> g = sequence_kl_gradient([0.0, 0.0], [[0.0, 0.0], [0.0, 0.0]], [0.0, 0.0], [[0.0, 0.0], [0.0, 0.0]])
    >>> g["step1"], g["step2"]
    (array([0., 0.]), array([[0., 0.],
           [0., 0.]]))
    >>> sequence_kl_gradient([0.0, 0.0], [[0.0, 0.0], [0.0, 0.0]], [0.0, 0.0], [[0.0, 2.0], [0.0, 0.0]])["step1"].round(6)
    array([ 0.108445, -0.108445])
    """
    return reward_return_gradient(theta1, theta2, ref1, ref2, gamma=1.0)


def reward_return_gradient(theta1, theta2, ref1, ref2, gamma=1.0):
    r"""Expected policy gradient of k1 **in the reward**, summed into returns (REINFORCE with the
    per-token KL :math:`k_{1,t} = \log\pi_\theta(y_t\mid y_{<t}) - \log\pi_{\text{ref}}(y_t\mid y_{<t})` as the
    only reward, no gradient through it): :math:`\mathbb E\big[\sum_t \nabla\log\pi_\theta(y_t\mid y_{<t})\,G_t\big]`
    with the return from step :math:`t` on, :math:`G_t = \sum_{t' \ge t} \gamma^{t'-t} k_{1,t'}`.

    * ``"step1"``: :math:`q_1 \odot (c - \mathbb E_{q_1} c)` with :math:`c = d_1 + \gamma K_2`;
    * ``"step2"``: as in :func:`sequence_kl_gradient` (the last step's return is its own k1).

    With ``gamma = 1`` (verl's ``algorithm.gamma`` default) this is exactly :func:`sequence_kl_gradient`;
    ``gamma`` must lie in [0, 1].

    Examples
    --------
    >>> g = reward_return_gradient([0.0, 0.0], [[0.0, 0.0], [0.0, 0.0]], [0.0, 0.0], [[0.0, 2.0], [0.0, 0.0]], gamma=0.0)
    >>> g["step1"]
    array([0., 0.])
    """
    (log_q1, log_q2), (log_p1, log_p2) = _trees((theta1, theta2, ("theta1", "theta2")),
                                                (ref1, ref2, ("ref1", "ref2")))
    gamma = as_float(gamma, "gamma", low=0.0, high=1.0)
    q1, q2 = np.exp(log_q1), np.exp(log_q2)
    gap2 = log_q2 - log_p2
    future = np.sum(q2 * gap2, axis=-1)  # K2(a) = E_{b ~ q2(.|a)}[k1 at step 2]: the return's expected rest
    return {"step1": _centred(q1, q1 * ((log_q1 - log_p1) + gamma * future)),
            "step2": q1[:, None] * _centred(q2, q2 * gap2)}


def per_token_loss_gradient(theta1, theta2, ref1, ref2, estimator):
    r"""A per-token KL **loss** summed over the response, :math:`L = \sum_t k(y_t)`, with the sampled
    response fixed and :math:`\theta` entering through :math:`\log\pi_\theta(y_t\mid y_{<t})` only (as autograd
    does on a sampled batch), responses drawn from the current policy.

    Returns ``{"value": E[L], "step1": E[grad L] wrt theta1, "step2": ... wrt theta2}``. ``estimator`` is one
    of :data:`ESTIMATORS`; with :math:`\ell = \log q - \log p` at a token, the slopes :math:`\partial k/\partial\log q`
    are k1: 1, k2: :math:`\ell`, k3: :math:`1 - r` (:math:`r = p/q`), and ``"k3+"`` has k3's value and k2's slope
    (verl's straight-through ``k2 - k2.detach() + k3.detach()``). Each step's expected gradient is
    :math:`q \odot (w - \mathbb E_q w)` with :math:`w` the slope; the second step's rows are weighted by
    :math:`q_1(a)`. No step sees the KL of later steps: k2's ``"step1"`` is the first position's own
    reverse-KL gradient, not the sequence KL's.

    Examples
    --------
    >>> out = per_token_loss_gradient([0.0, 0.0], [[0.0, 0.0], [0.0, 0.0]], [0.0, 0.0], [[0.0, 2.0], [0.0, 0.0]], "k2")
    >>> out["step1"]
    array([0., 0.])
    """
    return off_policy_loss_gradient(theta1, theta2, ref1, ref2, theta1, theta2, estimator, "none")


def off_policy_loss_gradient(theta1, theta2, ref1, ref2, old1, old2, estimator, weight):
    r"""The per-token KL loss of :func:`per_token_loss_gradient` when responses come from an older policy
    :math:`\pi_{\text{old}}` (logits ``old1``, ``old2``) and each token's term is multiplied by
    :math:`c_t`: ``weight="none"`` (:math:`c_t = 1`), ``"detached"`` (:math:`c_t = \mathrm{sg}(\rho_t)`) or
    ``"differentiable"`` (:math:`c_t = \rho_t`, TRL's ``use_bias_correction_kl``), with the token-level ratio
    :math:`\rho_t = \pi_\theta(y_t\mid y_{<t}) / \pi_{\text{old}}(y_t\mid y_{<t})`.

    At one position, with :math:`s` the sampler's distribution and :math:`k'` the slope:

    * none: value :math:`\mathbb E_s[k]`, gradient :math:`\sum_x s\,k'\,(e_x - q)`: biased for both;
    * detached: value :math:`\mathbb E_q[k]`, gradient the on-policy loss gradient :math:`q \odot (k' - \mathbb E_q k')`;
    * differentiable: the same value, gradient :math:`q \odot (w - \mathbb E_q w)` with :math:`w = k' + k`, the
      loss gradient plus the reward gradient: the total derivative of :math:`\mathbb E_q[k]`, which for k1, k3
      and k3+ is the position's reverse-KL gradient.

    The second position is reached through a first token from the sampler, so its rows count with
    :math:`s_1(a)` whatever the weight (a token-level ratio does not correct the prefix).

    Examples
    --------
    >>> z, zz = [0.0, 0.0], [[0.0, 0.0], [0.0, 0.0]]
    >>> off_policy_loss_gradient(z, zz, z, zz, [1.0, 0.0], zz, "k3", "detached")["value"]
    0.0
    """
    theta, ref, old = _trees((theta1, theta2, ("theta1", "theta2")), (ref1, ref2, ("ref1", "ref2")),
                             (old1, old2, ("old1", "old2")))
    estimator = _name(estimator, ESTIMATORS, "estimator")
    weight = _name(weight, WEIGHTS, "weight")
    return _two_steps(estimator, weight, theta, ref, old)


def response_kl_weights(lengths, mode, max_len=None):
    r"""The weight :math:`w_i` on response :math:`i`'s summed KL, :math:`\text{KL term} = \sum_i w_i \sum_t k_{i,t}`,
    when the per-token KL is aggregated with the policy loss's normaliser (exercise 23's modes, whose
    per-token weights are the same for every token of a response):

    * ``"token_mean"``: :math:`1 / \sum_j n_j` for every response (0 if no response has a token);
    * ``"sequence_mean"``: :math:`1 / (B\,n_i)`: a long response's KL counts for less;
    * ``"constant"``: :math:`1 / (B \cdot \text{max\_len})`, ``max_len >= max(lengths)`` required.

    An empty response (:math:`n_i = 0`) has weight 0 in every mode: it has no KL to weight. The KL the
    objective names, :math:`\frac1B \sum_i \mathrm{KL}_i`, has :math:`w_i = 1/B`.

    Examples
    --------
    >>> response_kl_weights([1, 3], "sequence_mean")
    array([0.5       , 0.16666667])
    >>> response_kl_weights([1, 3], "token_mean")
    array([0.25, 0.25])
    """
    lengths = as_int_array(lengths, "lengths", ndim=1)
    if lengths.size == 0:
        raise ValueError("lengths must hold at least one response length (shape [B] with B >= 1)")
    if np.any(lengths < 0):
        raise ValueError("lengths must be non-negative token counts")
    if not isinstance(mode, str):
        raise TypeError(f"mode must be one of {list(AGGREGATION_MODES)}, got {type(mode).__name__}")
    if mode not in AGGREGATION_MODES:
        raise ValueError(f"mode must be one of {list(AGGREGATION_MODES)}, got an unknown name")
    batch = lengths.size
    if mode == "constant":
        if max_len is None:
            raise ValueError("max_len is required for mode 'constant' (the maximum response length)")
        max_len = as_int(max_len, "max_len", low=max(1, int(lengths.max())))
        weights = np.full(batch, 1.0 / (batch * max_len))
    elif mode == "token_mean":
        total = int(lengths.sum())
        weights = np.full(batch, 1.0 / total if total else 0.0)
    else:
        weights = 1.0 / (batch * np.maximum(lengths, 1))
    return np.where(lengths > 0, weights, 0.0)
