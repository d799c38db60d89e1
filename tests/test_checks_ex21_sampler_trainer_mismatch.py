"""The hidden checks of exercise 21 against a corpus of correct, mistaken and hostile answers."""

from __future__ import annotations

from check_support import CodingCheckTests

STEM = "21_sampler_trainer_mismatch"

LOGPROBS = """
import numpy as np

def engine_and_trainer_logprobs(logits, token_ids, temperature=1.0, top_k=None):
    z = np.asarray(logits, dtype=np.float64)
    ids = np.asarray(token_ids)
    if ids.shape != z.shape[:-1] or not np.issubdtype(ids.dtype, np.integer):
        raise ValueError("token_ids must be integer ids of shape logits.shape[:-1]")
    if not np.all(np.isfinite(z)) or not temperature > 0:
        raise ValueError("finite logits and a positive temperature please")
    s = z / temperature
    lp = s - s.max(axis=-1, keepdims=True)
    lp = lp - np.log(np.exp(lp).sum(axis=-1, keepdims=True))
    trainer = np.take_along_axis(lp, ids[..., None], axis=-1)[..., 0]
    if top_k is None:
        return {"engine": trainer, "trainer": trainer}
    if not 1 <= top_k <= z.shape[-1]:
        raise ValueError("top_k out of range")
    ranks = np.argsort(np.argsort(-lp, axis=-1, kind="stable"), axis=-1, kind="stable")
    keep = ranks < top_k
    if not np.all(np.take_along_axis(keep, ids[..., None], axis=-1)):
        raise ValueError("token_ids: outside the top-k support")
    log_z = np.log(np.where(keep, np.exp(lp), 0.0).sum(axis=-1))
    return {"engine": ENGINE, "trainer": TRAINER}
"""

WEIGHTS = """
def truncated_is_weights(trainer_logprobs, engine_logprobs, mask, cap=2.0):
    m = np.asarray(mask).astype(bool)
    t = np.asarray(trainer_logprobs, dtype=np.float64)
    e = np.asarray(engine_logprobs, dtype=np.float64)
    if m.ndim != 2 or t.shape != m.shape or e.shape != m.shape:
        raise ValueError("trainer_logprobs, engine_logprobs and mask must share one [B, L] shape")
    if not cap > 0:
        raise ValueError("cap must be positive")
    lr = np.where(m, t - np.where(m, e, 0.0), 0.0)
    TOKEN_AND_SEQUENCE
    return {"token": token, "sequence": sequence}
"""

GOOD_TS = ("token = np.where(m, np.minimum(np.exp(np.minimum(lr, 50.0)), cap), 0.0)\n"
           "    sequence = np.exp(np.minimum(lr.sum(axis=1), np.log(cap)))")


def answer(engine="trainer - log_z", trainer="trainer", token_and_sequence=GOOD_TS, weights_prefix=""):
    return (LOGPROBS.replace("ENGINE", engine).replace("TRAINER", trainer)
            + weights_prefix + WEIGHTS.replace("TOKEN_AND_SEQUENCE", token_and_sequence))


SEED_STYLE = answer()

