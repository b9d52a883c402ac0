"""synthetic-graph writes its tables streamed (pipelines/synthetic.write_streamed, issue 40):
the same bytes as the graph generated whole and then written (generate + write_graph),
with every option that changes the tables, in every format; and in bounded memory.

Each run is a few thousand rows, in batches of 50 rows (BATCH_ROWS patched) so that
every column is drawn in many chunks, and hub edges straddle a batch boundary.
"""
import os
import tracemalloc

import pytest

from pipelines import synthetic
from pipelines import synthetic_model


def _files(folder):
    out = {}
    for name in sorted(os.listdir(folder)):
        with open(os.path.join(folder, name), "rb") as f:
            out[name] = f.read()
    return out


CASES = [  # (scale, seed, format, shards, hub edges, planted, timestamps, extra features)
    (0.002, 0, "parquet", 1, 0, False, False, True),
    (0.002, 3, "csv", 1, 57, True, True, False),
    (0.003, 7, "tfrecord", 3, 2000, False, True, True),
    (0.001, 1, "csv", 2, 5, True, False, False),
    (0.001, 2, "parquet", 1, 0, "venue", False, False),  # planted on venues
]


@pytest.mark.parametrize("scale,seed,fmt,shards,hub,planted,timestamps,extra", CASES)
def test_streamed_tables_are_the_whole_graphs_bytes(tmp_path, monkeypatch, scale, seed, fmt,
                                                    shards, hub, planted, timestamps, extra):
    monkeypatch.setattr(synthetic, "BATCH_ROWS", 50)
    monkeypatch.setattr(synthetic_model, "BLOCK", 64)
    on = planted if isinstance(planted, str) else "feat"
    whole = synthetic.write_graph(
        synthetic_model.generate(scale, seed, hub_edges=hub, planted=bool(planted),
                           planted_feature=on),
        str(tmp_path / "whole"), fmt, shards, timestamps=timestamps, extra_features=extra)
    streamed = synthetic.write_streamed(str(tmp_path / "streamed"), fmt, shards, scale=scale,
                                        seed=seed, hub_edges=hub, planted=bool(planted),
                                        timestamps=timestamps, planted_feature=on,
                                        extra_features=extra)
    assert _files(tmp_path / "streamed") == _files(tmp_path / "whole")
    for manifest in (whole, streamed):
        del manifest["write_seconds"]
    assert streamed == whole


def test_the_command_streams(tmp_path):
    out = tmp_path / "g"
    assert synthetic.main(["--scale", "0.001", "--format", "csv", "--timestamps",
                           "--quiet", "--output", str(out)]) == 0
    synthetic.write_graph(synthetic_model.generate(0.001, 0), str(tmp_path / "whole"), "csv",
                          timestamps=True)
    streamed, whole = _files(out), _files(tmp_path / "whole")
    del streamed["manifest.json"]
    assert streamed == whole


def test_memory_holds_one_edge_set_not_the_graph(tmp_path, monkeypatch):
    """tracemalloc (numpy's buffers) over write_streamed at scale 0.02 (14,728 papers with
    128 floats: 7.5 MB of features; 423,000 edges of 4 sets). The graph generated whole
    holds all of it at once (21 MB); streamed, the peak is the largest edge set's
    draw (150,000 edges at about 36 bytes each, 5.4 MB; 8 MB in all, with the set being
    written and one batch of 2,048 rows)."""
    monkeypatch.setattr(synthetic, "BATCH_ROWS", 2048)  # a batch of papers: 1 MB
    # Imports first (the writers' modules are allocations too, once).
    synthetic.write_graph(synthetic_model.generate(0.0005, 0), str(tmp_path / "warm"), "parquet")
    tracemalloc.start()
    try:
        synthetic.write_streamed(str(tmp_path / "s"), "parquet", scale=0.02, seed=0)
        _, streamed = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        synthetic.write_graph(synthetic_model.generate(0.02, 0), str(tmp_path / "w"), "parquet")
        _, whole = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    largest = max(synthetic_model.scaled_counts(0.02)[1].values())
    assert streamed < 64 * largest, f"{streamed / 2**20:.1f} MB"
    assert whole > 2.5 * streamed, f"{whole / 2**20:.1f} against {streamed / 2**20:.1f} MB"
