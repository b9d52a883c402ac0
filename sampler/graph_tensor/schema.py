"""The schema that shapes a GraphTensor's records: TF-GNN's `GraphSchema` proto, read as
`tfgnn.read_schema` and `tfgnn.parse_schema` read it (the sampler writes one beside its
records: `OUT/graph_schema.pbtxt`)."""
from __future__ import annotations

import os
from typing import Union

from unigraph.protos.graph_schema_pb2 import GraphSchema
from unigraph.schema import load_schema, parse_schema_text


def read_schema(path: Union[str, "os.PathLike[str]"]) -> GraphSchema:
    """The GraphSchema in a text-format file, or in the graph_schema.pbtxt of a folder
    (an output folder of `sample`, local or gs://); SchemaError names the file."""
    return load_schema(os.fspath(path)).schema


def parse_schema(text: str) -> GraphSchema:
    """A GraphSchema from its text format; SchemaError names the line."""
    return parse_schema_text(text, "<text>")
