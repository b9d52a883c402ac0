"""The dense form of a mini-batch for specs whose ops form a chain with fixed fan-outs:
GraphLearn's EgoGraph. Hop 0 is the batch's roots (the seeds, or the pairs' ends), hop i
the i-th op's draws from every node of hop i - 1, padded to k_i per node: node ids and
features as arrays of batch * k_1 * ... * k_i rows, with a mask of the real ones.

A chain: op 1 takes the seed op, op i + 1 takes op i (one input each). Each node of a
hop is sampled once per batch (once per seed for a disjoint batch), so a node that
fills several slots has the same children in each: the dense form of the same draws
as the batch's other views. Where an op drew fewer than k edges from a node (it has
fewer, or the node is padding), the rest of its slots are padding (mask False, id -1,
features zero). With an `encoder` (sampler.features.FeatureEncoder) every feature by its
spec, each by name: categories as indices, lists padded with a `<name>_mask`.
"""
from __future__ import annotations

import dataclasses
from typing import Optional

import numpy as np

from sampler.features import FeatureEncoder
from sampler.minibatch.batch import MergedBatch
from sampler.minibatch.features import item_cutoffs, pop_label, tensor_arrays
from sampler.plan.plan import Plan
from unigraph.errors import SamplerError


@dataclasses.dataclass(eq=False)
class EgoHop:
    """One hop of an EgoGraph: `n_id` (positions in Graph.node_ids(node_set), -1 for
    padding), `mask`, the nodes' dense `features` (zeros for padding), and (hops >= 1)
    the edges that reached them: `e_id` (rows in the edge set's table, -1 for padding)
    and `edge_features`."""

    node_set: str
    n_id: np.ndarray
    mask: np.ndarray
    features: dict
    edge_set: Optional[str] = None
    fanout: int = 1
    e_id: Optional[np.ndarray] = None
    edge_features: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(eq=False)
class EgoGraph:
    """hops[0]: the roots ([batch]); hops[i]: [batch * k_1 * ... * k_i], the children of
    hops[i - 1]'s node j in rows j * k_i .. (j + 1) * k_i - 1. `y`: the roots' label."""

    hops: list[EgoHop]
    y: Optional[np.ndarray] = None

    @property
    def batch_size(self) -> int:
        return len(self.hops[0].n_id)


def chain_of(plan: Plan) -> list:
    """The ops of a chain spec in order, or a one-line SamplerError saying why not."""
    previous = plan.seed_op
    for op in plan.ops:
        if tuple(op.input_ops) != (previous,):
            raise SamplerError(f"the dense EgoGraph needs ops that form a chain (each op "
                               f"taking the one before): op '{op.name}' takes "
                               f"{', '.join(op.input_ops)}, not '{previous}'")
        previous = op.name
    return list(plan.ops)


def ego_graph(batch: MergedBatch, plan: Plan, *, label: Optional[str] = None,
              encoder: Optional[FeatureEncoder] = None) -> EgoGraph:
    """The EgoGraph of a batch sampled for `plan` (a chain; see chain_of); `encoder`:
    every feature by a feature spec."""
    ops = chain_of(plan)
    source = batch.source
    if source is None:
        raise SamplerError("this MergedBatch came from another process without its graph: "
                           "make the EgoGraph where it was sampled")
    roots = batch.nodes[batch.seed_set]
    count = roots.num_sampled_nodes[0]
    n_codes = _key_range(batch)
    keys = roots.codes[:count].astype(np.int64)
    if batch.disjoint:
        keys = roots.slots[:count] * n_codes[batch.seed_set] + keys
    mask = np.ones(count, bool)
    roots = np.arange(count)  # the root each row descends from (its seed's cut-off)
    encoding = _Encoding(encoder, batch.seed_time, batch.disjoint)
    root_features, y = _features(source, batch.seed_set, keys, mask, n_codes, batch.disjoint,
                                 encoding, roots, label)
    hops = [EgoHop(batch.seed_set, _n_id(source, batch.seed_set, keys, mask, n_codes,
                                         batch.disjoint), mask, root_features)]
    for op in ops:
        sources, targets, positions = batch.op_edges[op.name]
        order = np.lexsort((positions, sources))  # each source's edges by position
        sources, targets, positions = sources[order], targets[order], positions[order]
        distinct, starts, counts = np.unique(sources, return_index=True, return_counts=True)
        k = op.sample_size
        at = np.minimum(np.searchsorted(distinct, keys), max(len(distinct) - 1, 0))
        found = mask & (len(distinct) > 0)
        if len(distinct):
            found &= distinct[at] == keys
        drawn = np.where(found, counts[at] if len(distinct) else 0, 0)
        slot = np.arange(k)
        child_mask = slot[None, :] < drawn[:, None]
        edge = np.where(child_mask, (starts[at] if len(distinct) else 0)[:, None] + slot, 0)
        child_mask = child_mask.reshape(-1)
        edge = edge.reshape(-1)
        roots = np.repeat(roots, k)
        keys = np.where(child_mask, targets[edge] if len(targets) else 0, 0)
        present = _present(source, op.target_set, keys, child_mask, n_codes, batch.disjoint)
        mask = child_mask & present
        hop_positions = positions[edge] if len(positions) else np.zeros(len(edge), np.int64)
        e_id = np.full(len(mask), -1, np.int64)
        if mask.any():
            e_id[mask] = source.edge_ids(op.edge_set, hop_positions[mask])
        gathered = source.edge_features(op.edge_set, hop_positions[mask],
                                        every=encoder is not None)
        edge_features = _spread(encoding.apply(gathered, "edges", op.edge_set, roots[mask]),
                                mask)
        hops.append(EgoHop(op.target_set, _n_id(source, op.target_set, keys, mask, n_codes,
                                                batch.disjoint), mask,
                           _features(source, op.target_set, keys, mask, n_codes,
                                     batch.disjoint, encoding, roots)[0], op.edge_set, k,
                           e_id, edge_features))
    return EgoGraph(hops, y)


