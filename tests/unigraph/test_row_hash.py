"""Content RowIds (unigraph.encoding.row_hash): stable, batch-independent, sensitive to every value."""
import numpy as np

from unigraph.columnar.ragged import Ragged, concat, take
from unigraph.encoding.row_hash import row_hashes


def columns(n, seed=0):
    rng = np.random.default_rng(seed)
    ids = np.array([f"node-{i}".encode() * (1 + i % 3) for i in range(n)])
    vectors = rng.normal(size=(n, 3)).astype(np.float32)
    counts = rng.integers(0, 4, size=n)
    tags = Ragged(rng.integers(-5, 5, size=int(counts.sum())), counts)
    words = np.array([bytes(rng.integers(0, 256, size=i % 5, dtype=np.uint8)) for i in range(n)],
                     dtype=object)
    return [ids, vectors, tags, words, rng.random(n) < 0.5]


def test_golden_values_pin_the_hash():
    """RowIds order parallel edges in the output: a changed hash changes output bytes."""
    ids = np.array([b"a", b"bc"])
    assert row_hashes([ids]).tolist() == [3113194366344622864, 124939695170701542]
    assert row_hashes([ids, np.array([1.5, -2.0])]).tolist() == [
        -3300407278500449209, -441129582692991878]


def test_hashes_do_not_depend_on_the_batch():
    full = columns(200)
    whole = row_hashes(full)
    parts = [row_hashes([take(c, np.arange(a, b)) if isinstance(c, Ragged) else c[a:b]
                         for c in full]) for a, b in ((0, 7), (7, 150), (150, 200))]
    assert np.concatenate(parts).tolist() == whole.tolist()
    # Ids in a wider array (NUL padding) and big-endian numbers hash the same.
    wider = [full[0].astype("S64"), full[1].astype(">f4")] + full[2:]
    assert row_hashes(wider).tolist() == whole.tolist()
    assert whole.dtype == np.int64 and len(set(whole.tolist())) == 200


def test_every_value_and_its_position_count():
    base = row_hashes([np.array([b"x"] * 4), Ragged(np.array([1, 2, 2, 1, 1, 2]), [2, 2, 1, 1])])
    assert base[0] != base[1]       # [1, 2] vs [2, 1]: order within a row counts
    assert base[2] != base[3]       # [1] vs [2]
    assert row_hashes([np.array([b"x"]), Ragged(np.array([1, 2]), [2])])[0] == base[0]
    assert row_hashes([np.array([b"ab"]), np.array([b"c"])])[0] != \
        row_hashes([np.array([b"a"]), np.array([b"bc"])])[0]
    strings = np.array([b"ab", b"a", b"", b"b"], dtype=object)
    assert len(set(row_hashes([strings]).tolist())) == 4
    nested = Ragged(Ragged(np.array([1, 2, 3]), [2, 1]), [2])  # [[1, 2], [3]]
    other = Ragged(Ragged(np.array([1, 2, 3]), [1, 2]), [2])   # [[1], [2, 3]]
    assert row_hashes([nested])[0] != row_hashes([other])[0]


def test_empty_batches_and_zero_width_values():
    empty = [np.zeros(0, "S1"), np.zeros((0, 3), np.float32), Ragged(np.zeros(0), np.zeros(0)),
             np.zeros(0, object)]
    assert row_hashes(empty).shape == (0,)
    assert len(row_hashes([np.zeros((2, 0), np.float32)])) == 2
    assert row_hashes([concat([np.array([b"a"]), np.array([b"a"])])]).tolist()[0] == \
        row_hashes([np.array([b"a"])]).tolist()[0]
