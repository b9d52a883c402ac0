"""Ids gathered from byte spans into numpy 'S' arrays (unigraph.tables.decode)."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from unigraph.errors import TableError
from unigraph.tables import decode


@settings(max_examples=80, deadline=None)
@given(st.lists(st.binary(min_size=1, max_size=20), min_size=1, max_size=30), st.booleans())
def test_ids_from_spans_match_numpy_bytes(values, padded):
    """Ids of every width up to and past the two-window path, from padded buffers (TFRecord
    chunks) and exact-size ones (Arrow's): numpy's 'S' array, or the trailing-NUL error."""
    data = np.frombuffer(b"".join(values) + (b"\0" * 8 if padded else b""), dtype=np.uint8)
    lengths = np.array([len(v) for v in values], dtype=np.int64)
    starts = np.cumsum(lengths) - lengths
    bad = [i for i, v in enumerate(values) if v.endswith(b"\0")]
    if bad:
        with pytest.raises(TableError, match=f"row {bad[0]}: column 'id': id .* ends with a NUL"):
            decode.ids_from_spans(data, starts, lengths, lambda i: f"row {i}", "id")
        return
    got = decode.ids_from_spans(data, starts, lengths, lambda i: f"row {i}", "id")
    assert got.dtype == np.dtype(f"S{max(lengths)}")
    assert got.tolist() == values
