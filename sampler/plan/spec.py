"""The SamplingSpec text format: reading a `.pbtxt` into TF-GNN's SamplingSpec message.

Checking the spec against a graph schema is plan.py's job; this module only
turns text into the message, naming the file, line and column of a syntax error.
"""
from __future__ import annotations

from google.protobuf import text_format

from sampler.plan import sampling_spec_pb2 as ss
from unigraph.storage import paths
from unigraph.errors import SpecError, one_line, text_format_message


def parse_spec_text(text: str, source: str) -> ss.SamplingSpec:
    spec = ss.SamplingSpec()
    try:
        text_format.Parse(text, spec)
    except text_format.ParseError as e:
        raise SpecError(f"sampling spec {text_format_message(e, source)}") from None
    return spec


def load_spec(path: str) -> ss.SamplingSpec:
    if not paths.exists(path):
        raise SpecError(f"sampling spec {path}: no such file")
    try:
        text = paths.read_text(path)
    except (OSError, UnicodeDecodeError) as e:
        raise SpecError(f"sampling spec {path}: cannot read: {one_line(e)}") from None
    return parse_spec_text(text, path)
