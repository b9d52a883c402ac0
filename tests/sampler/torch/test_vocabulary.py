"""Vocabulary lookups: ids given as the batched decoder gives them (fixed-width 'S'
arrays, wider than the ids), as bytes objects, or as strings, find the same codes, by
uint64 keys and a hash table where the ids share a prefix and by the strings where not."""
import numpy as np
import pytest

pytest.importorskip("torch")

from sampler.graph_tensor.strings import Strings  # noqa: E402
from sampler.torch.vocabulary import Vocabulary, _KeyTable  # noqa: E402
from unigraph.errors import SamplerError  # noqa: E402


@pytest.mark.parametrize("ids", [
    [f"paper/{i}" for i in range(0, 3000, 7)],                  # a prefix, short tails
    [f"field_of_study/{i}" for i in range(300)],
    [f"x{i:020d}" for i in range(50)],                          # tails over 8 bytes
    ["a", "b\0c", "ab", "", "zz", "é"],                         # no common prefix
])
def test_every_form_of_ids_finds_the_same_codes(ids):
    vocabulary = Vocabulary({"n": ids})
    rng = np.random.default_rng(1)
    chosen = [ids[i] for i in rng.integers(0, len(ids), 200)]
    expected = [sorted(set(i.encode() for i in ids)).index(c.encode()) for c in chosen]
    encoded = [c.encode() for c in chosen]
    width = 8 * (max(map(len, encoded)) // 8 + 2)  # as the decoder makes them: wider
    for form in (np.array(encoded, dtype=f"S{width}"), np.array(encoded, dtype=object),
                 chosen, decoded(encoded)):
        assert vocabulary.index("n", form).tolist() == expected


def decoded(values):
    """The values as the batched decoder holds them: Strings, spans of its bytes."""
    lengths = np.array([len(v) for v in values], dtype=np.int64)
    starts = np.cumsum(lengths) - lengths
    return Strings.from_spans(np.frombuffer(b"".join(values) + bytes(8), np.uint8), starts,
                              lengths)


def test_an_unknown_id_is_named():
    vocabulary = Vocabulary({"n": [f"paper/{i}" for i in range(100)]})
    for form in (np.array([b"paper/5", b"paper/500"], dtype="S24"), [b"paper/5", b"paper/x"],
                 decoded([b"paper/5", b"paper/500"])):
        with pytest.raises(SamplerError, match=r"id 'paper/(500|x)' is not in the vocabulary"):
            vocabulary.index("n", form)


def test_the_key_table_finds_what_it_holds_and_nothing_else():
    rng = np.random.default_rng(0)
    for count in (1, 2, 17, 5000):
        keys = np.unique(rng.integers(0, 2 ** 63, count).astype(np.uint64))
        table = _KeyTable(keys)
        others = np.setdiff1d(rng.integers(0, 2 ** 63, 300).astype(np.uint64), keys)
        assert table.find(keys).tolist() == list(range(len(keys)))
        assert (table.find(others) == -1).all()
