"""The one student-id rule (``autograder.student_ids``): real ids pass unchanged, every unsafe form is refused
with a sentence naming the problem."""

from __future__ import annotations

import doctest

import pytest

from autograder import student_ids
from autograder.limits import STUDENT_ID_CHARS
from autograder.student_ids import check_student_id, is_safe, problem_of

REAL = [
    "ann", "m6student1", "s1234567", "ada.lovelace", "ada_lovelace", "ada-lovelace", "ada@uni.example",
    "firstname.lastname@students.faculty.university.example", "A1", "7", "jdoe42", "AdaLovelace",
    "x" * STUDENT_ID_CHARS.value,
]

REFUSED = {
    "": "is empty",
    "x" * (STUDENT_ID_CHARS.value + 1): f"{STUDENT_ID_CHARS.value + 1} characters long",
    "ann lee": "whitespace",
    " ann": "whitespace",
    "ann\n": "control character",
    "ann\t": "control character",
    "ann\x00": "control character",
    "ann\u200b": "control character",  # zero-width space (Cf): looks like "ann"
    "ann\u00a0": "whitespace",
    "<script>alert(1)</script>": "markup",
    "ann<b>": "markup",
    "a&b": "markup",
    'a"b': "markup",
    "o'brien": "markup",
    "../etc": "starts with '.'",
    ".hidden": "starts with '.'",
    "a/b": "path separator",
    "a\\b": "path separator",
    "-rf": "option",
    "=1+1": "formula",
    "+4912345": "formula",
    "@sum": "formula",
    "ann+module6": "the exchange's separator",
    "_apt": "letter or a digit",
    "jürgen": "not ASCII",
    "ann\u0430": "not ASCII",  # a Cyrillic a that looks like a Latin one
    "e\u0301": "not ASCII",  # a decomposed é: NFC or not, refused alike
    "ann:1": "holds ':'",
    "ann*": "holds '*'",
    "a%2Fb": "holds '%'",
}


@pytest.mark.parametrize("value", REAL)
def test_real_ids_pass_unchanged(value):
    assert check_student_id(value) == value and is_safe(value) and problem_of(value) is None


@pytest.mark.parametrize("value,words", REFUSED.items())
def test_unsafe_ids_are_refused_with_their_problem_named(value, words):
    with pytest.raises(ValueError) as caught:
        check_student_id(value, "--student")
    message = str(caught.value)
    assert message.startswith("--student ") and words in message, message
    assert student_ids.RULE in message  # and what an id looks like
    assert "\n" not in message and "\x00" not in message  # one line, whatever the id held
    assert not is_safe(value)


def test_not_text_is_named():
    for value in (None, 42, b"ann", ["ann"]):
        with pytest.raises(ValueError, match="should be text"):
            check_student_id(value)


def test_a_huge_value_is_cut_in_the_message():
    with pytest.raises(ValueError) as caught:
        check_student_id("a" * 1_000_000)
    assert len(str(caught.value)) < 1_000


def test_every_safe_id_passes_the_student_side_check_too():
    """An id the kit accepts (roster, extension, collect) is one a notebook accepts as STUDENT_ID."""
    from course.variants import check_id_form

    for value in REAL:
        assert check_id_form(value) == value


def test_the_module_examples_hold():
    assert doctest.testmod(student_ids, optionflags=doctest.NORMALIZE_WHITESPACE).failed == 0
