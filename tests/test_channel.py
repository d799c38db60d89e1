"""The channel between student code and the judge: plain data in, plain data out, nothing live survives."""

from __future__ import annotations

import dataclasses
import json
import math
from collections import namedtuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from autograder.channel import (
    MAX_ARRAY_BYTES, Call, ObjectData, Raised, RecordTuple, Returned, SetData, Unreadable, decode_outcome,
    encode_outcome, perform_call,
)


def roundtrip(value):
    return decode_outcome(encode_outcome(Returned(value)))


def run(target, *args, timeout=5.0, **kwargs):
    call = Call.from_json(json.loads(json.dumps(Call("f", args, kwargs).to_json())))
    return decode_outcome(perform_call(call, {"f": target}, timeout=timeout))


@settings(max_examples=150, deadline=None)
@given(hnp.arrays(dtype=st.sampled_from([np.float64, np.float32, np.int64, np.int8, np.bool_, np.uint16]),
                  shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)))
def test_arrays_come_back_bit_for_bit(array):
    value = roundtrip(array).value
    assert type(value) is np.ndarray and value.dtype == array.dtype and value.shape == array.shape
    assert value.tobytes() == array.tobytes()


@settings(max_examples=150, deadline=None)
@given(st.floats(allow_nan=True, allow_infinity=True))
def test_floats_keep_every_bit_and_nan_inf(x):
    back = roundtrip(x).value
    assert type(back) is float
    assert (math.isnan(x) and math.isnan(back)) or back == x and math.copysign(1, back) == math.copysign(1, x)


def test_containers_scalars_and_records_are_rebuilt_as_plain_data():
    Pair = namedtuple("Pair", "selected mask")

    @dataclasses.dataclass
    class Metrics:
        token_count: np.ndarray
        note: str

    value = {"a": [1, 2.5, None, True], "b": (np.float64(1.5), np.int32(3)), "s": {3, 1},
             "r": Pair(np.zeros(2), np.ones(2, bool)), "m": Metrics(np.arange(3), "x")}
    back = roundtrip(value).value
    assert back["a"] == [1, 2.5, None, True] and back["b"] == (1.5, 3)
    assert type(back["b"][0]) is float and type(back["b"][1]) is int
    assert isinstance(back["s"], SetData) and sorted(back["s"]) == [1, 3]
    assert isinstance(back["r"], RecordTuple) and back["r"].field_names == ("selected", "mask")
    assert isinstance(back["m"], ObjectData) and back["m"].type_name == "Metrics"
    assert back["m"].fields["token_count"].tolist() == [0, 1, 2]


def test_objects_that_lie_about_equality_arrive_as_their_data():
    class Liar(np.ndarray):
        def __eq__(self, other):
            return True

    class Always:
        def __eq__(self, other):
            return True

    arrived = roundtrip(np.zeros(3).view(Liar)).value
    assert type(arrived) is np.ndarray and not (arrived == np.ones(3)).all()
    assert isinstance(roundtrip(Always()), Unreadable)


