r"""Reference solutions of the second assignment, ``module6_further`` (exercises 21-24).

========================================  ==============================================================
exercise                                  functions
========================================  ==============================================================
21 sampler-trainer mismatch               :func:`engine_and_trainer_logprobs`, :func:`truncated_is_weights`
22 KL as a reward vs as a loss            :func:`true_kl_gradients`, :func:`loss_gradients`,
                                          :func:`reward_gradients`
23 loss aggregation                       :func:`token_weights`, :func:`aggregate_loss`
24 labels and shifting                    :func:`causal_lm_loss`, :func:`loss_positions`,
                                          :func:`diagnose_labels`
========================================  ==============================================================

Everything is float64; bad input raises ``TypeError``/``ValueError`` naming the argument. Kept out of
:mod:`autograder.reference`'s namespace on purpose: the first assignment's API stays as it was.
"""

from __future__ import annotations

import numpy as np

from autograder.reference._validation import as_bool_mask, as_float, as_float_array, as_int, as_int_array
from autograder.reference.softmax import stable_log_softmax

#: The loss normalisations of exercise 23 (TRL's ``loss_type`` names in brackets, see the notebook).
AGGREGATION_MODES = ("token_mean", "sequence_mean", "constant")
#: The verdicts of :func:`diagnose_labels`.
LABEL_DIAGNOSES = ("ok", "double_shift", "mismatch")


# ----------------------------------------------------------------------------- 21


def _top_k_keep(tempered_log_p: np.ndarray, top_k: int, keep_ties: bool = False) -> np.ndarray:
    """Boolean mask of the ``top_k`` largest entries along the last axis (smaller id wins ties), or with
    ``keep_ties`` every entry at least the ``top_k``-th largest (ties with it kept, as transformers and
    vLLM's PyTorch path do)."""
    order = np.argsort(-tempered_log_p, axis=-1, kind="stable")[..., :top_k]
    if keep_ties:
        kth = np.take_along_axis(tempered_log_p, order[..., -1:], axis=-1)
        return tempered_log_p >= kth
    keep = np.zeros(tempered_log_p.shape, dtype=bool)
    np.put_along_axis(keep, order, True, axis=-1)
    return keep


def engine_and_trainer_logprobs(logits, token_ids, temperature=1.0, top_k=None, *, keep_ties=False):
    r"""Log-probabilities of sampled tokens as a truncating engine and a plain trainer report them.

    The engine samples from :math:`\mathrm{softmax}(z/T)` restricted to its top-``k`` tokens S and
    renormalised; the trainer recomputes :math:`\log\mathrm{softmax}(z/T)` with no truncation. So
    ``engine = trainer - log Z_S`` with :math:`Z_S` the tempered mass of S, and the per-token ratio
    ``exp(trainer - engine)`` is :math:`Z_S \le 1`.

    Parameters
    ----------
    logits : array_like of float, shape [..., V]
    token_ids : array_like of int, shape [...]
        The sampled tokens; each must lie in the engine's top-k support (else ``ValueError``).
    temperature : float, > 0
    top_k : int in [1, V] or None (no truncation)
    keep_ties : bool, default False
        The engine's rule at a tie with the ``k``-th token: ``False`` keeps exactly ``k`` (smaller id
        first, as vllm==0.33.0's Triton kernel ``_topk_topp_kernel``), ``True`` keeps every tied token
        (transformers==5.24.0 ``TopKLogitsWarper``, vllm==0.33.0 ``apply_top_k_only``). Exercise 21
        accepts either.

    Returns
    -------
    dict
        ``{"engine": float64 [...], "trainer": float64 [...]}``.

    Examples
    --------
    >>> out = engine_and_trainer_logprobs([[2.0, 1.0, 0.0]], [0], temperature=1.0, top_k=2)
    >>> out["trainer"].round(6), out["engine"].round(6)
    (array([-0.407606]), array([-0.313262]))
    >>> out = engine_and_trainer_logprobs([[2.0, 1.0, 0.0]], [2])
    >>> out["trainer"].round(6), out["engine"].round(6)
    (array([-2.407606]), array([-2.407606]))
    """
    z = as_float_array(logits, "logits", min_ndim=1, logits=True)
    ids = as_int_array(token_ids, "token_ids")
    if ids.shape != z.shape[:-1]:
        raise ValueError(f"token_ids must have shape logits.shape[:-1] = {z.shape[:-1]}, got {ids.shape}")
    vocab = z.shape[-1]
    if ids.size and (ids.min() < 0 or ids.max() >= vocab):
        raise ValueError(f"token_ids must lie in [0, {vocab - 1}] (the vocabulary of logits)")
    temperature = as_float(temperature, "temperature", positive=True)
    tempered = stable_log_softmax(z / temperature, axis=-1)
    trainer = np.take_along_axis(tempered, ids[..., None], axis=-1)[..., 0]
    if top_k is None:
        return {"engine": trainer.copy(), "trainer": trainer}
    top_k = as_int(top_k, "top_k", low=1, high=vocab)
    if not isinstance(keep_ties, (bool, np.bool_)):
        raise TypeError(f"keep_ties must be a bool, got {keep_ties!r}")
    keep = _top_k_keep(tempered, top_k, keep_ties)
    if not np.all(np.take_along_axis(keep, ids[..., None], axis=-1)):
        raise ValueError("token_ids: a token lies outside the engine's top-k support, so the engine "
                         "could not have sampled it")
    # log Z_S from whichever side is small: log1p(-dropped mass) keeps full relative precision when
    # truncation removes little, log(kept mass) when it removes most.
    probabilities = np.exp(tempered)
    kept = np.sum(np.where(keep, probabilities, 0.0), axis=-1)
    dropped = np.sum(np.where(keep, 0.0, probabilities), axis=-1)
    log_z = np.where(dropped < 0.5, np.log1p(-np.minimum(dropped, 0.5)), np.log(np.where(dropped < 0.5, 1.0, kept)))
    return {"engine": trainer - log_z, "trainer": trainer}


