"""Every family's graded answer varies (docs/DESIGN.md, "The families"; issue 35).

A student whose key (the tuple of every graded value of the notebook) equals a classmate's can copy
from them and the class report cannot tell. Over a class of 1,000 ids, every family gives at least
MIN_DISTINCT_KEYS (900) distinct keys, no key to more than 5 students, and no student the worked
example's key (variant 0's, which the course notes publish). Two keys are the same key when every
graded value of one earns full marks as the other's: the same choices and sets, every number within
the checks' tolerance (``tests/variant_family_support.key_classes``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from course.variants import families
from tests.variant_family_support import CLASS, MIN_DISTINCT_KEYS, key_classes, key_spread


@pytest.mark.parametrize("stem", sorted(families()))
def test_a_class_of_1000_gets_many_distinct_keys_and_none_the_examples(stem):
    spread = key_spread(stem, CLASS)
    print(f"{stem}: {spread}")
    assert spread["distinct"] >= MIN_DISTINCT_KEYS, spread
    assert spread["largest"] <= 5, spread
    assert spread["example"] == 0, spread


def test_keys_are_told_apart_as_the_checks_tell_them():
    """The same key: within the checks' tolerance (relative 1e-5), the same sets, the same infinities;
    a chain of keys each within tolerance of the next is one key."""
    base = {"x": 1.0, "s": frozenset({1, 2}), "t": (0.5, math.inf), "a": np.array([0.25, 0.75])}
    same = {"x": 1.0 + 5e-6, "s": frozenset({2, 1}), "t": (0.5, math.inf), "a": np.array([0.25, 0.75 + 1e-6])}
    other_number = dict(base, x=1.001)
    other_set = dict(base, s=frozenset({1, 3}))
    other_infinity = dict(base, t=(0.5, -math.inf))
    other_array = dict(base, a=np.array([0.26, 0.74]))
    labels = key_classes([base, same, other_number, other_set, other_infinity, other_array])
    assert labels[0] == labels[1] and len(set(labels)) == 5
    chain = key_classes([{"x": 1.0}, {"x": 1.0 + 8e-6}, {"x": 1.0 + 16e-6}, {"x": 2.0}])
    assert chain[0] == chain[1] == chain[2] != chain[3]
