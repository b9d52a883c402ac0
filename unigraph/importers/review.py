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