def truncated_is_weights(trainer_logprobs, engine_logprobs, mask, cap=2.0):
    r"""Truncated importance-sampling weights for the sampler-trainer mismatch.

    Per token, ``min(exp(trainer - engine), cap)`` on response positions and 0 elsewhere; per
    sequence, ``min(exp(sum over the response of (trainer - engine)), cap)``, computed as
    ``exp(min(sum, log cap))`` so that a long response never overflows. Values at positions where
    ``mask`` is False are ignored (padding may hold anything, NaN included).

    Parameters
    ----------
    trainer_logprobs, engine_logprobs : array_like of float, shape [B, L]
    mask : array_like of bool or 0/1, shape [B, L]
    cap : float, > 0 (``np.inf``: no truncation)

    Returns
    -------
    dict
        ``{"token": float64 [B, L], "sequence": float64 [B]}``.

    Examples
    --------
    >>> w = truncated_is_weights([[-1.0, -2.0, 0.0]], [[-1.5, -1.0, 7.0]], [[1, 1, 0]], cap=1.5)
    >>> w["token"].round(6), w["sequence"].round(6)
    (array([[1.5     , 0.367879, 0.      ]]), array([0.606531]))
    """
    mask = as_bool_mask(mask, "mask", ndim=2)
    trainer = as_float_array(trainer_logprobs, "trainer_logprobs", ndim=2, finite=False)
    engine = as_float_array(engine_logprobs, "engine_logprobs", ndim=2, finite=False)
    for name, array in (("trainer_logprobs", trainer), ("engine_logprobs", engine)):
        if array.shape != mask.shape:
            raise ValueError(f"{name} must have the mask's shape {mask.shape}, got {array.shape}")
        if not np.all(np.isfinite(array[mask])):
            raise ValueError(f"{name} must be finite on response positions (mask True)")
    if isinstance(cap, (bool, np.bool_)) or not isinstance(cap, (int, float, np.integer, np.floating)):
        raise TypeError(f"cap must be a positive number, got {type(cap).__name__}")
    cap = float(cap)
    if not cap > 0:  # NaN fails too
        raise ValueError(f"cap must be positive (np.inf for no truncation), got {cap}")
    log_ratio = np.where(mask, trainer - np.where(mask, engine, 0.0), 0.0)
    log_cap = np.log(cap)
    with np.errstate(over="ignore"):  # only reachable with cap = inf, where inf is the honest weight
        token = np.where(mask, np.exp(np.minimum(log_ratio, log_cap)), 0.0)
        sequence = np.exp(np.minimum(log_ratio.sum(axis=1), log_cap))
    return {"token": token, "sequence": sequence}


# ----------------------------------------------------------------------------- 22


def _policy_pair(theta, ref_logits) -> tuple:
    theta = as_float_array(theta, "theta", min_ndim=1, logits=True)
    ref = as_float_array(ref_logits, "ref_logits", min_ndim=1, logits=True)
    if theta.shape != ref.shape:
        raise ValueError(f"theta and ref_logits must have the same shape [..., V], got {theta.shape} and {ref.shape}")
    log_q = stable_log_softmax(theta, axis=-1)
    log_p = stable_log_softmax(ref, axis=-1)
    return log_q, log_p


