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
    "prints_and_warns": SEED_STYLE.replace(
        "    m = np.asarray(mask).astype(bool)\n",
        "    m = np.asarray(mask).astype(bool)\n    print('weights for', m.sum(), 'tokens')\n"
        "    import warnings; warnings.warn('truncating')\n"),
}

WRONG = {
    "engine_not_renormalised": (answer(engine="trainer"), "engine-not-renormalised"),
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
    quiet_mistakes = ("engine_not_renormalised", "not_truncated")
