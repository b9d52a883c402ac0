"""Mini-batches from the Python API: a call's seeds (or pairs) found in the graph, as the
codes sampler.minibatch samples, and the batch it makes.

`node_seeds` / `pair_seeds` decode and check the rows as `Graph.sample` /
`sample_pairs` do (same errors, same numbering: a disjoint batch's draws are the
subgraphs'), find them in the seed set and list the missing; `minibatch` samples
them. A loader prepares its whole input once and cuts batches out of it
(`SeedBatch.take`), so a batch costs only its sampling.
"""
from __future__ import annotations

import logging
from typing import Any, Optional, Protocol

import numpy as np

from sampler.api.seed_tables import decode_rows, ends_only
from sampler.core.pairs import numbered_pair_rows
from sampler.core.seeds import numbered_seed_rows
from sampler.core.negatives import DrawGroups
from sampler.core.stats import RunStats
from sampler.job.job import epoch_seed
from sampler.memory.batch import node_samples, pair_samples, with_negatives
from sampler.memory.graph import GraphInMemory
from sampler.minibatch.batch import MergedBatch
from sampler.minibatch.features import Features
from sampler.minibatch.sample import SeedBatch, check_one_cutoff, sample_minibatch
from sampler.plan.plan import Plan, label_dtype, pairs_table_layout
from unigraph.columnar.batches import PairBatch
from unigraph.errors import SamplerError
from unigraph.protos import graph_schema_pb2 as gs
from unigraph.tables.layout import TimeColumn, seeds_layout
from unigraph.timestamps import SEED_TIMESTAMP_COLUMNS

CUTOFF_COLUMN = SEED_TIMESTAMP_COLUMNS[0]


class GraphParts(Protocol):
    """What these functions read of a sampler.api.Graph, typed by its parts: graph.py
    calls them, and only it imports the other module."""

    _plan: Plan
    _memory: GraphInMemory

    @property
    def schema(self) -> gs.GraphSchema: ...

    @property
    def seed_set(self) -> str: ...

    @property
    def link(self) -> bool: ...

    def _cutoff_column(self, cutoffs) -> Optional[TimeColumn]: ...

    def _negative_groups(self) -> DrawGroups: ...

    def _features(self) -> Features: ...

log = logging.getLogger("sampler")


def node_rows(graph: GraphParts, seed_ids, cutoffs, call: str):
    """Node seeds decoded and numbered as a seeds table's rows (each row's sample id), and
    those found in the seed set (`Samples`); `call`: what a link spec's caller should do."""
    if graph.link:
        raise SamplerError(f"the spec seeds with pairs (symmetric_link_seed_op "
                           f"'{graph._plan.seed_op}'): {call}")
    layout = seeds_layout(graph._cutoff_column(cutoffs))
    rows = decode_rows(layout, {"id": seed_ids, CUTOFF_COLUMN: cutoffs}, "seeds")
    numbered, row_samples = numbered_seed_rows(rows)
    return rows, row_samples, node_samples(graph._memory, graph.seed_set, numbered)


def pair_rows(graph: GraphParts, sources, targets, *, cutoffs, features, known_positives,
              seed: int, epoch: int, call: str) -> tuple[PairBatch, RunStats]:
    """Pairs decoded as a pairs table's rows, then (loaded with `negatives=K`) their
    negatives drawn for this seed and epoch, with the report's counts; `known_positives`:
    (sources, targets), or pairs decoded already (known_pairs)."""
    plan, schema = graph._plan, graph.schema
    if not graph.link:
        raise SamplerError(f"the spec's seed op '{plan.seed_op}' seeds nodes: {call}")
    layout = pairs_table_layout(plan, schema, graph._cutoff_column(cutoffs))
    wanted = [f.name for f in layout.features if f.name != CUTOFF_COLUMN]
    unknown = sorted(set(features or {}) - set(wanted))
    if unknown:
        raise SamplerError(f"pairs: feature '{unknown[0]}' is not a feature of node set "
                           f"'_readout' the pairs table feeds (those: "
                           f"{', '.join(wanted) or 'none'})")
    rows = decode_rows(layout, {"source": sources, "target": targets, CUTOFF_COLUMN: cutoffs,
                                **(features or {})}, "pairs")
    extra = RunStats()
    if plan.negatives:
        known = known_positives
        if known_positives is not None and not isinstance(known_positives, PairBatch):
            known = known_pairs(graph, known_positives)
        [rows], extra = with_negatives([rows], plan, graph._negative_groups(),
                                       epoch_seed(seed, epoch), label_dtype(schema), known)
    return rows, extra


