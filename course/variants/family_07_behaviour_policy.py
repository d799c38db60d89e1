"""Exercise 07's variants: base logits for five tokens, a temperature, one banned token and a top-p threshold.

What varies: the five logits (distinct, from -1 to 2.5 in steps of 0.1), the temperature (0.51 to 0.89
in steps of 0.01, never a multiple of 0.05: the truncation explorer's temperatures are), which token is banned (any but the sampled one, token 1) and the top-p threshold
(0.60 to 0.95 in steps of 0.01). A variant is one of :data:`CANDIDATES`, 8,000 settings stored in
``data/07_behaviour_policy.json`` with variant 0 (:func:`course.variants.family_data` reads it), made once on
the instructor's side (``autograder/exercises/07_behaviour_policy/lesson.py``) and checked there again
by every test run (so this package computes nothing of the exercise).

What each draw keeps of the lesson, and which slips it keeps apart from the answer, is the
instructor's to state: it is tested in ``tests/test_variants_ex07_*.py`` and described in
``docs/DESIGN.md``. This file holds parameters only.
"""

from course.variants import Draw, Family, family_data

#: The grids of the encoding below, and its characters (one per field: the index in the field's grid).
_LOGITS = tuple(v / 10 for v in range(-10, 26))
_TEMPERATURES = tuple(v / 100 for v in range(50, 91) if v % 5 != 0)
_BANNED = (0, 2, 3, 4)
_TOP_P = tuple(v / 100 for v in range(60, 96))
_DIGITS = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"

#: The family's numbers (``data/07_behaviour_policy.json``): variant 0, and every setting a student can
#: get, eight characters each: five logits, temperature, banned token, top-p.
_DATA = family_data("07_behaviour_policy")
SEED = _DATA["seed"]
#: The settings' codes in one string, as the instructor's side writes them (``lesson.codes``).
_CODES = "".join(_DATA["settings"])

_INDEX = {c: i for i, c in enumerate(_DIGITS)}


def _decode(code: str) -> tuple:
    index = [_INDEX[c] for c in code]
    return (tuple(_LOGITS[i] for i in index[:5]), _TEMPERATURES[index[5]], _BANNED[index[6]], _TOP_P[index[7]])


#: (logits, temperature, banned token, top-p) of every variant a student can get (token 1 is sampled).
CANDIDATES = tuple(_decode(code) for code in _DATA["settings"])


def _draw(d: Draw) -> dict:
    logits, temperature, banned, top_p = d.choice(CANDIDATES)
    return {"logits": tuple(float(v) for v in logits), "temperature": float(temperature),
            "banned": (int(banned),), "top_p": float(top_p), "token": 1}


def _rows(parameters) -> list:
    return [("base logits z (tokens 0 to 4)", ", ".join(f"{v:g}" for v in parameters["logits"])),
            ("temperature T", f"{parameters['temperature']:g}"),
            ("banned token", ", ".join(str(t) for t in parameters["banned"])),
            ("top-p threshold", f"{parameters['top_p']:g}"),
            ("sampled token", str(parameters["token"]))]


FAMILY = Family("07_behaviour_policy", SEED, _draw, _rows)
