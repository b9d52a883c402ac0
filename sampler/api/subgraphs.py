"""What a sampling call returns: `Subgraphs`, numpy GraphTensors in the order asked for,
held as the sampled arrays until an item is read; `to_example` encodes one."""
from __future__ import annotations

from collections.abc import Sequence
from typing import overload

import numpy as np

from sampler.core.assemble import AssembledShard
from sampler.graph_tensor.codec import encode_example
from sampler.graph_tensor.model import GraphTensor
from sampler.output.encoder import encode_shard
from sampler.output.reference import shard_graphs
from unigraph.protos import graph_schema_pb2 as gs


class Subgraphs(Sequence[GraphTensor]):
    """The subgraphs of one call, in the order of the rows asked for; rows whose seed
    (or a pair's endpoint) is not in the graph are left out and listed in `missing`.

    Items are numpy GraphTensors (`sampler.graph_tensor`), built on first access; the
    sampled arrays behind them are held once (`to_examples` encodes from them directly).
    """

    def __init__(self, parts: list[AssembledShard], where: np.ndarray, positions: np.ndarray,
                 missing: list, report: dict, *, seed: int, epoch: int,
                 labels: np.ndarray | None = None):
        self._parts = parts
        self._where = where            # [n, 2]: (part, index in part) of each subgraph
        self._graphs: dict[int, list[GraphTensor]] = {}
        # Each subgraph's row in the call: the ids (or pairs) given, then (link calls with
        # negatives) their negatives, K per pair in the order of the pairs.
        self.positions = positions
        # The rows asked for whose seed is no node of the seed set: ids (bytes), or a link
        # call's (source, target) pairs with an endpoint that is none.
        self.missing = missing
        self.report = report           # the call's counts, as the CLI's run report names them
        self.seed = seed
        self.epoch = epoch
        self.labels = labels           # link samples with negatives: 1 positive, 0 negative

    def __len__(self) -> int:
        return len(self._where)

    @overload
    def __getitem__(self, index: int) -> GraphTensor: ...

    @overload
    def __getitem__(self, index: slice) -> list[GraphTensor]: ...

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if not -len(self) <= index < len(self):
            raise IndexError(f"subgraph {index} of {len(self)}")
        part, within = self._where[index]
        if part not in self._graphs:
            self._graphs[part] = [graph for _, graph in shard_graphs(self._parts[part])]
        return self._graphs[part][within]

    @property
    def seed_ids(self) -> np.ndarray:
        """Each subgraph's seed id (a link sample's source), bytes."""
        return self._ids(lambda part: part.seed_ids)

    @property
    def target_ids(self) -> np.ndarray | None:
        """Link samples: each subgraph's target id."""
        if not self._parts or self._parts[0].target_ids is None:
            return None
        return self._ids(lambda part: part.target_ids)

    def _ids(self, of) -> np.ndarray:
        if not len(self):
            return np.zeros(0, object)
        return np.concatenate([of(part).astype(object) for part in self._parts])[
            self._flat_index()]

    def _flat_index(self) -> np.ndarray:
        starts = np.cumsum([0] + [len(p) for p in self._parts])
        return starts[self._where[:, 0]] + self._where[:, 1]

    def to_examples(self) -> list[bytes]:
        """Each subgraph's tf.train.Example bytes, as `sample` writes them (encoded from
        the sampled arrays at once: faster than `to_example` one by one)."""
        encoded = [list(encode_shard(part)) for part in self._parts]
        return [encoded[part][within] for part, within in self._where.tolist()]

    @property
    def assembled(self) -> list[AssembledShard]:
        """The sampled arrays behind the subgraphs (for converters such as sampler.torch)
        and, with `order`, which sample of them each subgraph is."""
        return self._parts

    @property
    def order(self) -> np.ndarray:
        """[n, 2]: (index into `assembled`, sample within it) of each subgraph."""
        return self._where

    def __repr__(self) -> str:
        return (f"Subgraphs({len(self)} subgraphs, seed={self.seed}, epoch={self.epoch}, "
                f"{len(self.missing)} missing)")


def to_example(subgraph: GraphTensor, schema: gs.GraphSchema | None = None) -> bytes:
    """The serialized tf.train.Example of a subgraph: for one `Graph.sample` returned, the
    bytes `sample` writes for it. `schema` (`Graph.output_schema`) matters only for a
    feature declared with a fixed dimension before a ragged one (its row lengths are
    then not written)."""
    return encode_example(subgraph, schema)