def node_seeds(graph: GraphParts, seed_ids, cutoffs, *, merged: bool = False
               ) -> tuple[SeedBatch, list]:
    """(the rows found in the seed set, as codes with their rows, sample ids and
    cut-offs; the ids of the rows not found). `merged`: refused unless the rows share
    one cut-off (sampler.minibatch.sample.check_one_cutoff)."""
    rows, row_samples, samples = node_rows(graph, seed_ids, cutoffs,
                                           "give pairs (sources, targets)")
    if merged:
        check_one_cutoff(rows.timestamps)
    found = samples.found
    at = np.minimum(np.searchsorted(found.samples, row_samples), max(len(found) - 1, 0))
    ok = (found.samples[at] == row_samples) if len(found) else np.zeros(len(rows), bool)
    codes = found.ids[found.codes][at[ok]].astype(np.int64)
    kept = np.flatnonzero(ok)
    missing = rows.ids[~ok].tolist()
    _warn(graph, missing, len(rows), "seeds are")
    return SeedBatch(rows=kept, codes=codes, samples=row_samples[ok],
                     cutoffs=None if rows.timestamps is None else rows.timestamps[ok]), missing


def pair_seeds(graph: GraphParts, sources, targets, *, seed: int, epoch: int, cutoffs,
               features: Optional[dict[str, Any]], known_positives, merged: bool = False
               ) -> tuple[SeedBatch, list]:
    """The pairs (then, loaded with `negatives=K`, K negatives per pair drawn for this
    seed and epoch) whose two ends are in the seed set, as codes; and the pairs not.
    `merged`: as node_seeds."""
    rows, _ = pair_rows(graph, sources, targets, cutoffs=cutoffs, features=features,
                        known_positives=known_positives, seed=seed, epoch=epoch,
                        call="give seed ids")
    if merged:
        check_one_cutoff(rows.timestamps)
    plan = graph._plan
    numbered, row_samples = numbered_pair_rows(rows)
    memory = graph._memory
    interned = pair_samples(memory, graph.seed_set, numbered).pairs
    at = np.searchsorted(interned.samples, row_samples)
    source_codes, target_codes = interned.sources[at], interned.targets[at]
    ok = (source_codes >= 0) & (target_codes >= 0)
    missing = [(s, t) for s, t, o in zip(rows.sources.tolist(), rows.targets.tolist(),
                                         ok.tolist()) if not o]
    _warn(graph, missing, len(rows), "pairs have an endpoint")
    labels = None
    if plan.negatives:
        labels = np.asarray(rows.features["label"]).reshape(len(rows))[ok]
    positions = np.arange(len(rows))
    kept = np.flatnonzero(ok)
    pair_features = {k: np.asarray(v)[ok] for k, v in rows.features.items()
                     if not (plan.negatives and k == "label")}
    return SeedBatch(rows=positions[kept], sources=source_codes[ok],
                     targets=target_codes[ok], labels=labels, samples=row_samples[ok],
                     cutoffs=None if rows.timestamps is None else rows.timestamps[ok],
                     features=pair_features), missing


def known_pairs(graph: GraphParts, known_positives) -> PairBatch:
    """(sources, targets) of known positives, decoded once for many batches."""
    return decode_rows(ends_only(pairs_table_layout(graph._plan, graph.schema)),
                       {"source": known_positives[0], "target": known_positives[1]},
                       "known_positives")


def minibatch(graph: GraphParts, seeds: SeedBatch, *, seed: int, epoch: int, disjoint: bool,
              missing: list = ()) -> MergedBatch:
    """One mini-batch of prepared seeds (sampler.minibatch.sample_minibatch)."""
    if graph._plan.induced_edge_sets:
        raise SamplerError("mini-batches hold the sampled edges only: load the graph with "
                           "edge_aggregation='edge' (induced edges: Graph.sample)")
    batch = sample_minibatch(graph._memory, graph._plan, epoch_seed(seed, epoch), seeds,
                             disjoint=disjoint, epoch=epoch, base_seed=seed)
    batch.missing = list(missing)
    batch.source = graph._features()
    return batch


def features_of(graph: GraphParts) -> Features:
    return Features(graph._memory, graph.seed_set)


def _warn(graph: GraphParts, missing: list, total: int, what: str) -> None:
    if missing:
        log.warning("%d of %d %s not in node set '%s'", len(missing), total, what,
                    graph.seed_set)
