"""Vocabularies: ordered by count then value whatever the batching, written one token per
line (what a file can hold), read back with every check, looked up by arrays."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from sampler.features import FeatureError, FeatureVocabulary
from sampler.features.vocabulary import count_values, merge_counts, token_array
from unigraph.columnar.ragged import Ragged


def vocabulary_of(values, **options):
    return FeatureVocabulary.from_counts(count_values(token_array(values, False)), **options)


def test_tokens_by_count_then_value():
    values = np.array([b"b", b"a", b"c", b"b", b"c", b"d", b"a", b"b"], object)
    vocabulary = vocabulary_of(values)
    assert vocabulary.tokens.tolist() == [b"b", b"a", b"c", b"d"]  # 3, 2, 2, 1
    assert vocabulary.file_bytes() == b"b\na\nc\nd\n"
    assert vocabulary_of(values, min_count=2).tokens.tolist() == [b"b", b"a", b"c"]
    assert vocabulary_of(values, max_tokens=2).tokens.tolist() == [b"b", b"a"]
    assert vocabulary.lookup(np.array([b"a", b"d", b"zz", b"b", b""])).tolist() == \
        [2, 4, 0, 1, 0]


def test_integer_tokens():
    values = np.array([10, -3, 10, 2**62, -3, 10])
    vocabulary = FeatureVocabulary.from_counts(count_values(token_array(values, True)))
    assert vocabulary.tokens.tolist() == [10, -3, 2**62]
    assert vocabulary.file_bytes() == b"10\n-3\n4611686018427387904\n"
    assert vocabulary.lookup(np.array([[-3, 7], [2**62, 10]])).tolist() == [[2, 0], [3, 1]]
    again = FeatureVocabulary.parse(vocabulary.file_bytes(), True, "v")
    assert again.tokens.tolist() == vocabulary.tokens.tolist()


def test_values_a_line_cannot_hold_map_to_zero():
    values = np.array([b"", b"", b"multi\nline", b"cr\r", b"ok", b"tab\tand space "], object)
    vocabulary = vocabulary_of(values)
    assert vocabulary.tokens.tolist() == [b"ok", b"tab\tand space "]
    assert vocabulary.lookup(token_array(values, False)).tolist() == [0, 0, 0, 0, 1, 2]


def test_ragged_values_count_each_value():
    words = Ragged(np.array([b"x", b"y", b"x", b"x"], object), np.array([2, 0, 2]))
    assert vocabulary_of(words).tokens.tolist() == [b"x", b"y"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([b"a", b"bb", b"paper/1", b"paper/12", b"\xff", b"z"]),
                max_size=60), st.lists(st.integers(0, 60), max_size=5))
def test_batching_never_changes_the_vocabulary(values, cuts):
    """Counted whole or in any batches (merged in any grouping), the same file."""
    values = np.array(values, dtype=object)
    whole = vocabulary_of(values).file_bytes()
    cuts = sorted(set(min(c, len(values)) for c in cuts))
    parts = np.split(values, cuts)
    counts = [count_values(token_array(p, False)) for p in parts]
    merged = merge_counts([merge_counts(counts[:2])] + counts[2:])
    assert FeatureVocabulary.from_counts(merged).file_bytes() == whole


@pytest.mark.parametrize("data, integer, message", [
    (b"a\nb\na\n", False, "v.txt: token 'a' repeats (lines 1 and 3)"),
    (b"a\n\nb\n", False, "v.txt: line 2 is empty"),
    (b"1\n2\nx3\n", True, "v.txt: line 3 'x3' is not an integer of 64 bits"),
    (b"1\n99999999999999999999\n", True, "line 2 '99999999999999999999' is not an integer"),
    (b"5\n5\n", True, "token 5 repeats (lines 1 and 2)"),
])
def test_a_bad_vocabulary_file_is_one_line(data, integer, message):
    with pytest.raises(FeatureError) as error:
        FeatureVocabulary.parse(data, integer, "v.txt")
    assert message in str(error.value)


def test_a_file_reads_as_tensorflow_reads_it():
    """'\\r' before a line's end is dropped and the last line needs no end."""
    vocabulary = FeatureVocabulary.parse(b"a\r\nb \nc", False, "v")
    assert vocabulary.tokens.tolist() == [b"a", b"b ", b"c"]


def test_many_lookups_match_a_dictionary():
    rng = np.random.default_rng(0)
    tokens = np.array([f"venue/{i}".encode() for i in rng.permutation(5000)], "S")
    vocabulary = FeatureVocabulary(tokens)
    queries = np.array([f"venue/{i}".encode() for i in rng.integers(0, 6000, 20000)], "S")
    index = {t: i + 1 for i, t in enumerate(tokens.tolist())}
    assert vocabulary.lookup(queries).tolist() == [index.get(q, 0) for q in queries.tolist()]


@settings(max_examples=80, deadline=None)
@given(st.lists(st.one_of(st.sampled_from([b"a", b"bb", b"a\x00", b"", b"\x00", b"tag/7",
                                           "tag/7", "é", b"\xff\xfe", b"\n"]),
                          st.binary(max_size=5)), max_size=40),
       st.lists(st.binary(min_size=1, max_size=4).filter(lambda t: not t.endswith(b"\x00")
                                                           and b"\n" not in t
                                                           and b"\r" not in t),
                unique=True, max_size=12))
def test_bytes_found_as_they_are_give_the_lookup_of_their_tokens(values, tokens):
    """lookup_bytes (an object array of bytes joined as lines, hashed by Arrow) gives
    what lookup of the values as an 'S' array gives, or None where it does not apply (a
    str, a value holding a line break or ending in NUL), whatever the values."""
    vocabulary = FeatureVocabulary(np.array(tokens or [b"x"], dtype="S"))
    array = np.array(values + [b"a"], dtype=object)[:-1]  # an object array, even of one
    found = vocabulary.lookup_bytes(array)
    applies = all(isinstance(v, bytes) and not v.endswith(b"\x00") and b"\n" not in v
                  for v in values)
    assert (found is not None) == applies
    if applies:
        expected = vocabulary.lookup(np.array(values, dtype="S").reshape(len(values)))
        assert found.tolist() == expected.tolist()
        assert found.reshape(-1).tolist() == vocabulary.lookup_bytes(
            array.reshape(-1, 1)).reshape(-1).tolist()
    assert FeatureVocabulary(np.array([3, 5])).lookup_bytes(array) is None  # integers


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=12), max_size=30),
       st.lists(st.binary(min_size=1, max_size=5).filter(
           lambda t: not t.endswith(b"\x00") and b"\n" not in t and b"\r" not in t),
           unique=True, min_size=1, max_size=8),
       st.integers(0, 8))
def test_values_wider_than_the_tokens_find_the_same_tokens(values, tokens, extra_width):
    """'S' values wider than every token (a decoded batch's widths are rounded up) give
    what each value's own lookup gives: a value with bytes past the widest token is
    none of them, even when cutting it would leave a token."""
    vocabulary = FeatureVocabulary(np.array(tokens, dtype="S"))
    width = max(len(v) for v in values + tokens) + extra_width
    wide = np.array(values, dtype=f"S{width}")
    expected = [vocabulary.lookup(np.array([v])).item() if v.rstrip(b"\x00") else
                vocabulary.lookup(np.array([b""])).item() for v in values]
    assert vocabulary.lookup(wide).tolist() == expected
    assert vocabulary.lookup(np.array([tokens[0] + b"z"], dtype=f"S{width + 1}")).item() == 0
