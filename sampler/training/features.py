"""The feature spec in TensorFlow: Keras layers that give the indices sampler.features
gives (docs/features.md, "TensorFlow").

  categorical, vocabulary  tf.keras.layers.StringLookup / IntegerLookup reading the
                           written vocabulary file (index 0 for the rest, tokens 1..n)
  categorical, hashing     SplitmixHashing: the project's splitmix64 hash in TensorFlow
                           ops (Keras' Hashing uses FarmHash, other buckets)
  numeric boundaries,      tf.keras.layers.Discretization(bin_boundaries=...)
  timestamp boundaries     (of the values in seconds: multiply by unit_seconds first)
  numeric standardize      tf.keras.layers.Normalization(mean=..., variance=std**2)

    from sampler.training.features import keras_layer
    venue = keras_layer("out/", "paper", "venue")     # a `sample` output folder
    indices = venue(tf.constant([b"venue/3", b"unseen"]))

Ragged features: apply the layer to a tf.RaggedTensor's flat_values (or the RaggedTensor
itself: Keras' lookups map ragged inputs).
"""
from __future__ import annotations

import numpy as np
import tensorflow as tf

from sampler.features import Categorical, FeatureEncoder, FeatureError, Numeric, Timestamp
from sampler.features.encoder import FEATURES_FOLDER, vocabulary_name
from unigraph.encoding import splitmix
from unigraph.encoding.row_hash import ID_HASH_START
from unigraph.storage import paths

_U64 = tf.uint64


def _constant(value) -> tf.Tensor:
    return tf.constant(np.uint64(value), _U64)


def splitmix_step(state: tf.Tensor, value: tf.Tensor) -> tf.Tensor:
    """unigraph.encoding.splitmix.step in TensorFlow ops (uint64, wrapping)."""
    z = tf.bitwise.bitwise_xor(state, value * _constant(splitmix.GOLDEN))
    z = tf.bitwise.bitwise_xor(z, tf.bitwise.right_shift(z, _constant(30)))
    z = z * _constant(0xBF58476D1CE4E5B9)
    z = tf.bitwise.bitwise_xor(z, tf.bitwise.right_shift(z, _constant(27)))
    z = z * _constant(0x94D049BB133111EB)
    return tf.bitwise.bitwise_xor(z, tf.bitwise.right_shift(z, _constant(31)))


def string_hashes(strings: tf.Tensor) -> tf.Tensor:
    """unigraph.encoding.row_hash.id_hashes of a 1-D string tensor: the bytes as
    little-endian 64-bit words, folded while a non-NUL byte remains."""
    strings = tf.reshape(strings, [-1])
    words = tf.maximum(tf.reduce_max(tf.concat([(tf.strings.length(strings) + 7) // 8,
                                                [1]], 0)), 1)
    raw = tf.io.decode_raw(strings, tf.uint8, fixed_length=words * 8)
    raw = tf.reshape(raw, [-1, words, 8])
    shifts = tf.constant(np.arange(8, dtype=np.uint64) * np.uint64(8), _U64)
    values = tf.reduce_sum(tf.bitwise.left_shift(tf.cast(raw, _U64), shifts), axis=2)
    live = tf.cumsum(tf.cast(values != 0, tf.int32), axis=1, reverse=True) > 0
    start = tf.fill(tf.shape(strings), _constant(ID_HASH_START))

    def fold(state, column):
        word, keep = column
        return tf.where(keep, splitmix_step(state, word), state)

    return tf.foldl(fold, (tf.transpose(values), tf.transpose(live)), initializer=start)


class SplitmixHashing(tf.keras.layers.Layer):
    """Strings or integers into `num_buckets` buckets by the project's hash with `salt`:
    the buckets sampler.features gives (sampler/features/hashing.py)."""

    def __init__(self, num_buckets: int, salt: int = 0, **kwargs):
        super().__init__(**kwargs)
        self.num_buckets, self.salt = int(num_buckets), int(salt)

    def call(self, inputs):
        if isinstance(inputs, tf.RaggedTensor):
            return inputs.with_flat_values(self.call(inputs.flat_values))
        inputs = tf.convert_to_tensor(inputs)
        shape = tf.shape(inputs)
        flat = tf.reshape(inputs, [-1])
        if flat.dtype == tf.string:
            hashed = string_hashes(flat)
        else:
            hashed = splitmix_step(_constant(ID_HASH_START),
                                   tf.bitcast(tf.cast(flat, tf.int64), _U64))
        salted = splitmix_step(hashed, _constant(self.salt))
        buckets = tf.math.floormod(salted, _constant(self.num_buckets))
        return tf.reshape(tf.cast(buckets, tf.int64), shape)

    def get_config(self):
        return {**super().get_config(), "num_buckets": self.num_buckets, "salt": self.salt}


def keras_layer(folder: str, set_name: str, feature: str, set_kind: str = "nodes"):
    """The Keras layer that maps a feature's values as `sample`'s written features/
    (in `folder`, a `sample` output) say: see the module docstring. FeatureError for a
    feature whose values go to the model as they are."""
    encoder = FeatureEncoder.load(folder)
    if encoder is None:
        raise FeatureError(f"{folder}: no {FEATURES_FOLDER}/ folder (sample writes it)")
    resolved = encoder.features(set_name, set_kind).get(feature)
    if resolved is None:
        raise FeatureError(f"{folder}: {set_kind[:-1]} set '{set_name}' has no feature "
                           f"'{feature}'")
    kind = resolved.kind
    if isinstance(kind, Categorical):
        if kind.hashed:
            return SplitmixHashing(kind.hash_buckets, kind.salt)
        path = paths.join(paths.join(folder, FEATURES_FOLDER), vocabulary_name(*resolved.key))
        lookup = (tf.keras.layers.StringLookup if resolved.is_string
                  else tf.keras.layers.IntegerLookup)
        return lookup(vocabulary=path)
    if isinstance(kind, (Numeric, Timestamp)) and kind.boundaries is not None:
        return tf.keras.layers.Discretization(bin_boundaries=list(kind.boundaries))
    if isinstance(kind, Numeric) and kind.standardize:
        return tf.keras.layers.Normalization(mean=list(kind.mean),
                                             variance=[s * s for s in kind.std])
    raise FeatureError(f"{resolved.where}: {type(kind).__name__.lower()}, taken as it is "
                       f"(no layer needed)")
