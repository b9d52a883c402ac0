"""A tiny graph and TestPipeline for the Beam stage tests.

    paper nodes p1..p4 with feature x; cites edges p1->p2, p1->p3, p2->p3, p3->p4
"""
import numpy as np
from apache_beam.runners.portability.fn_api_runner import FnApiRunner
from apache_beam.testing.test_pipeline import TestPipeline

from unigraph.columnar.batches import EdgeBatch, NodeBatch, row_ids


def S(*ids):
    return np.array(ids, dtype="S")


def test_pipeline() -> TestPipeline:
    """Beam's TestPipeline on the in-process FnApiRunner (the DirectRunner would first
    try to download Prism)."""
    return TestPipeline(runner=FnApiRunner())


test_pipeline.__test__ = False  # a helper, not a test


def papers() -> list[NodeBatch]:
    """The paper table in two batches, as two files would give it."""
    return [NodeBatch("paper", S("p3", "p1"), row_ids(0, 0, 2), {"x": np.array([3.0, 1.0])}),
            NodeBatch("paper", S("p2", "p4"), row_ids(1, 0, 2), {"x": np.array([2.0, 4.0])})]


def cites() -> list[EdgeBatch]:
    return [EdgeBatch("cites", S("p1", "p1"), S("p3", "p2"), row_ids(0, 0, 2),
                      np.array([1.0, 2.0]), {}),
            EdgeBatch("cites", S("p2", "p3"), S("p3", "p4"), row_ids(0, 2, 2),
                      np.array([1.0, 1.0]), {})]


def matches(expected):
    """An assert_that matcher comparing a sorted, plain-Python view of the elements."""
    def check(actual):
        got = sorted(actual)
        assert got == sorted(expected), f"{got} != {sorted(expected)}"
    return check
