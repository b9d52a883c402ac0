"""The token table (a vocabulary's lookup of strings): each value's index among the
tokens + 1, 0 where absent, exactly as a dictionary of the 'S' values gives it, for
any tokens, widths, collisions and slices."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from sampler.features import token_table
from sampler.features.token_table import TokenTable

BYTES = st.binary(max_size=20)


def expected(tokens: np.ndarray, values: np.ndarray) -> list[int]:
    index = {t: i + 1 for i, t in enumerate(tokens.tolist())}  # tolist drops trailing NULs
    return [index.get(v, 0) for v in values.tolist()]


@settings(max_examples=120, deadline=None)
@given(st.lists(BYTES, unique_by=lambda t: t.rstrip(b"\0"), max_size=40),
       st.lists(BYTES, max_size=60), st.integers(0, 16), st.sampled_from([1, 3, 15872]))
def test_codes_are_a_dictionarys(tokens, values, extra_width, chunk):
    """Tokens of any length (the empty one, NUL bytes inside, several words), values
    narrower or wider than every token, looked up in slices of any size."""
    tokens = np.array(tokens, dtype="S") if tokens else np.zeros(0, "S1")
    pool = values + tokens.tolist()  # half the values found
    width = max([len(v) for v in pool] + [1]) + extra_width
    queries = np.array(pool, dtype=f"S{width}")
    original = token_table.CHUNK
    token_table.CHUNK = chunk
    try:
        codes = TokenTable(tokens).codes(queries)
    finally:
        token_table.CHUNK = original
    assert codes.dtype == np.int64 and codes.tolist() == expected(tokens, queries)
    given_codes = np.arange(len(tokens), dtype=np.int64) * 7 + 5  # any nonzero codes
    by_token = dict(zip(tokens.tolist(), given_codes.tolist()))
    assert TokenTable(tokens, codes=given_codes).codes(queries).tolist() == [
        by_token.get(v, 0) for v in queries.tolist()]


@pytest.mark.parametrize("count", [1, 7, 5000])
def test_crowded_buckets_find_every_token(count):
    """Many tokens that differ in one byte deep in a long string (their buckets are
    shared: lookups take several rounds)."""
    tokens = np.array([b"a long common prefix of the tokens/%d" % i for i in range(count)])
    table = TokenTable(tokens)
    assert count < 5000 or table.rounds > 1  # the case this test is for
    rng = np.random.default_rng(1)
    queries = np.array([b"a long common prefix of the tokens/%d" % i
                        for i in rng.integers(0, 2 * count, 40000)])
    assert table.codes(queries).tolist() == expected(tokens, queries)
    assert table.codes(tokens[::-1]).tolist() == list(range(count, 0, -1))