CORRECT = {
    "vectorised": SEED_STYLE,
    "probabilities_renormalised": answer(
        engine="np.take_along_axis(np.log(np.where(keep, np.exp(lp), 0.0) / np.exp(log_z)[..., None] + 1e-300)"
               ", ids[..., None], axis=-1)[..., 0]"),
    "loops": """
import math
import numpy as np

def engine_and_trainer_logprobs(logits, token_ids, temperature=1.0, top_k=None):
    z = np.asarray(logits, dtype=float)
    ids = np.asarray(token_ids)
    if ids.shape != z.shape[:-1] or ids.dtype.kind not in "iu" or not temperature > 0 or not np.isfinite(z).all():
        raise ValueError("bad input")
    rows = z.reshape(-1, z.shape[-1])
    engine, trainer = [], []
    for row, tok in zip(rows, ids.ravel()):
        s = [v / temperature for v in row]
        m = max(s)
        log_norm = m + math.log(sum(math.exp(v - m) for v in s))
        lp = [v - log_norm for v in s]
        trainer.append(lp[tok])
        if top_k is None:
            engine.append(lp[tok])
            continue
        if not 1 <= top_k <= len(lp):
            raise ValueError("top_k")
        ranked = sorted(range(len(lp)), key=lambda i: (-lp[i], i))[:top_k]
        if tok not in ranked:
            raise ValueError("token_ids: not in the top-k set")
        engine.append(lp[tok] - math.log(sum(math.exp(lp[i]) for i in ranked)))
    shape = ids.shape
    return {"engine": np.array(engine).reshape(shape), "trainer": np.array(trainer).reshape(shape)}

def truncated_is_weights(trainer_logprobs, engine_logprobs, mask, cap=2.0):
    m = np.asarray(mask)
    t = np.asarray(trainer_logprobs, dtype=float)
    e = np.asarray(engine_logprobs, dtype=float)
    if m.ndim != 2 or t.shape != m.shape or e.shape != m.shape or not cap > 0:
        raise ValueError("bad input")
    token = np.zeros(m.shape)
    sequence = np.zeros(m.shape[0])
    for b in range(m.shape[0]):
        total = 0.0
        for i in range(m.shape[1]):
            if m[b, i]:
                d = t[b, i] - e[b, i]
                total += d
                token[b, i] = min(math.exp(min(d, 700.0)), cap)
        sequence[b] = math.exp(min(total, math.log(cap)))
    return {"token": token, "sequence": sequence}
""",
    # The engines' rule at a tie (transformers' TopKLogitsWarper, vLLM's apply_top_k_only): every token
    # tied with the k-th is kept, so the tied token "exactly k" drops is sampleable; the notebook accepts it.
    "keeps_ties_like_transformers": SEED_STYLE.replace(
        '    ranks = np.argsort(np.argsort(-lp, axis=-1, kind="stable"), axis=-1, kind="stable")\n'
        "    keep = ranks < top_k\n",
        "    kth = np.sort(lp, axis=-1)[..., -top_k][..., None]  # torch.topk(lp, k)[0][..., -1, None]\n"
        "    keep = ~(lp < kth)\n"),
    "prints_and_warns": SEED_STYLE.replace(
        "    m = np.asarray(mask).astype(bool)\n",
        "    m = np.asarray(mask).astype(bool)\n    print('weights for', m.sum(), 'tokens')\n"
        "    import warnings; warnings.warn('truncating')\n"),
}