@dataclasses.dataclass(frozen=True)
class _Encoding:
    """How a hop's gathered features become its arrays: as they are, or by an encoder
    (each feature by name, bags padded: a hop has one row per slot)."""

    encoder: Optional[FeatureEncoder]
    seed_time: Optional[np.ndarray]
    disjoint: bool

    def apply(self, features: dict, set_kind: str, set_name: str, roots: np.ndarray) -> dict:
        if self.encoder is None:
            return features
        cutoffs = item_cutoffs(self.encoder, set_kind, set_name, self.seed_time,
                               roots if self.disjoint else None, len(roots))
        return tensor_arrays(features, "names", "x", encoder=self.encoder,
                             set_kind=set_kind, set_name=set_name, cutoffs=cutoffs,
                             padded=True)


def _spread(values: dict, mask: np.ndarray) -> dict:
    """Arrays of the mask's rows as arrays of every row (zeros where the mask is False)."""
    result = {}
    for name, array in values.items():
        full = np.zeros((len(mask),) + array.shape[1:], array.dtype)
        full[mask] = array
        result[name] = full
    return result


def _key_range(batch: MergedBatch) -> dict:
    """Per node set, the codes' range that disjoint keys are slot * range + code in."""
    names = batch.source._memory.names
    return {name: max(len(names[name]), 1) for name in batch.nodes}


def _codes(keys, node_set, n_codes, disjoint):
    return keys % n_codes[node_set] if disjoint else keys


def _n_id(source, node_set, keys, mask, n_codes, disjoint) -> np.ndarray:
    n_id = np.full(len(keys), -1, np.int64)
    n_id[mask] = source.node_ids(node_set, _codes(keys[mask], node_set, n_codes, disjoint))
    return n_id


def _features(source, node_set, keys, mask, n_codes, disjoint, encoding: _Encoding,
              roots: np.ndarray, label: Optional[str] = None) -> tuple[dict, Optional[np.ndarray]]:
    """(a hop's node features over every row, the label of its rows when asked for)."""
    gathered = source.node_features(node_set, _codes(keys[mask], node_set, n_codes, disjoint),
                                    every=encoding.encoder is not None)
    y = None
    if label is not None:
        y = _spread({label: pop_label(gathered, label, node_set)}, mask)[label]
    return _spread(encoding.apply(gathered, "nodes", node_set, roots[mask]), mask), y


def _present(source, node_set, keys, mask, n_codes, disjoint) -> np.ndarray:
    """Nodes their set's table holds (a batch leaves the others out)."""
    present = mask.copy()
    table = source._memory.node_tables.get(node_set)
    if table is not None and len(table.ids) != len(source._memory.names[node_set]):
        codes = _codes(keys[mask], node_set, n_codes, disjoint)
        present[mask] = table.positions_of(codes) >= 0
    return present
