"""A mini-batch's features and ids, gathered from the graph in memory: the one place
where the node and edge feature arrays that become tensors are made.

`Features` gathers rows (node tables by code, edge features by adjacency position);
`tensor_arrays` shapes a set's features into the arrays a framework wraps as they are
(PyG's `x` / `edge_attr`, DGL's `feat`, each feature by name): without an encoder the
dense numeric features only (string and ragged features have no tensor form); with a
sampler.features.FeatureEncoder every feature, by its spec (categories as indices,
lists as values and offsets, or padded with a mask). Every view (sampler.torch,
sampler.dgl, the EgoGraph) goes through both.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from sampler.features import FeatureEncoder
from sampler.features.encode import named_arrays
from sampler.memory.graph import GraphInMemory
from unigraph.columnar.ragged import Ragged, take
from unigraph.errors import SamplerError

FEATURE_MODES = ("x", "names")


def _dense(values) -> bool:
    return not isinstance(values, Ragged) and values.dtype.kind in "biuf"


class Features:
    """Where a batch's features are: the graph's node tables and edge sets. `n_id` is a
    node's position in `Graph.node_ids(node_set)` (the seed set's table, or the set's
    ids), `e_id` an edge's row in its table (file index * 2**40 + row, RowId)."""

    def __init__(self, memory: GraphInMemory, seed_set: str):
        self._memory = memory
        self._seed_set = seed_set
        self._seed_positions: Optional[np.ndarray] = None
        table_ids = memory.seed_table.ids
        names = memory.names.get(seed_set)
        if names is not None and not (len(table_ids) == len(names)
                                      and np.array_equal(table_ids, names)):
            # A seed set whose table lacks some ids its edges name: n_id by the table.
            at = np.minimum(np.searchsorted(table_ids, names), max(len(table_ids) - 1, 0))
            found = (table_ids[at] == names) if len(table_ids) else np.zeros(len(names), bool)
            self._seed_positions = np.where(found, at, -1).astype(np.int64)

    def node_ids(self, node_set: str, codes: np.ndarray) -> np.ndarray:
        """n_id: int64 positions in Graph.node_ids(node_set) (-1: a seed-set node its
        table lacks)."""
        if node_set == self._seed_set and self._seed_positions is not None:
            return self._seed_positions[codes]
        return np.asarray(codes, np.int64)

    def node_features(self, node_set: str, codes: np.ndarray,
                      every: bool = False) -> dict[str, np.ndarray]:
        """The dense numeric features of these nodes (zeros for a node the table lacks);
        `every`: strings and ragged ones too (empty for a node the table lacks)."""
        table = self._memory.node_tables.get(node_set)
        if table is None:
            return {}
        dense = {name: values for name, values in table.features.items()
                 if every or _dense(values)}
        if not dense:
            return {}
        rows = table.positions_of(np.asarray(codes, np.int64))
        absent = rows < 0
        if absent.any():
            rows = np.where(absent, 0, rows)
        result = {}
        for name, values in dense.items():
            if isinstance(values, Ragged) or values.dtype == object:
                result[name] = _blanked(values, rows, absent)
                continue
            gathered = take(values, rows) if len(values) else np.zeros(
                (len(rows),) + values.shape[1:], values.dtype)
            if absent.any():
                gathered[absent] = 0
            result[name] = gathered
        return result

    def edge_features(self, edge_set: str, positions: np.ndarray,
                      every: bool = False) -> dict[str, np.ndarray]:
        """These edges' dense numeric features (`every`: all of them)."""
        adjacency = self._memory.adjacency[edge_set]
        return {name: take(values, positions) for name, values in adjacency.features.items()
                if every or _dense(values)}

    def edge_ids(self, edge_set: str, positions: np.ndarray) -> np.ndarray:
        """e_id: each edge's RowId (its table's file index * 2**40 + its row there)."""
        return take(self._memory.adjacency[edge_set].rows, positions).astype(np.int64)


def _blanked(values, rows: np.ndarray, absent: np.ndarray):
    """Rows of string or ragged values; a node the table lacks gets b"" (an empty list)."""
    if not len(rows):
        return take(values, rows)
    if not len(values):  # an empty table: every node is absent
        return (Ragged(values.values[:0], np.zeros(len(rows), np.int64))
                if isinstance(values, Ragged) else np.full(len(rows), b"", object))
    gathered = take(values, rows)
    if not absent.any():
        return gathered
    if isinstance(values, Ragged):
        keep = np.repeat(~absent, gathered.row_lengths)
        return Ragged(take(gathered.values, np.flatnonzero(keep)),
                      np.where(absent, 0, gathered.row_lengths))
    gathered[absent] = b""
    return gathered


def tensor_arrays(features: dict[str, np.ndarray], mode: str, concatenated: str, *,
                  encoder: Optional[FeatureEncoder] = None, set_kind: str = "nodes",
                  set_name: str = "", cutoffs: Optional[np.ndarray] = None,
                  padded: bool = False) -> dict[str, np.ndarray]:
    """A set's dense features as the arrays tensors are made of: `mode` "x" concatenates
    them (flattened per item, float32) under `concatenated`; "names" keeps each under
    its own name and dtype. Features are taken in name order. With an `encoder`, every
    feature by the spec (sampler.features.encode.named_arrays; `cutoffs`: each item's
    sample cut-off; `padded`: bags padded, for node data of one row per node)."""
    if mode not in FEATURE_MODES:
        raise SamplerError(f"features={mode!r}: give one of {', '.join(FEATURE_MODES)}")
    if encoder is not None:
        encoded = encoder.encode(set_kind, set_name, features, cutoffs=cutoffs)
        if padded:
            encoded = {name: value.padded() for name, value in encoded.items()}
        where = f"{set_kind[:-1]} set '{set_name}'"
        return named_arrays(encoded, mode, concatenated, where)
    dense = {name: values for name, values in sorted(features.items()) if _dense(values)}
    if not dense:
        return {}
    if mode == "names":
        return {name: np.ascontiguousarray(values) for name, values in dense.items()}
    columns = [values.reshape(len(values), -1) for values in dense.values()]
    if len(columns) == 1 and columns[0].dtype == np.float32:
        return {concatenated: np.ascontiguousarray(columns[0])}
    return {concatenated: np.concatenate([c.astype(np.float32, copy=False) for c in columns],
                                         axis=1)}


def pop_label(features: dict[str, np.ndarray], label: Optional[str], node_set: str
              ) -> Optional[np.ndarray]:
    """The label feature taken out of a node set's features ([n, 1] as [n])."""
    if label is None:
        return None
    if label not in features:
        raise SamplerError(f"label {label!r}: no dense feature of node set '{node_set}' has "
                           f"that name (it has {', '.join(sorted(features)) or 'none'})")
    values = features.pop(label)
    return values.reshape(len(values)) if values.ndim == 2 and values.shape[1] == 1 else values


def item_cutoffs(encoder: Optional[FeatureEncoder], set_kind: str, set_name: str,
                 seed_time: Optional[np.ndarray], slots: Optional[np.ndarray],
                 count: int) -> Optional[np.ndarray]:
    """Each of a set's items' sample cut-off, for timestamps encoded as ages: its seed's
    (a disjoint batch: by slot), or the merged batch's one; None when not needed."""
    if encoder is None or seed_time is None or not encoder.needs_cutoffs(set_kind, set_name):
        return None
    times = np.asarray(seed_time).reshape(-1)
    if slots is not None:
        return times[slots]
    return np.full(count, times[0] if len(times) else 0, times.dtype)