WRONG = {
    "engine_not_renormalised": (answer(engine="trainer"), "engine-not-renormalised"),
    # the outside tester's w21i_logzsign
    "engine_log_z_added": (answer(engine="trainer + log_z"), "engine-log-z-sign"),
    # w21b_tieslarge, r8_21_default_sort, r8_21_argpartition: ties at the top-k cut kept another way
    "ties_larger_id_first": (SEED_STYLE.replace('np.argsort(-lp, axis=-1, kind="stable")',
                                                'np.argsort(lp, axis=-1, kind="stable")[..., ::-1]'), "tie-order",
                             "log-probs: a tied token that the smaller-id rule drops"),
    # Half of each rule: ties kept when computing log Z_S, yet the tied token outside exactly-k rejected.
    "ties_kept_in_z_but_rejected": (SEED_STYLE.replace(
        "    log_z = np.log(np.where(keep, np.exp(lp), 0.0).sum(axis=-1))",
        "    kth = np.sort(lp, axis=-1)[..., -top_k][..., None]\n"
        "    log_z = np.log(np.where(lp >= kth, np.exp(lp), 0.0).sum(axis=-1))"), "tie-rule-mixed",
        "log-probs: a tied token that the smaller-id rule drops"),
    "ties_default_sort": (SEED_STYLE.replace('np.argsort(-lp, axis=-1, kind="stable")', "np.argsort(-lp, axis=-1)"),
                          "tie-order"),
    "ties_argpartition": (SEED_STYLE.replace(
        '    ranks = np.argsort(np.argsort(-lp, axis=-1, kind="stable"), axis=-1, kind="stable")\n'
        "    keep = ranks < top_k\n",
        "    keep = np.zeros(lp.shape, dtype=bool)\n"
        "    np.put_along_axis(keep, np.argpartition(-lp, top_k - 1, axis=-1)[..., :top_k], True, axis=-1)\n"),
        "tie-order"),
    # w21l_notemp_check / r21a_negT: only T = 0 rejected
    "negative_temperature_accepted": (SEED_STYLE.replace("not temperature > 0", "temperature == 0"), "silent-bad-input",
                                      "log-probs: a negative temperature"),
    # r5_21_topk_high: top_k > V clamped silently
    "top_k_clamped": (SEED_STYLE.replace("    if not 1 <= top_k <= z.shape[-1]:",
                                         "    top_k = min(top_k, z.shape[-1])\n    if not 1 <= top_k <= z.shape[-1]:"),
                      "silent-bad-input", "log-probs: top_k larger than the vocabulary"),
    # w21m_naive_lsm: no max shift; NaN log-probs make every token look unsampleable
    "no_max_shift": (SEED_STYLE.replace(
        "    lp = s - s.max(axis=-1, keepdims=True)\n    lp = lp - np.log(np.exp(lp).sum(axis=-1, keepdims=True))",
        "    lp = np.log(np.exp(s) / np.exp(s).sum(axis=-1, keepdims=True))"), "no-max-shift",
        "engine log-probabilities, logits of order 1e3, T = 0.5, top-2"),
    # r21e_cap0: cap = 0 accepted
    "cap_zero_accepted": (SEED_STYLE.replace("if not cap > 0:", "if cap < 0:"), "silent-bad-input", "weights: cap = 0"),
    # r7_21_capinf_reject: cap = inf rejected although the text says it means no truncation
    "cap_inf_rejected": (SEED_STYLE.replace("if not cap > 0:", "if not 0 < cap < np.inf:"), None,
                         "token weights, cap = inf: no truncation"),
    # r7_21_emptyrow_zero / _one: an empty row's sequence weight is min(1, C)
    "empty_row_zero": (answer(token_and_sequence=GOOD_TS.replace(
        "sequence = np.exp(np.minimum(lr.sum(axis=1), np.log(cap)))",
        "sequence = np.where(m.any(axis=1), np.exp(np.minimum(lr.sum(axis=1), np.log(cap))), 0.0)")), None,
        "sequence weights, a row without response tokens, cap 2.0"),
    "empty_row_one": (answer(token_and_sequence=GOOD_TS.replace(
        "sequence = np.exp(np.minimum(lr.sum(axis=1), np.log(cap)))",
        "sequence = np.where(m.any(axis=1), np.exp(np.minimum(lr.sum(axis=1), np.log(cap))), 1.0)")), None,
        "sequence weights, a row without response tokens, cap 0.5"),
    # r5_21_w_noshape: the three arrays broadcast instead of compared
    "weights_broadcast": (SEED_STYLE.replace("    if m.ndim != 2 or t.shape != m.shape",
                                             "    t, e, m = np.broadcast_arrays(t, e, m)\n    if m.ndim != 2 or t.shape != m.shape"),
                          "silent-bad-input", "weights: one row of trainer log-probs for two rows of mask"),
    "trainer_truncated": (answer(trainer="trainer - log_z"), "trainer-truncated"),
    "temperature_left_out": (SEED_STYLE.replace("s = z / temperature", "s = z"), "temperature-left-out"),
    "ratio_inverted": (answer(token_and_sequence=GOOD_TS.replace("lr", "(-lr)")), "is-ratio-inverted"),
    "not_truncated": (answer(token_and_sequence="token = np.where(m, np.exp(lr), 0.0)\n"
                             "    sequence = np.exp(lr.sum(axis=1))"), "not-truncated"),
    "clipped_both_sides": (answer(token_and_sequence="token = np.where(m, np.clip(np.exp(lr), 1 / cap, cap), 0.0)\n"
                                  "    sequence = np.clip(np.exp(lr.sum(axis=1)), 1 / cap, cap)"), "clipped-both-sides"),
    "sequence_from_truncated_tokens": (answer(token_and_sequence=GOOD_TS.split("\n")[0] + "\n"
                                              "    sequence = np.prod(np.where(m, token, 1.0), axis=1)"),
                                       "sequence-from-truncated-tokens"),
    "padding_counted": (SEED_STYLE.replace("lr = np.where(m, t - np.where(m, e, 0.0), 0.0)",
                                           "lr = np.nan_to_num(t - e)").replace(
        "token = np.where(m, np.minimum", "token = np.where(True, np.minimum"), "padding-counted"),
    "no_input_checks": ("""
import numpy as np

def engine_and_trainer_logprobs(logits, token_ids, temperature=1.0, top_k=None):
    z = np.asarray(logits, dtype=float) / max(temperature, 1e-3)
    ids = np.asarray(token_ids).astype(int)
    lp = z - z.max(axis=-1, keepdims=True)
    lp = lp - np.log(np.exp(lp).sum(axis=-1, keepdims=True))
    trainer = np.take_along_axis(lp, ids.reshape(z.shape[:-1])[..., None] if ids.size == np.prod(z.shape[:-1])
                                 else np.zeros(z.shape[:-1] + (1,), dtype=int), axis=-1)[..., 0]
    k = z.shape[-1] if top_k is None else top_k
    keep = np.argsort(np.argsort(-lp, axis=-1, kind="stable"), axis=-1, kind="stable") < k
    return {"engine": trainer - np.log(np.where(keep, np.exp(lp), 0.0).sum(axis=-1)), "trainer": trainer}

def truncated_is_weights(trainer_logprobs, engine_logprobs, mask, cap=2.0):
    t = np.asarray(trainer_logprobs, dtype=float)
    e = np.asarray(engine_logprobs, dtype=float)
    m = np.broadcast_to(np.asarray(mask)[..., :1].astype(bool), t.shape)
    lr = np.where(m, t - e, 0.0)
    cap = abs(cap)
    return {"token": np.where(m, np.minimum(np.exp(np.minimum(lr, 50)), cap), 0.0),
            "sequence": np.exp(np.minimum(lr.sum(axis=1), np.log(cap)))}
""", "silent-bad-input"),
    "float32_results": (answer(engine="(trainer - log_z).astype(np.float32)", trainer="trainer.astype(np.float32)"),
                        "float32-output"),
}