@pytest.mark.parametrize("value, reason", [
    ((i for i in range(3)), "not data"),
    (lambda: 1, "not data"),
    (np.zeros(MAX_ARRAY_BYTES // 8 + 1), "too large"),
    (np.array([{1: 2}], dtype=object), "mapping keys"),
])
def test_values_that_cannot_travel_become_unreadable(value, reason):
    if reason == "mapping keys":
        value = {(1, 2): 3}
    outcome = roundtrip(value)
    assert isinstance(outcome, Unreadable) and reason in outcome.reason


def test_self_referencing_values_do_not_crash_the_channel():
    loop = []
    loop.append(loop)
    assert isinstance(roundtrip(loop), Unreadable)


@pytest.mark.parametrize("garbage", [b"", b"{", b"\xff\xfe", json.dumps({"kind": "returned"}).encode(),
                                     json.dumps({"kind": "returned", "value": {"t": "ndarray", "npy": "AAAA"}}).encode()])
def test_malformed_bytes_decode_to_unreadable_never_raise(garbage):
    assert isinstance(decode_outcome(garbage), Unreadable)


def test_calls_capture_output_warnings_and_exceptions_even_system_exit():
    import warnings

    def noisy(x):
        print("hello" * 10_000)
        warnings.warn("careful")
        import sys
        print("to stderr", file=sys.stderr)
        return x + 1

    outcome = run(noisy, 1)
    assert isinstance(outcome, Returned) and outcome.value == 2
    assert outcome.stdout.startswith("hello") and "more characters" in outcome.stdout
    assert "to stderr" in outcome.stderr and any("careful" in w for w in outcome.warnings)

    def leave():
        raise SystemExit(3)

    raised = run(leave)
    assert isinstance(raised, Raised) and raised.type_name == "SystemExit" and raised.is_a("BaseException")


def test_a_call_that_never_returns_times_out():
    def spin():
        while True:
            pass

    outcome = run(spin, timeout=0.3)
    assert isinstance(outcome, Unreadable) and "did not finish" in outcome.reason


def test_arguments_are_fresh_for_every_call():
    def mutate(x):
        x[...] = 99
        return x

    call = Call("f", (np.zeros(2),))
    for _ in range(2):
        fresh = Call.from_json(call.to_json())
        outcome = decode_outcome(perform_call(fresh, {"f": mutate}))
        assert outcome.value.tolist() == [99, 99]
    assert call.args[0].tolist() == [0, 0]


def test_reading_a_missing_name_says_what_to_run():
    outcome = decode_outcome(perform_call(Call.value("answer"), {}))
    assert isinstance(outcome, Unreadable) and "answer" in outcome.reason


def test_text_of_a_forged_outcome_is_clipped_on_decoding():
    """The encoder clips messages and printed text, but the bytes may come from a forged frame: a
    megabyte exception message would travel into every failing case's feedback, the report and the page."""
    import json

    from autograder.channel import MAX_MESSAGE

    # Every text over MAX_MESSAGE and both lists over their 20 entries, in 54 MB: already above the
    # 32 MB a sandbox reply may hold (1,000-entry lists, 2 GB, cost 38 s and tested nothing more).
    big = "x" * 1_000_000
    forged = json.dumps({"kind": "raised", "type": big, "classes": [big] * 25 + ["ValueError"], "message": big,
                         "stdout": big, "stderr": big, "warnings": [big] * 25}).encode()
    outcome = decode_outcome(forged)
    assert isinstance(outcome, Raised)
    texts = [outcome.type_name, outcome.message, outcome.stdout, outcome.stderr, *outcome.classes, *outcome.warnings]
    assert max(map(len, texts)) <= MAX_MESSAGE + 10 and len(outcome.classes) <= 20 and len(outcome.warnings) <= 20
    unreadable = decode_outcome(json.dumps({"kind": "unreadable", "reason": big}).encode())
    assert isinstance(unreadable, Unreadable) and len(unreadable.reason) <= MAX_MESSAGE + 10


def test_exact_numbers_travel_as_the_number_they_are_worth():
    from decimal import Decimal
    from fractions import Fraction

    class EqualFraction(Fraction):  # a subclass lies about equality; only its value travels
        def __eq__(self, other):
            return True

        __hash__ = Fraction.__hash__

    class LyingDecimal(Decimal):
        def as_tuple(self):
            return (0, (9,), 0)

        def __float__(self):
            return 9.0

    cases = [
        (Fraction(4, 5), 0.8), (Fraction(-1, 3), -1 / 3), (Fraction(6, 2), 3), (EqualFraction(4, 5), 0.8),
        (Fraction(-10 ** 400, 3), -math.inf), (Fraction(10 ** 400 + 1, 10 ** 400), 1.0), (Fraction(1, 10 ** 400), 0.0),
        (Decimal("0.8"), 0.8), (Decimal("-0"), -0.0), (Decimal("1E+999999"), math.inf), (Decimal("-Infinity"), -math.inf),
        (Decimal("1E-999999"), 0.0), (LyingDecimal("0.25"), 0.25),
        (np.float32(0.5), 0.5), (np.int64(7), 7), (np.longdouble(0.25), 0.25),
    ]
    for value, expected in cases:
        arrived = roundtrip(value).value
        assert type(arrived) is type(expected) and arrived == expected, (value, arrived)
        assert math.copysign(1, arrived) == math.copysign(1, expected)
    for nan in (Decimal("NaN"), Decimal("sNaN"), Decimal("-NaN")):
        arrived = roundtrip(nan).value
        assert type(arrived) is float and math.isnan(arrived)
    # Inside containers and object arrays too.
    assert roundtrip([Fraction(1, 2), {"x": Decimal("2.5")}]).value == [0.5, {"x": 2.5}]
    assert roundtrip(np.array([Fraction(1, 4)], dtype=object)).value.tolist() == [0.25]
    # A 0-d array stays a 0-d float64 array (the readers take it as a number).
    arrived = roundtrip(np.array(0.8)).value
    assert type(arrived) is np.ndarray and arrived.shape == () and arrived.dtype == np.float64


def test_exact_numbers_with_absurdly_many_digits_are_refused_not_computed():
    from decimal import Decimal, localcontext
    from fractions import Fraction

    outcome = roundtrip(Fraction(3 ** 300_000, 2 ** 500_000))
    assert isinstance(outcome, Unreadable) and "too many digits" in outcome.reason
    with localcontext() as context:
        context.prec = 200_000
        huge = Decimal(1) / Decimal(7)
    outcome = roundtrip(huge)
    assert isinstance(outcome, Unreadable) and "too many digits" in outcome.reason


def test_a_set_is_the_same_text_whatever_the_hash_seed():
    """Set order follows the process's string hash seed; the encoding must not (autograded notebooks
    store encoded answers, and a regrade of the same work must write the same file)."""
    import os
    import subprocess
    import sys

    fields = {"temperature", "top_k", "top_p", "min_p", "order", "stop_rules", "sampling_seed", 3, 2.5, ("x", "y")}
    program = ("import json; from autograder.channel import encode_value; "
               f"print(json.dumps(encode_value({fields!r})))")
    texts = {subprocess.run([sys.executable, "-c", program], env={**os.environ, "PYTHONHASHSEED": seed},
                            capture_output=True, text=True, check=True).stdout for seed in ("1", "2", "3", "4")}
    assert len(texts) == 1, texts
    decoded = roundtrip(fields).value
    assert isinstance(decoded, SetData) and set(decoded) == fields and len(decoded) == len(fields)
