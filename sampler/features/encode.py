"""Applying a resolved feature to a batch's values: pure numpy, the same in every
process (the torch adapter and the benchmarks call it; no torch here).

One feature's values (an array [items, *shape], or a Ragged for a ragged feature)
become an `Encoded`:
  values   numbers as they are, standardized (float32) or bucket indices (int64);
           categories as int64 indices; times as float32 seconds or bucket indices
  offsets  a bag (ragged, layout "bag"): `values` are flat, item i's start at
           offsets[i] (torch.nn.EmbeddingBag's `offsets`)
  mask     padded (ragged, layout "padded"): `values` are [items, length], `mask`
           True where a value is real (padding holds 0)
  dense    whether it belongs in the float32 matrix `x` (fixed-shape numbers and
           seconds; indices and ragged values go by name)

`named_arrays` lays a set's Encoded out as the arrays a framework wraps: `x` (or
`edge_attr`) and each other feature by name with `<name>_offsets` or `<name>_mask`;
every view (to_hetero_data, the mini-batch loaders, DGL's blocks) goes through it.
"""
from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

from sampler.features.hashing import Hasher, hash_buckets
from sampler.features.spec import (Categorical, FeatureError, Ignore, Numeric,
                                   ResolvedFeature, Timestamp)
from sampler.features.values import first_value, flat_items, item_offsets
from sampler.features.vocabulary import FeatureVocabulary, check_token_values


OFFSETS, MASK = "_offsets", "_mask"  # suffixes of a ragged feature's offsets and mask


@dataclasses.dataclass
class Encoded:
    values: np.ndarray
    offsets: Optional[np.ndarray] = None
    mask: Optional[np.ndarray] = None
    dense: bool = False

    def padded(self) -> "Encoded":
        """A bag as padded values and a mask (to the longest list): for frameworks whose
        node data has one row per node (DGL, the dense EgoGraph)."""
        if self.offsets is None:
            return self
        lengths = np.diff(np.append(self.offsets, len(self.values)))
        return _padded(self.values, lengths, 0)


def encode_feature(feature: ResolvedFeature, values, *,
                   vocabulary: Optional[FeatureVocabulary] = None,
                   cutoffs: Optional[np.ndarray] = None,
                   hasher: Optional[Hasher] = None) -> Optional[Encoded]:
    """The feature's model input for these items, None for Ignore. `cutoffs`: each
    item's sample cut-off, for Timestamp(age=True). `hasher`: the feature's Hasher, kept
    from batch to batch (a hashed feature's buckets are the same without it). FeatureError
    naming the feature and the value for values of the wrong kind."""
    kind = feature.kind
    if isinstance(kind, Ignore):
        return None
    flat, lengths = flat_items(values)
    if feature.ragged and lengths is None:
        raise FeatureError(f"{feature.where}: declared ragged (shape {list(feature.shape)}), "
                           f"got a dense array of shape {list(flat.shape)}")
    if isinstance(kind, Categorical):
        out = None
        if vocabulary is not None and not kind.hashed and feature.dtype.kind == "O":
            out = vocabulary.lookup_bytes(flat)  # bytes objects, found as they are
        if out is None:
            tokens = check_token_values(flat, feature.dtype.kind != "O", feature.where)
            if kind.hashed:
                out = (hash_buckets(tokens, kind.hash_buckets, kind.salt) if hasher is None
                       else hasher(tokens))
            elif vocabulary is None:
                raise FeatureError(f"{feature.where}: its vocabulary is not fitted (fit the "
                                   f"encoder on the graph, or load it from a `sample` "
                                   f"output)")
            else:
                out = vocabulary.lookup(tokens)
        dense = False
    else:
        if flat.dtype.kind not in "biuf":
            raise FeatureError(f"{feature.where}: {type(kind).__name__.lower()}, but it "
                               f"holds {first_value(flat)!r}")
        if isinstance(kind, Numeric):
            out, dense = _numeric(kind, flat, feature)
        else:
            out, dense = _timestamp(kind, flat, lengths, cutoffs, feature)
    if lengths is None:
        return Encoded(out, dense=dense)
    if kind.layout == "bag":
        return Encoded(out, offsets=item_offsets(lengths))
    return _padded(out, lengths, kind.max_length)