ADVERSARIAL = {
    "always_equal_object": ("""
import numpy as np
class Anything:
    def __eq__(self, other): return True
    def __array__(self, dtype=None, copy=None): return np.zeros(3)
def engine_and_trainer_logprobs(logits, token_ids, temperature=1.0, top_k=None):
    return {"engine": Anything(), "trainer": Anything()}
def truncated_is_weights(trainer_logprobs, engine_logprobs, mask, cap=2.0):
    return {"token": Anything(), "sequence": Anything()}
""", ("public", "logprobs", "weights")),
    "nan_everywhere": ("""
import numpy as np
def engine_and_trainer_logprobs(logits, token_ids, temperature=1.0, top_k=None):
    n = np.full(np.shape(token_ids), np.nan)
    return {"engine": n, "trainer": n}
def truncated_is_weights(trainer_logprobs, engine_logprobs, mask, cap=2.0):
    return {"token": np.full(np.shape(mask), np.nan), "sequence": np.full(np.shape(mask)[0], np.nan)}
""", ("public", "logprobs", "weights")),
    "extra_keys_and_lists_of_strings": ("""
import numpy as np
def engine_and_trainer_logprobs(logits, token_ids, temperature=1.0, top_k=None):
    return {"engine": ["a"], "trainer": ["b"], "note": "ok"}
def truncated_is_weights(trainer_logprobs, engine_logprobs, mask, cap=2.0):
    return {"token": "everything", "sequence": None}
""", ("public", "logprobs", "weights")),
    "raises_everything": ("""
def engine_and_trainer_logprobs(logits, token_ids, temperature=1.0, top_k=None): raise SystemExit(2)
def truncated_is_weights(trainer_logprobs, engine_logprobs, mask, cap=2.0): raise KeyboardInterrupt
""", ("public", "logprobs", "weights", "validation")),
}


class TestSamplerTrainerMismatch(CodingCheckTests):
    stem = STEM
    groups = ("public", "logprobs", "weights", "validation")
    autograded_points, total_points = 8, 10
    correct = CORRECT
    wrong = WRONG
    hostile = ADVERSARIAL
    reference_module = "autograder.reference.further"
    reference_functions = ("engine_and_trainer_logprobs", "truncated_is_weights")
    quiet_mistakes = ("engine_not_renormalised", "not_truncated", "ties_larger_id_first")
    central_mistakes = ("engine_not_renormalised", "engine_log_z_added")


def test_an_extra_key_costs_only_the_open_checks_share():
    """"Exactly the keys" is graded once, in the open checks (as in exercise 18): one key too many (the
    outside tester's r21b_extrakey) costs half of the open checks' point, not every log-prob case."""
    from check_support import result_of

    source = SEED_STYLE.replace('return {"engine": ENGINE', 'return {"engine": ENGINE').replace(
        'return {"engine": trainer - log_z, "trainer": trainer}',
        'return {"engine": trainer - log_z, "trainer": trainer, "log_zs": log_z}')
    result = result_of(STEM, source)
    assert result.points_earned == 7.5, result.feedback()
    failed = [case.name for case in result.cases if not case.passed]
    assert failed == ["the open check: top-2 of four logits, T = 1"], failed


def test_an_all_zero_trainer_output_is_not_blamed_on_truncation():
    """The greedy engine's log-probability is 0 everywhere: an answer returning zeros for the trainer is
    wrong there, but nothing says it truncated the trainer."""
    from check_support import result_of

    result = result_of(STEM, answer(trainer="np.zeros_like(trainer)"), ["logprobs"])
    case = next(case for case in result.cases
                if case.name == "trainer log-probabilities, T = 1, top-1 (greedy): the engine log-prob is 0")
    assert not case.passed and case.misconception is None
    assert case.message == "'trainer' is not correct for this input"
