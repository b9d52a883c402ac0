"""`train`'s batches from the batched decoder (numpy only): the arrays of
`input.parse_and_merge` for a batch of serialized records, made from the decoder's
columns of the keys the model reads.

    merge = BatchMerger(layout)
    arrays = merge(serialized)       # one per merge.keys, in that order

The values are the records' as TensorFlow's parser gives them for the same feature spec
(input.feature_spec): float features as float32, integer ones as int64, every record's
values one after the other; edge indices moved past the nodes of the records before.
Records laid out alike are decoded a key at a time over the batch
(sampler.graph_tensor.batch_codec); any other batch record by record, each key as the
record holds it (a missing key holds nothing, as for TensorFlow's ragged features).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from sampler.graph_tensor import keys as k
from sampler.graph_tensor.batch_codec import BatchDecoder
from sampler.graph_tensor.batch_columns import Columns
from sampler.graph_tensor.example_batch import segment_sums
from sampler.training.layout import GraphLayout
from unigraph.encoding.wire import padded
from unigraph.protos import graph_schema_pb2 as gs


@dataclasses.dataclass(frozen=True)
class Output:
    key: str
    is_float: bool
    shape: tuple[int, ...] = ()   # per item (the values are [items, *shape])
    end: str = ""                 # edge indices: the node set they point into


class BatchMerger:
    """A batch of serialized records -> parse_and_merge's arrays (module docstring)."""

    def __init__(self, layout: GraphLayout):
        self.layout = layout
        schema = gs.GraphSchema()  # the sets, and the features the model reads, by kind
        outputs = []
        for set_name, features in layout.node_sets.items():
            node_set = schema.node_sets[set_name]
            outputs.append(Output(k.node_key(set_name, k.SIZE_NAME), False, ()))
            for feature in features:
                _declare(node_set.features[feature.name], feature.is_float, feature.shape)
                outputs.append(Output(k.node_key(set_name, feature.name), feature.is_float,
                                      feature.shape))
        for set_name, (source, target) in layout.edge_sets.items():
            edge_set = schema.edge_sets[set_name]
            edge_set.source, edge_set.target = source, target
            outputs += [Output(k.edge_key(set_name, k.SIZE_NAME), False),
                        Output(k.edge_key(set_name, k.SOURCE_NAME), False, end=source),
                        Output(k.edge_key(set_name, k.TARGET_NAME), False, end=target)]
        if layout.label is not None:
            label = layout.label
            _declare(schema.node_sets[label.node_set].features[label.feature], False, ())
            outputs.append(Output(k.node_key(label.node_set, label.feature), False, ()))
        self.outputs = tuple(outputs)
        self.decoder = BatchDecoder(schema)

    def __call__(self, serialized) -> list[np.ndarray]:
        records = [bytes(r) for r in serialized]
        lengths = np.fromiter(map(len, records), np.int64, len(records))
        columns = self.decoder.columns(padded(b"".join(records)),
                                       np.cumsum(lengths) - lengths, lengths)
        if columns is None:  # records laid out otherwise: one by one
            columns = Columns.one_by_one(records, self.decoder.wanted)
        nodes = {}
        for set_name in self.layout.node_sets:
            key = k.node_key(set_name, k.SIZE_NAME)
            nodes[set_name] = segment_sums(columns.values(key), columns.counts(key))
        arrays = []
        for output in self.outputs:
            values = columns.values(output.key)
            if output.end:  # record i's indices move past the nodes of records 0..i-1
                end = nodes[output.end]
                values = values + np.repeat(np.cumsum(end) - end, columns.counts(output.key))
            dtype = np.float32 if output.is_float else np.int64
            arrays.append(values.astype(dtype, copy=False).reshape((-1,) + output.shape))
        return arrays


def _declare(feature: gs.Feature, is_float: bool, shape: tuple[int, ...]) -> None:
    feature.dtype = gs.DT_FLOAT if is_float else gs.DT_INT64
    for size in shape:
        feature.shape.dim.add().size = size
