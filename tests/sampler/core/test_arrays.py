"""The core's sorting primitives give what their numpy spellings give, for any input."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as hs

from sampler.core.arrays import argsort, unique, unique_inverse

# Narrow values (packed with their index), wide ones (too wide to pack), negatives and
# unsigned, so every branch is taken.
_VALUES = hs.one_of(
    hs.lists(hs.integers(0, 50), max_size=300).map(lambda v: np.array(v, np.int64)),
    hs.lists(hs.integers(-2**62, 2**62), max_size=300).map(lambda v: np.array(v, np.int64)),
    hs.lists(hs.integers(0, 2**40), max_size=300).map(lambda v: np.array(v, np.int64)),
    hs.lists(hs.integers(0, 2**31 - 1), max_size=300).map(lambda v: np.array(v, np.int32)),
    hs.lists(hs.integers(0, 2**64 - 1), max_size=50).map(lambda v: np.array(v, np.uint64)),
)


@settings(max_examples=300, deadline=None)
@given(_VALUES)
def test_argsort_is_numpys_stable_argsort(values):
    np.testing.assert_array_equal(argsort(values), np.argsort(values, kind="stable"))


@settings(max_examples=300, deadline=None)
@given(_VALUES)
def test_unique_inverse_is_numpys(values):
    distinct, inverse = unique_inverse(values)
    expected, expected_inverse = np.unique(values, return_inverse=True)
    np.testing.assert_array_equal(distinct, expected)
    np.testing.assert_array_equal(inverse, expected_inverse.reshape(-1))
    np.testing.assert_array_equal(unique(values), expected)


def test_argsort_packs_a_large_narrow_array():
    # 2**17 values below 2**20: packed (37 bits), and ties keep their order.
    values = np.random.default_rng(0).integers(0, 2**20, 2**17)
    np.testing.assert_array_equal(argsort(values), np.argsort(values, kind="stable"))