def _numeric(kind: Numeric, values: np.ndarray, feature: ResolvedFeature):
    if kind.boundaries is not None:
        return bucketize(values, kind.boundaries), False
    if kind.standardize:
        if kind.mean is None:
            raise FeatureError(f"{feature.where}: standardize needs the graph's mean and std "
                               f"(fit the encoder on the graph) or given ones")
        columns = values.reshape(len(values), feature.columns)
        mean = np.asarray(kind.mean, np.float64)
        scale = 1.0 / np.asarray(kind.std, np.float64)
        standardized = ((columns - mean) * scale).astype(np.float32)
        return standardized.reshape(values.shape), not feature.ragged
    return values, not feature.ragged


def _timestamp(kind: Timestamp, values: np.ndarray, lengths, cutoffs, feature):
    seconds = values.astype(np.float64) * kind.unit_seconds
    if kind.age:
        if cutoffs is None:
            raise FeatureError(f"{feature.where}: timestamp age needs each sample's cut-off "
                               f"(context seed_timestamp), and the subgraphs have none")
        per_value = np.asarray(cutoffs, np.float64) * kind.unit_seconds
        if lengths is not None:
            per_value = np.repeat(per_value, lengths)
        seconds = per_value.reshape((-1,) + (1,) * (seconds.ndim - 1)) - seconds
    if kind.boundaries is not None:
        return bucketize(seconds, kind.boundaries), False
    return seconds.astype(np.float32), lengths is None


def bucketize(values: np.ndarray, boundaries) -> np.ndarray:
    """int64 bucket of each value: the number of boundaries <= it (Keras' Discretization,
    TensorFlow's Bucketize)."""
    return np.searchsorted(np.asarray(boundaries, np.float64), values.astype(np.float64),
                           side="right").astype(np.int64)


def _padded(values: np.ndarray, lengths: np.ndarray, max_length: int) -> Encoded:
    """Values [items, length] (0 where padded) and the mask of the real ones; a list
    longer than max_length keeps its first max_length values."""
    width = max_length or (int(lengths.max()) if len(lengths) else 0)
    kept = np.minimum(lengths, width)
    mask = np.arange(width)[None, :] < kept[:, None]
    out = np.zeros((len(lengths), width) + values.shape[1:], values.dtype)
    starts = item_offsets(lengths)
    rows = np.repeat(np.arange(len(lengths)), kept)
    columns = np.arange(int(kept.sum())) - np.repeat(item_offsets(kept), kept)
    out[rows, columns] = values[np.repeat(starts, kept) + columns]
    return Encoded(out, mask=mask)


def named_arrays(encoded: dict[str, "Encoded"], mode: str, concatenated: str,
                 where: str) -> dict[str, np.ndarray]:
    """A set's encoded features as named arrays (module docstring): mode "x" puts the
    dense ones, flattened per item, as one float32 matrix under `concatenated`; "names"
    keeps each under its own name. FeatureError when a feature has the name of
    another's offsets or mask."""
    arrays: dict[str, np.ndarray] = {}
    dense = []
    for name, value in encoded.items():
        if value.dense and mode == "x":
            dense.append(value.values.reshape(len(value.values),
                                              int(np.prod(value.values.shape[1:]))))
            continue
        arrays[name] = value.values
        for suffix, extra in ((OFFSETS, value.offsets), (MASK, value.mask)):
            if extra is not None:
                if name + suffix in encoded:
                    raise FeatureError(f"{where}: feature '{name + suffix}' has the name of "
                                       f"feature '{name}''s {suffix[1:]}")
                arrays[name + suffix] = extra
    if dense:
        arrays[concatenated] = (
            dense[0] if len(dense) == 1 and dense[0].dtype == np.float32 else
            np.concatenate([c.astype(np.float32, copy=False) for c in dense], axis=1))
    return {name: np.ascontiguousarray(value) for name, value in arrays.items()}
