"""The committed _pb2 modules match proto/*.proto, and TF-GNN's files parse unchanged."""
import os
import tempfile

import pytest
from google.protobuf import descriptor_pb2, text_format

from pipelines.tools.gen_protos import PROTO_MODULES, compile_protos
from sampler.features import feature_spec_pb2
from sampler.plan import sampling_spec_pb2
from tests.conftest import TESTDATA
from unigraph.protos import example_pb2, graph_schema_pb2

MODULES = {
    "proto/graph_schema.proto": graph_schema_pb2,
    "proto/example.proto": example_pb2,
    "proto/sampling_spec.proto": sampling_spec_pb2,
    "proto/feature_spec.proto": feature_spec_pb2,
}


def test_every_proto_source_has_a_committed_module():
    assert set(MODULES) == set(PROTO_MODULES)


def test_committed_modules_match_proto_sources():
    """Fails when a .proto changed without `make protos` (or the other way round)."""
    with tempfile.TemporaryDirectory() as tmp:
        descriptor_file = os.path.join(tmp, "all.pb")
        compile_protos(tmp, descriptor_set=descriptor_file)
        compiled = descriptor_pb2.FileDescriptorSet()
        with open(descriptor_file, "rb") as f:
            compiled.ParseFromString(f.read())
    by_name = {fd.name: fd for fd in compiled.file}
    for source, module in MODULES.items():
        committed = descriptor_pb2.FileDescriptorProto.FromString(
            module.DESCRIPTOR.serialized_pb)
        fresh = by_name[source]
        fresh.ClearField("source_code_info")
        _clear_json_names(fresh)  # the descriptor set spells them out, gencode does not
        assert committed == fresh, f"{source} drifted from its _pb2 module: run `make protos`"


def _clear_json_names(file_proto):
    def clear(message):
        for field in message.field:
            field.ClearField("json_name")
        for nested in message.nested_type:
            clear(nested)
    for message in file_proto.message_type:
        clear(message)


def test_no_top_level_proto_package():
    """`proto` must stay a folder of sources: proto-plus owns the import name `proto`."""
    root = os.path.dirname(TESTDATA.rstrip("/").rsplit("/", 1)[0])
    assert not os.path.exists(os.path.join(root, "proto", "__init__.py"))


def _tfgnn_protos():
    pytest.importorskip("tensorflow_gnn", reason="tensorflow-gnn is not installed")
    from tensorflow_gnn.proto import graph_schema_pb2 as tfgnn_schema
    from tensorflow_gnn.sampler import sampling_spec_pb2 as tfgnn_spec

    return tfgnn_schema, tfgnn_spec


@pytest.mark.parametrize("name", ["creditcard", "mag"])
def test_tfgnn_files_parse_to_the_same_bytes_as_tfgnn(name):
    """Our messages read TF-GNN's text files and encode them byte for byte as TF-GNN does."""
    tfgnn_schema, tfgnn_spec = _tfgnn_protos()
    folder = os.path.join(TESTDATA, name)
    for file_name, ours, theirs in (
            ("graph_schema.pbtxt", graph_schema_pb2.GraphSchema(), tfgnn_schema.GraphSchema()),
            ("sampling_spec.pbtxt", sampling_spec_pb2.SamplingSpec(),
             tfgnn_spec.SamplingSpec())):
        with open(os.path.join(folder, file_name)) as f:
            text = f.read()
        text_format.Parse(text, ours)
        text_format.Parse(text, theirs)
        assert ours.SerializeToString(deterministic=True) == theirs.SerializeToString(
            deterministic=True)


def test_both_text_styles_parse_alike():
    angle = 'seed_op < op_name: "s" node_set_name: "a" > sampling_ops < op_name: "h" ' \
            'input_op_names: "s" edge_set_name: "e" sample_size: 3 strategy: TOP_K >'
    curly = 'seed_op { op_name: "s" node_set_name: "a" } sampling_ops { op_name: "h" ' \
            'input_op_names: ["s"] edge_set_name: "e" sample_size: 3 strategy: TOP_K }'
    a, c = sampling_spec_pb2.SamplingSpec(), sampling_spec_pb2.SamplingSpec()
    text_format.Parse(angle, a)
    text_format.Parse(curly, c)
    assert a == c and a.sampling_ops[0].strategy == sampling_spec_pb2.TOP_K


def test_example_bytes_match_tensorflow():
    tf = pytest.importorskip("tensorflow")
    ours = example_pb2.Example()
    ours.features.feature["f"].float_list.value.extend([1.5, -2.0])
    ours.features.feature["i"].int64_list.value.extend([1, -1, 2**40])
    ours.features.feature["s"].bytes_list.value.extend([b"x", b""])
    theirs = tf.train.Example.FromString(ours.SerializeToString())
    assert theirs.SerializeToString(deterministic=True) == ours.SerializeToString(
        deterministic=True)


BIGQUERY_SCHEMA = """
node_sets { key: "paper" value {
  features { key: "feat" value { dtype: DT_FLOAT shape { dim { size: 4 } } } }
  metadata { bigquery { table_spec { project: "p" dataset: "mag" table: "papers" }
                        read_method: DIRECT_READ reshuffle: true } cardinality: 7 } } }
edge_sets { key: "cites" value { source: "paper" target: "paper"
  metadata { bigquery { sql: "SELECT source, target FROM mag.cites" read_method: EXPORT } } } }
"""


def test_tfgnn_bigquery_metadata_parses_to_the_same_bytes_as_tfgnn():
    tfgnn_schema, _ = _tfgnn_protos()
    ours, theirs = graph_schema_pb2.GraphSchema(), tfgnn_schema.GraphSchema()
    text_format.Parse(BIGQUERY_SCHEMA, ours)
    text_format.Parse(BIGQUERY_SCHEMA, theirs)
    assert ours.SerializeToString(deterministic=True) == theirs.SerializeToString(
        deterministic=True)
    assert ours.node_sets["paper"].metadata.bigquery.table_spec.table == "papers"
    assert ours.edge_sets["cites"].metadata.bigquery.WhichOneof("source") == "sql"


def test_bigquery_message_has_tfgnn_names_numbers_and_defaults():
    tfgnn_schema, _ = _tfgnn_protos()

    def shape(descriptor):
        fields = {f.name: (f.number, f.type, f.is_repeated, f.has_default_value and f.default_value,
                           f.containing_oneof and f.containing_oneof.name)
                  for f in descriptor.fields}
        nested = {d.name: shape(d) for d in descriptor.nested_types}
        enums = {e.name: {v.name: v.number for v in e.values} for e in descriptor.enum_types}
        return fields, nested, enums

    assert shape(graph_schema_pb2.BigQuery.DESCRIPTOR) == shape(
        tfgnn_schema.BigQuery.DESCRIPTOR)
    ours = graph_schema_pb2.Metadata.DESCRIPTOR.fields_by_name["bigquery"]
    theirs = tfgnn_schema.Metadata.DESCRIPTOR.fields_by_name["bigquery"]
    assert (ours.number, ours.message_type.name) == (theirs.number, theirs.message_type.name)
