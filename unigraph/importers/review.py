"""The tables' guess (unigraph.importers.infer) as lines to read before anything is
written: what each table is and why, each feature's dtype and shape, what is left out."""
from __future__ import annotations

from unigraph.importers.infer import Guess
from unigraph.protos import graph_schema_pb2 as gs


def review(guess: Guess) -> list[str]:
    """The guess as lines to read before anything is written."""
    lines = []
    for stem, profile in guess.profiles.items():
        where = f"{stem} ({', '.join(f.rsplit('/', 1)[-1] for f in profile.files[:3])}" \
                f"{', ...' if len(profile.files) > 3 else ''}; {profile.rows:,} rows sampled)"
        node = guess.nodes.get(stem)
        table_edges = [e for e in guess.edges if e.table == stem]
        if node is not None:
            lines.append(f"{where}: node set '{node.set_name}', id column '{node.id_column}' "
                         f"({node.reason})")
        for edge in table_edges:
            lines.append(f"{where if node is None else '  and'}: edge set '{edge.set_name}' "
                         f"from '{edge.source.column}' ({edge.source.node_set}: "
                         f"{edge.source.reason}) to '{edge.target.column}' "
                         f"({edge.target.node_set}: {edge.target.reason})")
        if node is None and not table_edges:
            lines.append(f"{where}: left out")
        for column, col in guess.features.get(stem, {}).items():
            shape = "[" + ", ".join(str(d) for d in col.shape) + "]"
            marks = [col.note] if col.note else []
            if guess.timestamps.get(stem) == column:
                marks.append("the timestamp column")
            if guess.label == (stem, column):
                marks.append("the labels")
            lines.append(f"    {column}: {gs.DataType.Name(col.dtype)} {shape}"
                         + (f" ({'; '.join(marks)})" if marks else ""))
        for text in guess.left_out.get(stem, []):
            lines.append(f"    left out: {text}")
    for node_set, why in guess.tableless.items():
        lines.append(f"node set '{node_set}' has no table: {why}")
    if guess.seed_set:
        source = "the labels" if guess.label else "the first node table"
        lines.append(f"seeds: node set '{guess.seed_set}' ({source})"
                     + (f"; splits from '{guess.split[1]}'" if guess.split else "")
                     + (f"; splits from {', '.join(guess.masks.values())}" if guess.masks else ""))
    return lines


def _feature_text(features) -> str:
    parts = []
    for name, feature in sorted(features.items()):  # a protobuf map's order varies by process
        shape = "[" + ", ".join(str(d.size) for d in feature.shape.dim) + "]"
        parts.append(f"{name} {gs.DataType.Name(feature.dtype)} {shape}")
    return ", ".join(parts) or "no features"


def schema_lines(graph) -> list[str]:
    """An imported graph's schema in a few lines: each set, its table and features."""
    schema = graph.schema
    lines = []
    for name, node_set in sorted(schema.node_sets.items()):
        if name.startswith("_"):
            continue
        table = "a table" if node_set.metadata.filename else "no table"
        lines.append(f"node set '{name}' ({table}): {_feature_text(node_set.features)}")
    for name, edge_set in sorted(schema.edge_sets.items()):
        if name.startswith("_"):
            continue
        lines.append(f"edge set '{name}' ({edge_set.source} -> {edge_set.target}): "
                     f"{_feature_text(edge_set.features)}")
    if graph.seed_set:
        kind = "pairs of" if graph.link else "seeds of"
        splits = ", ".join(s.name for s in graph.splits) or "none"
        lines.append(f"splits ({kind} '{graph.seed_set}'): {splits}")
    return lines
