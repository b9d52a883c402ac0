"""Applying one feature: numbers, buckets, categories, times, bags and padding, and a
value of the wrong kind named in one line."""
import numpy as np
import pytest

from sampler.features import (Categorical, FeatureError, FeatureVocabulary, Ignore, Numeric,
                              ResolvedFeature, Timestamp)
from sampler.features.encode import bucketize, encode_feature
from unigraph.columnar.ragged import Ragged

STRING, INT, FLOAT = np.dtype(object), np.dtype(np.int64), np.dtype(np.float32)


def feature(kind, dtype=FLOAT, shape=(), name="f"):
    return ResolvedFeature("nodes", "paper", name, kind, dtype, shape)


def test_numbers_as_they_are_go_to_x():
    values = np.array([[1, 2], [3, 4]], np.int32)
    encoded = encode_feature(feature(Numeric(), np.dtype(np.int32), (2,)), values)
    assert encoded.dense and encoded.values.tolist() == [[1, 2], [3, 4]]
    assert encode_feature(feature(Ignore()), values) is None


def test_standardized_per_column():
    values = np.array([[1.0, 10.0], [3.0, 30.0]], np.float32)
    kind = Numeric(standardize=True, mean=[2.0, 20.0], std=[1.0, 10.0])
    encoded = encode_feature(feature(kind, shape=(2,)), values)
    assert encoded.dense and encoded.values.dtype == np.float32
    assert encoded.values.tolist() == [[-1.0, -1.0], [1.0, 1.0]]
    with pytest.raises(FeatureError, match="standardize needs the graph's mean"):
        encode_feature(feature(Numeric(standardize=True)), values)


def test_buckets_as_keras_discretization():
    """The number of boundaries <= the value (TensorFlow's Bucketize)."""
    values = np.array([-1.0, 0.0, 0.5, 1.0, 2.0, 3.0, np.inf])
    assert bucketize(values, [0.0, 1.0, 2.0]).tolist() == [0, 1, 1, 2, 3, 3, 3]
    encoded = encode_feature(feature(Numeric(boundaries=[2012, 2015])),
                             np.array([2010, 2012, 2016]))
    assert not encoded.dense and encoded.values.dtype == np.int64
    assert encoded.values.tolist() == [0, 1, 2]


def test_categories_by_vocabulary_and_by_hash():
    vocabulary = FeatureVocabulary(np.array([b"kdd", b"icml"]))
    values = np.array([b"icml", b"nips", b"kdd"], object)
    encoded = encode_feature(feature(Categorical(), STRING), values, vocabulary=vocabulary)
    assert not encoded.dense and encoded.values.tolist() == [2, 0, 1]
    hashed = encode_feature(feature(Categorical(hash_buckets=10), STRING), values)
    assert hashed.values.min() >= 0 and hashed.values.max() < 10
    with pytest.raises(FeatureError, match="vocabulary is not fitted"):
        encode_feature(feature(Categorical(), STRING), values)


def test_a_bag_of_values_with_offsets_as_embedding_bag_takes_them():
    vocabulary = FeatureVocabulary(np.array([b"x", b"y"]))
    words = Ragged(np.array([b"y", b"x", b"z", b"x"], object), np.array([2, 0, 1, 1]))
    encoded = encode_feature(feature(Categorical(), STRING, (-1,)), words, vocabulary=vocabulary)
    assert encoded.values.tolist() == [2, 1, 0, 1]
    assert encoded.offsets.tolist() == [0, 2, 2, 3]
    assert encoded.mask is None and not encoded.dense


def test_padded_with_a_mask_and_cut_to_max_length():
    tags = Ragged(np.array([5, 6, 7, 8, 9], np.int64), np.array([3, 0, 2]))
    encoded = encode_feature(feature(Numeric(layout="padded", max_length=2), INT, (-1,)), tags)
    assert encoded.values.tolist() == [[5, 6], [0, 0], [8, 9]]
    assert encoded.mask.tolist() == [[True, True], [False, False], [True, True]]
    longest = encode_feature(feature(Numeric(layout="padded"), INT, (-1,)), tags)
    assert longest.values.tolist() == [[5, 6, 7], [0, 0, 0], [8, 9, 0]]
    assert longest.mask.sum(axis=1).tolist() == [3, 0, 2]
    rows = Ragged(np.arange(6, dtype=np.float32).reshape(3, 2), np.array([1, 2]))
    padded = encode_feature(feature(Numeric(layout="padded"), FLOAT, (-1, 2)), rows)
    assert padded.values.shape == (2, 2, 2) and padded.values[0, 1].tolist() == [0, 0]


def test_empty_sets_and_empty_bags():
    empty = Ragged(np.zeros(0, object), np.zeros(0, np.int64))
    vocabulary = FeatureVocabulary(np.array([b"x"]))
    encoded = encode_feature(feature(Categorical(), STRING, (-1,)), empty, vocabulary=vocabulary)
    assert encoded.values.shape == (0,) and encoded.offsets.shape == (0,)
    padded = encode_feature(feature(Categorical(layout="padded"), STRING, (-1,)), empty,
                            vocabulary=vocabulary)
    assert padded.values.shape == (0, 0) and padded.mask.shape == (0, 0)
    nothing = encode_feature(feature(Numeric(standardize=True, mean=[0], std=[1])),
                             np.zeros(0, np.float32))
    assert nothing.values.shape == (0,)


def test_timestamps_as_seconds_ages_and_buckets():
    times = np.array([1000, 4000], np.int64)  # milliseconds
    kind = Timestamp(unit_seconds=0.001)
    assert encode_feature(feature(kind, INT), times).values.tolist() == [1.0, 4.0]
    age = Timestamp(unit_seconds=0.001, age=True)
    encoded = encode_feature(feature(age, INT), times, cutoffs=np.array([5000, 5000]))
    assert encoded.dense and encoded.values.tolist() == [4.0, 1.0]
    buckets = Timestamp(unit_seconds=0.001, age=True, boundaries=[2.0])
    assert encode_feature(feature(buckets, INT), times,
                          cutoffs=np.array([5000, 5000])).values.tolist() == [1, 0]
    with pytest.raises(FeatureError, match="needs each sample's cut-off"):
        encode_feature(feature(age, INT), times)
    ragged = Ragged(np.array([1000, 2000, 3000]), np.array([1, 2]))
    bag = encode_feature(feature(age, INT, (-1,)), ragged, cutoffs=np.array([3000, 4000]))
    assert bag.values.tolist() == [2.0, 2.0, 1.0] and bag.offsets.tolist() == [0, 1]


@pytest.mark.parametrize("kind, dtype, values, message", [
    (Numeric(), FLOAT, np.array([b"12", b"abc"], object),
     "node set 'paper' feature 'f': numeric, but it holds '12'"),
    (Timestamp(), INT, np.array([b"yesterday"], object),
     "node set 'paper' feature 'f': timestamp, but it holds 'yesterday'"),
    (Categorical(hash_buckets=4), INT, np.array([1.5]),
     "node set 'paper' feature 'f': integer categories, but it holds 1.5"),
    (Categorical(hash_buckets=4), STRING, np.array([3]),
     "node set 'paper' feature 'f': string categories, but it holds 3"),
])
def test_a_value_of_the_wrong_kind_is_one_line(kind, dtype, values, message):
    with pytest.raises(FeatureError) as error:
        encode_feature(feature(kind, dtype), values)
    assert message in str(error.value)
