"""unigraph.tables.read_ahead: an iterator run ahead in a thread, as if it ran in the caller's."""
import threading

import pytest

from unigraph.tables.read_ahead import read_ahead


def test_items_in_order_then_the_error_where_it_was_raised():
    def items():
        yield from range(5)
        raise ValueError("at 5")

    got = []
    with pytest.raises(ValueError, match="at 5"):
        for item in read_ahead(items(), depth=2):
            got.append(item)
    assert got == [0, 1, 2, 3, 4]


def test_closing_early_stops_the_thread_and_closes_the_source():
    closed = threading.Event()
    produced = []

    def items():
        try:
            for k in range(10 ** 6):
                produced.append(k)
                yield k
        finally:
            closed.set()

    ahead = read_ahead(items(), depth=2)
    assert [next(ahead) for _ in range(3)] == [0, 1, 2]
    ahead.close()
    assert closed.is_set()
    assert len(produced) <= 3 + 2 + 1  # never more than `depth` ahead (plus one in hand)
    assert not [t for t in threading.enumerate() if t.name == "read-ahead"]


def test_an_empty_source():
    assert list(read_ahead(iter([]))) == []