def _expected_score_weighted(q: np.ndarray, weight: np.ndarray) -> np.ndarray:
    r""":math:`\sum_x q(x)\,w(x)\,\nabla_\theta \log q(x)` for a softmax policy, where
    :math:`\nabla_\theta \log q(x) = e_x - q`: it equals :math:`q \odot (w - \mathbb E_q w)`."""
    return q * (weight - np.sum(q * weight, axis=-1, keepdims=True))


def _q_times_expm1(q: np.ndarray, p: np.ndarray, log_r: np.ndarray) -> np.ndarray:
    r""":math:`q\,(r - 1) = p - q` without forming :math:`r`: where :math:`q` underflows and :math:`p` does
    not, :math:`r = e^{\log r}` overflows and :math:`q\,r` is :math:`0 \cdot \infty`. ``q * expm1(log r)``
    keeps full relative precision near :math:`r = 1`; from :math:`\log r \ge 1` on, :math:`p \ge e\,q`
    and ``p - q`` loses nothing to cancellation."""
    small = log_r < 1.0
    return np.where(small, q * np.expm1(np.minimum(log_r, 1.0)), p - q)


def _centred(q: np.ndarray, weighted: np.ndarray) -> np.ndarray:
    r""":math:`q \odot (w - \mathbb E_q w)` from :math:`q \odot w` (``weighted``): the same as
    :func:`_expected_score_weighted` where :math:`w` itself would overflow but :math:`q\,w` does not."""
    return weighted - q * np.sum(weighted, axis=-1, keepdims=True)


def true_kl_gradients(theta, ref_logits):
    r"""Exact gradients, with respect to the logits ``theta`` of :math:`q_\theta = \mathrm{softmax}(\theta)`,
    of both KL directions against the fixed reference :math:`p = \mathrm{softmax}(\text{ref\_logits})`.

    * ``"reverse"``: :math:`\nabla_\theta D_{\mathrm{KL}}(q_\theta\|p) = q \odot (d - \mathbb E_q d)`, with
      :math:`d = \log q - \log p`;
    * ``"forward"``: :math:`\nabla_\theta D_{\mathrm{KL}}(p\|q_\theta) = q - p`.

    Examples
    --------
    >>> g = true_kl_gradients([0.0, 0.0], [0.0, 0.0])
    >>> g["reverse"], g["forward"]
    (array([0., 0.]), array([0., 0.]))
    >>> true_kl_gradients([1.0, 0.0], [0.0, 0.0])["forward"].round(6)
    array([ 0.231059, -0.231059])
    """
    log_q, log_p = _policy_pair(theta, ref_logits)
    q, p = np.exp(log_q), np.exp(log_p)
    return {"reverse": _expected_score_weighted(q, log_q - log_p), "forward": q - p}


def loss_gradients(theta, ref_logits):
    r"""Expected gradient of each estimator used **as a loss**, samples from the current policy.

    With :math:`x \sim q_\theta` held fixed and :math:`\log r = \log p(x) - \log q_\theta(x)`
    differentiated through :math:`\log q_\theta(x)` only (as autograd does on a sampled batch), the
    exact expectation over the vocabulary of :math:`\nabla_\theta k(x)`:

    * k1 = -log r: :math:`\mathbb E_q[\nabla \log q] = 0`;
    * k2 = (log r)^2 / 2: :math:`\mathbb E_q[-\log r\,\nabla\log q]` = the reverse-KL gradient;
    * k3 = (r - 1) - log r: :math:`\mathbb E_q[(1 - r)\nabla\log q] = q - p` = the forward-KL gradient.

    Examples
    --------
    >>> g = loss_gradients([1.0, 0.0, -1.0], [0.0, 0.5, 0.0])
    >>> np.allclose(g["k1"], 0), np.allclose(g["k2"], true_kl_gradients([1.0, 0.0, -1.0], [0.0, 0.5, 0.0])["reverse"])
    (True, True)
    """
    log_q, log_p = _policy_pair(theta, ref_logits)
    q = np.exp(log_q)
    log_r = log_p - log_q
    # d k / d log q(x) for each estimator; the chain rule through log q(x) gives E_q[that * (e_x - q)].
    return {
        "k1": _expected_score_weighted(q, np.ones_like(q)),
        "k2": _expected_score_weighted(q, -log_r),
        "k3": _centred(q, -_q_times_expm1(q, np.exp(log_p), log_r)),
    }


