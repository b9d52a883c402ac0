"""The numpy GraphTensor core: data model, validation, exact tf.Example codec (one record,
or a batch at once: `parse_examples`), batching, broadcast/pool, readout, padding and
conversion to TensorFlow.

Everything needed to build, encode and parse any GraphTensor the sampler writes is
here: the pieces (`GraphTensor`, `Context`, `NodeSet`, `EdgeSet`, `Adjacency`), ragged
values (`Ragged`, or nested lists in `from_fields`), the schema (`GraphSchema`,
`read_schema`, `parse_schema`), the codec (`encode_example`, `parse_example`, and
`parse_examples` for many records at once) and the errors they raise (`GraphTensorError`, `SchemaError`: ValueErrors of one line).

Only numpy and protobuf are imported here; TensorFlow loads lazily inside
`to_tensorflow`, so decoding and validating stay cheap in Beam workers.
"""
from sampler.graph_tensor.model import (CONTEXT, SOURCE, TARGET, Adjacency, Context, EdgeSet,
                                        Field, GraphTensor, NodeSet)
from sampler.graph_tensor.codec import (encode_example, flatten_graph, graph_keys, parse_example,
                                        write_example)
from sampler.graph_tensor.batch_codec import parse_examples
from sampler.graph_tensor.keys import schema_keys
from sampler.graph_tensor.schema import GraphSchema, parse_schema, read_schema
from sampler.graph_tensor.readout_structure import (READOUT_NODE_SET, readout_edge_sets,
                                                    readout_keys)
from sampler.graph_tensor.structured_readout import add_readout, readout
from sampler.graph_tensor.ops import broadcast, merge_batch_to_components, pool, segment_reduce
from sampler.graph_tensor.padding import SizeConstraints, pad_to_total_sizes, tight_size_constraints
from sampler.graph_tensor.tf_convert import from_tfgnn, to_tensors, to_tfgnn
from sampler.graph_tensor.validation import validate_graph
from unigraph.columnar.ragged import Ragged
from unigraph.errors import GraphTensorError, SchemaError

__all__ = ["CONTEXT", "SOURCE", "TARGET", "Adjacency", "Context", "EdgeSet", "Field", "GraphTensor",
           "NodeSet", "Ragged", "GraphSchema", "read_schema", "parse_schema", "GraphTensorError",
           "SchemaError", "encode_example", "flatten_graph", "graph_keys", "parse_example",
           "parse_examples",
           "write_example", "schema_keys", "READOUT_NODE_SET", "readout_edge_sets",
           "readout_keys", "add_readout", "readout", "broadcast", "merge_batch_to_components",
           "pool", "segment_reduce", "SizeConstraints", "pad_to_total_sizes",
           "tight_size_constraints", "from_tfgnn", "to_tensors", "to_tfgnn", "validate_graph"]
