"""sampler.core.adjacency: the canonical order and one bucket's CSR."""
import numpy as np
import pytest

from sampler.core.adjacency import build_adjacency, canonical_adjacency
from unigraph.columnar.batches import EdgeBatch, row_ids


def S(*ids):
    return np.array(ids, dtype="S")


def test_canonical_adjacency_sorts_by_source_target_row():
    sources = np.array([b"b", b"a", b"b", b"a", b"b"], dtype="S")
    targets = np.array([b"x", b"z", b"x", b"y", b"w"], dtype="S")
    rows = np.array([9, 1, 3, 2, 5], dtype=np.int64)
    order = canonical_adjacency(sources, targets, rows)
    assert order.tolist() == [3, 1, 4, 2, 0]
    with pytest.raises(ValueError, match="1-D arrays"):
        canonical_adjacency(sources, targets, rows[:2])


def test_build_adjacency_is_canonical_whatever_the_input_order():
    rows = row_ids(0, 0, 5)
    batch = EdgeBatch("e", S("b", "a", "b", "a", "b"), S("y", "z", "x", "y", "x"), rows,
                      np.arange(5.0), {"f": np.arange(5) * 10})
    shuffled = [EdgeBatch("e", batch.sources[i], batch.targets[i], batch.rows[i],
                          batch.weights[i], {"f": batch.features["f"][i]})
                for i in (np.array([4, 2]), np.array([0, 3, 1]))]
    a, b = build_adjacency("e", [batch]), build_adjacency("e", shuffled)
    for adj in (a, b):
        assert adj.sources.tolist() == [b"a", b"b"]
        assert adj.row_splits.tolist() == [0, 2, 5]
        assert adj.targets.tolist() == [b"y", b"z", b"x", b"x", b"y"]
        assert adj.rows.tolist() == [3, 1, 2, 4, 0]  # x twice: by row
        assert adj.features["f"].tolist() == [30, 10, 20, 40, 0]
        assert adj.rows_of(S("b", "c", "a")).tolist() == [1, -1, 0]


def test_build_adjacency_of_nothing_has_no_rows():
    empty = build_adjacency("e", [])
    assert len(empty.sources) == 0 and empty.row_splits.tolist() == [0]
    assert empty.rows_of(np.array([b"a"], "S")).tolist() == [-1]


def test_weights_are_dropped_unless_every_piece_has_them():
    weighted = EdgeBatch("e", S("a"), S("b"), row_ids(0, 0, 1), np.ones(1), {})
    unweighted = EdgeBatch("e", S("a"), S("c"), row_ids(0, 1, 1), None, {})
    assert build_adjacency("e", [weighted, unweighted]).weights is None


def test_build_adjacency_refuses_weights_that_are_not_finite():
    """Checked once per CSR: the strategies never scan a whole CSR's weights per call."""
    batch = EdgeBatch("e", S("a", "a"), S("x", "y"), row_ids(0, 0, 2), np.array([1.0, np.nan]),
                      {})
    with pytest.raises(ValueError, match="edge set 'e': weights must be finite"):
        build_adjacency("e", [batch])
