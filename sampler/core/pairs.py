"""Link seeds: rows of a pairs table become numbered samples with two seed requests.

A pair (source, target) of the paired node set S is one sample. Its sample id is a
function of the pairs table as a multiset of rows, exactly as for node seeds
(core.seeds.number_by_content): the content is the row's source, target and
`_readout` features (so two rows of one pair with different labels are two
samples, and identical rows are interchangeable). After numbering, a pair is two
(sample, node) requests, source then target (one when source == target): from
there on, hops, lookup, assembly and encoding are the node seeds' code path. The
assembly makes the source node 0 and the target node 1 of S (node 0 when equal)
and gives the sample a `_readout` node with the pair's features.

Every request of a pair sample carries the pair's two endpoint fingerprints
(`Requests.pairs`), so any hop can tell whether it is at an endpoint and leave out
the edges between the two (core.hop, "leakage").

A pairs table with a `timestamp` column gives each pair a time cut-off. It is part of
the row's content (its bits go into both fingerprints, as for node seeds in
core.seeds), so a pair listed with two cut-offs is two samples, numbered the same
way whatever the rows' order; both seed requests carry it (`Requests.cutoffs`), so
every hop of the pair's subgraph sees it, and the assembly writes it as
`context/seed_timestamp`.
"""
from __future__ import annotations

from typing import Iterator, Sequence

import numpy as np

from sampler.core import rng
from sampler.core.buckets import split_by_bucket
from sampler.core.pieces import PairPiece, Requests
from sampler.core.seeds import NUMBERING_GROUP_BITS, number_by_content, numbering_key
from unigraph.columnar.batches import FeatureValues, PairBatch
from unigraph.columnar.ragged import Ragged

_TARGET_SALT = rng.name_salt("pair-target")
_FEATURE_SALT = rng.name_salt("pair-feature")
_SECOND_SALT = rng.name_salt("pair-content-2")
_CUTOFF_SALT = rng.name_salt("pair-cutoff")


def _row_bytes(values: FeatureValues) -> np.ndarray:
    """Each row's value as one 'S' string that no other value of the column shares."""
    if isinstance(values, Ragged):
        raise ValueError("pairs-table features are dense (the schema check refuses ragged ones)")
    n = len(values)
    if values.dtype == np.dtype(object):  # strings: each framed by its length
        rows = values.reshape(n, -1).tolist()
        return np.array([b"".join(len(v).to_bytes(4, "little") + bytes(v) for v in row) + b"\x01"
                         for row in rows], dtype="S")
    flat = np.ascontiguousarray(values.reshape(n, -1))
    raw = flat.view(np.uint8).reshape(n, -1)
    # A closing 0x01 keeps trailing zero bytes (numpy strips NULs at the end of 'S').
    framed = np.concatenate([raw, np.ones((n, 1), np.uint8)], axis=1)
    return np.ascontiguousarray(framed).view(f"S{framed.shape[1]}").reshape(n)


def pair_fingerprints(batch: PairBatch, salt: int = 0) -> np.ndarray:
    """A 64-bit fingerprint of every row's content (source, target, features by name, and
    the cut-off when the pairs have one)."""
    state = rng.mix(np.uint64(salt), rng.fingerprint(batch.sources),
                    rng.fingerprint(batch.targets, salt=_TARGET_SALT))
    for name in sorted(batch.features):
        state = rng.mix_into(state, rng.fingerprint(_row_bytes(batch.features[name]),
                                                    salt=_FEATURE_SALT))
    if batch.timestamps is not None:  # untimed pairs keep the fingerprints they had
        state = rng.mix_into(state, rng.mix(np.uint64(_CUTOFF_SALT),
                                            cutoff_bits(batch.timestamps)))
    return np.asarray(state, np.uint64)


def cutoff_bits(cutoffs: np.ndarray) -> np.ndarray:
    """uint64: the bits of each cut-off (int64 or float64), -0.0 counted as 0.0 so that
    equal times have equal bits."""
    return np.ascontiguousarray(cutoffs + 0).view(np.uint64)


def pair_numbering_groups(batch: PairBatch, keys: int = 1 << NUMBERING_GROUP_BITS
                          ) -> Iterator[tuple[int, PairBatch]]:
    """(key, the rows of that key): the rows `number_pairs` must rank together, whole
    numbering groups per key (core.seeds.numbering_key)."""
    for key, positions in split_by_bucket(numbering_key(pair_fingerprints(batch), keys)):
        yield key, batch.take(positions)


def number_pairs(parts: Sequence[PairBatch]) -> PairPiece:
    """The pairs of whole numbering groups (in any order and split), numbered and sorted
    by sample id."""
    parts = [p for p in parts if len(p)]
    if not parts:
        return PairPiece(np.zeros(0, np.int64), np.zeros(0, "S1"), np.zeros(0, "S1"), {})
    timed = parts[0].timestamps is not None
    batch = parts[0] if len(parts) == 1 else PairBatch(
        np.concatenate([p.sources for p in parts]), np.concatenate([p.targets for p in parts]),
        np.concatenate([p.rows for p in parts]),
        {k: np.concatenate([p.features[k] for p in parts]) for k in parts[0].features},
        np.concatenate([p.timestamps for p in parts]) if timed else None)
    return numbered_pair_rows(batch)[0]


def numbered_pair_rows(batch: PairBatch) -> tuple[PairPiece, np.ndarray]:
    """(the rows as pairs sorted by sample id, each row's sample id in row order)."""
    order, samples = number_by_content(pair_fingerprints(batch),
                                       pair_fingerprints(batch, salt=_SECOND_SALT))
    by_row = np.empty(len(order), np.int64)
    by_row[order] = samples
    return PairPiece(samples, batch.sources[order], batch.targets[order],
                     {k: v[order] for k, v in batch.features.items()},
                     None if batch.timestamps is None else batch.timestamps[order]), by_row


def pair_requests(pairs: PairPiece) -> Requests:
    """Each pair's seed requests, source then target (the target only when it differs),
    sorted by sample; every request carries the pair's endpoint fingerprints (and its
    cut-off, when the pairs have one)."""
    distinct = pairs.targets != pairs.sources
    samples = np.concatenate([pairs.samples, pairs.samples[distinct]])
    nodes = np.concatenate([pairs.sources, pairs.targets[distinct]])
    ends = endpoint_fingerprints(pairs.sources, pairs.targets)
    ends = np.concatenate([ends, ends[distinct]])
    order = np.argsort(samples, kind="stable")  # per sample: source first
    cutoffs = (None if pairs.timestamps is None else
               np.concatenate([pairs.timestamps, pairs.timestamps[distinct]])[order])
    requests = Requests.from_ids(samples[order], nodes[order], cutoffs)
    requests.pairs = ends[order]
    return requests


def endpoint_fingerprints(sources: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """uint64 [n, 2]: the fingerprints of each pair's source and target ids."""
    return np.stack([rng.fingerprint(sources), rng.fingerprint(targets)], axis=1)