def reward_gradients(theta, ref_logits):
    r"""Expected gradient of each estimator used **as a reward** (a penalty with no gradient of its
    own, as in PPO's KL-shaped reward): :math:`\nabla_\theta \mathbb E_{q_\theta}[k] ` through the
    sampling distribution only, :math:`\mathbb E_q[k(x)\,\nabla_\theta\log q(x)]`.

    k1 gives exactly the reverse-KL gradient; k2 and k3 give other vectors.

    Examples
    --------
    >>> theta, ref = [1.0, 0.0, -1.0], [0.0, 0.5, 0.0]
    >>> np.allclose(reward_gradients(theta, ref)["k1"], true_kl_gradients(theta, ref)["reverse"])
    True
    """
    log_q, log_p = _policy_pair(theta, ref_logits)
    q = np.exp(log_q)
    log_r = log_p - log_q
    return {
        "k1": _expected_score_weighted(q, -log_r),
        "k2": _expected_score_weighted(q, 0.5 * log_r ** 2),
        "k3": _centred(q, _q_times_expm1(q, np.exp(log_p), log_r) - q * log_r),
    }


# ----------------------------------------------------------------------------- 23


def _mode(mode) -> str:
    if not isinstance(mode, str):
        raise TypeError(f"mode must be one of {AGGREGATION_MODES}, got {type(mode).__name__}")
    if mode not in AGGREGATION_MODES:
        raise ValueError(f"mode must be one of {AGGREGATION_MODES}, got {mode!r}")
    return mode


def token_weights(mask, mode, max_len=None):
    r"""The weight each token's loss gets in the batch loss: ``loss = sum(weights * per_token_loss)``.

    For B sequences with :math:`n_i` response tokens (``mask`` is [B, L]):

    * ``"token_mean"`` (DAPO's token-level loss): :math:`1 / \sum_j n_j` (0 if the batch has no token);
    * ``"sequence_mean"`` (the original GRPO objective): :math:`1 / (B\,n_i)` (a row with no token has
      weight 0 and still counts in B);
    * ``"constant"`` (Dr. GRPO): :math:`1 / (B \cdot \text{max\_len})`, with ``max_len >= L`` required.

    Positions where ``mask`` is False get 0.

    Examples
    --------
    >>> token_weights([[1, 1, 0], [1, 0, 0]], "sequence_mean")
    array([[0.25, 0.25, 0.  ],
           [0.5 , 0.  , 0.  ]])
    >>> token_weights([[1, 1, 0], [1, 0, 0]], "constant", max_len=4)
    array([[0.125, 0.125, 0.   ],
           [0.125, 0.   , 0.   ]])
    """
    mask = as_bool_mask(mask, "mask", ndim=2)
    mode = _mode(mode)
    batch, length = mask.shape
    if batch == 0:
        raise ValueError("mask must hold at least one sequence (shape [B, L] with B >= 1)")
    if mode == "constant":
        if max_len is None:
            raise ValueError("max_len is required for mode 'constant' (the maximum response length)")
        max_len = as_int(max_len, "max_len", low=max(1, length))
        per_token = np.full(mask.shape, 1.0 / (batch * max_len))
    elif mode == "token_mean":
        total = int(mask.sum())
        per_token = np.full(mask.shape, 1.0 / total if total else 0.0)
    else:
        counts = mask.sum(axis=1, keepdims=True)
        per_token = np.where(counts > 0, 1.0 / (batch * np.maximum(counts, 1)), 0.0) * np.ones(mask.shape)
    return np.where(mask, per_token, 0.0)


def aggregate_loss(per_token_loss, mask, mode, max_len=None):
    r"""The batch loss ``sum(token_weights(mask, mode, max_len) * per_token_loss)`` as a float.

    Values of ``per_token_loss`` where ``mask`` is False are ignored (they may be anything).

    Examples
    --------
    >>> aggregate_loss([[1.0, 3.0, 9.0], [4.0, 0.0, 0.0]], [[1, 1, 0], [1, 0, 0]], "token_mean")
    2.6666666666666665
    >>> aggregate_loss([[1.0, 3.0, 9.0], [4.0, 0.0, 0.0]], [[1, 1, 0], [1, 0, 0]], "sequence_mean")
    3.0
    """
    weights = token_weights(mask, mode, max_len)
    loss = as_float_array(per_token_loss, "per_token_loss", ndim=2, finite=False)
    if loss.shape != weights.shape:
        raise ValueError(f"per_token_loss must have the mask's shape {weights.shape}, got {loss.shape}")
    kept = weights > 0
    if not np.all(np.isfinite(loss[kept])):
        raise ValueError("per_token_loss must be finite where mask is True")
    return float(np.sum(weights[kept] * loss[kept]))


# ----------------------------------------------------------------------------- 24


def _labels(labels, ignore_index) -> tuple:
    labels = as_int_array(labels, "labels", ndim=2)
    ignore_index = as_int(ignore_index, "ignore_index")
    if labels.shape[1] < 2:
        raise ValueError(f"labels must have at least 2 positions per row (shape [B, L], L >= 2), got {labels.shape}")
    return labels, ignore_index


def loss_positions(labels, ignore_index=-100):
    r"""Positions of the logits that receive a loss term (and so gradient) under a causal-LM loss
    that shifts ``labels`` itself: position t is scored against ``labels[:, t + 1]``, so it counts when
    that label is not ``ignore_index``; the last position never counts.

    Examples
    --------
    >>> loss_positions([[-100, -100, 7, 8]])
    array([[False,  True,  True, False]])
    """
    labels, ignore_index = _labels(labels, ignore_index)
    positions = np.zeros(labels.shape, dtype=bool)
    positions[:, :-1] = labels[:, 1:] != ignore_index
    return positions


def causal_lm_loss(logits, labels, ignore_index=-100):
    r"""Mean next-token negative log-likelihood, shifting ``labels`` inside (as transformers'
    ``ForCausalLMLoss`` does): logits at t are scored against ``labels[:, t + 1]``; targets equal to
    ``ignore_index`` are skipped; the mean is over the remaining targets of the whole batch.

    Raises ``ValueError`` when no target is left (the mean would be 0/0) or a label lies outside the
    vocabulary.

    Examples
    --------
    >>> causal_lm_loss(np.zeros((1, 3, 4)), [[-100, 2, 3]])  # uniform over 4 tokens: log 4
    1.3862943611198906
    """
    z = as_float_array(logits, "logits", ndim=3, logits=True)
    labels, ignore_index = _labels(labels, ignore_index)
    if labels.shape != z.shape[:2]:
        raise ValueError(f"labels must have shape logits.shape[:2] = {z.shape[:2]}, got {labels.shape}")
    targets = labels[:, 1:]
    counted = targets != ignore_index
    if not counted.any():
        raise ValueError("labels: every target is ignore_index, so the mean loss is undefined")
    vocab = z.shape[2]
    if targets[counted].min() < 0 or targets[counted].max() >= vocab:
        raise ValueError(f"labels must be ignore_index or token ids in [0, {vocab - 1}]")
    log_p = stable_log_softmax(z[:, :-1, :], axis=-1)
    picked = np.take_along_axis(log_p, np.where(counted, targets, 0)[..., None], axis=-1)[..., 0]
    return float(-np.sum(picked[counted]) / np.count_nonzero(counted))


def diagnose_labels(input_ids, labels, ignore_index=-100):
    r"""What a ``labels`` tensor passed to a self-shifting causal-LM loss looks like.

    * ``"ok"``: every label that is not ``ignore_index`` equals the input id at the same position
      (the model shifts them itself);
    * ``"double_shift"``: otherwise, every such label equals the input id one position later and the
      last position is ignored (the caller already shifted, so the loss shifts twice);
    * ``"mismatch"``: neither.

    Raises ``ValueError`` when every label is ``ignore_index`` (nothing to diagnose).

    Examples
    --------
    >>> diagnose_labels([[5, 6, 7, 8]], [[-100, -100, 7, 8]])
    'ok'
    >>> diagnose_labels([[5, 6, 7, 8]], [[-100, 7, 8, -100]])
    'double_shift'
    """
    ids = as_int_array(input_ids, "input_ids", ndim=2)
    labels, ignore_index = _labels(labels, ignore_index)
    if ids.shape != labels.shape:
        raise ValueError(f"input_ids and labels must have the same shape, got {ids.shape} and {labels.shape}")
    counted = labels != ignore_index
    if not counted.any():
        raise ValueError("labels: every label is ignore_index, there is nothing to diagnose")
    if np.all(labels[counted] == ids[counted]):
        return "ok"
    if not counted[:, -1].any() and np.all((labels[:, :-1] == ids[:, 1:])[counted[:, :-1]]):
        return "double_shift"
    return "mismatch"


__all__ = [
    "AGGREGATION_MODES", "LABEL_DIAGNOSES", "aggregate_loss", "causal_lm_loss", "diagnose_labels",
    "engine_and_trainer_logprobs", "loss_gradients", "loss_positions", "reward_gradients", "token_weights",
    "true_kl_gradients", "truncated_is_weights",
]
