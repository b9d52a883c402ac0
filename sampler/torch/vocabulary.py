"""Node ids (the records' `#id` strings) as the integers PyG calls `n_id`.

A `Vocabulary` gives every id of a node set a dense int64 code, 0 .. n-1, so `n_id`
can index an embedding table or a feature matrix, and maps codes back to ids
(`ids`). Two kinds:

  fixed    built from every id up front (`from_graph`: the Python API's loaded graph;
           `from_samples`: one pass over an output folder; or a mapping given):
           codes are positions in the node set's sorted ids, the same in every
           process, so DataLoader workers agree. An id it does not hold is an error.
  growing  `Vocabulary()`: an unseen id takes the next code, in the order ids are
           met. Codes depend on reading order, so one process only.

Numpy only: this module does not import torch.
"""
from __future__ import annotations

from typing import Iterable, Mapping, Optional

import numpy as np

from sampler.core.arrays import byte_keys
from sampler.features.values import as_bytes as _as_bytes
from sampler.graph_tensor.strings import Strings
from unigraph.errors import SamplerError


def _narrowest(ids: np.ndarray) -> np.ndarray:
    """An 'S' array at the width of its longest id (a decoder's arrays are wider), so
    that ids of a common prefix fit ByteKeys' 8 bytes after it."""
    if not len(ids) or ids.dtype.itemsize <= 1:
        return ids
    longest = int(np.char.str_len(ids).max())
    return ids if longest == ids.dtype.itemsize else ids.astype(f"S{max(longest, 1)}")


class Vocabulary:
    """Per node set, ids <-> dense int64 codes (module docstring). `Vocabulary()` grows;
    `Vocabulary({node_set: ids})` is fixed: it refuses node sets it does not name, unless
    `grow=True` lets those grow."""

    def __init__(self, ids: Optional[Mapping[str, Iterable]] = None, *,
                 grow: Optional[bool] = None):
        self._fixed = {name: _narrowest(np.unique(_as_bytes(
            list(values) if not isinstance(values, np.ndarray) else values)))
            for name, values in (ids or {}).items()}
        self._grow = ids is None if grow is None else grow
        self._codes: dict[str, dict[bytes, int]] = {}
        self._keys: dict = {}  # node set -> (its ids' ByteKeys, their _KeyTable), or Nones
        self._seen: dict[str, list[bytes]] = {}

    @classmethod
    def from_graph(cls, graph) -> "Vocabulary":
        """Every node of every node set a `sampler.api.Graph` samples (fixed: the codes
        are positions in `graph.node_ids(node_set)`)."""
        names = [n for n in graph.output_schema.node_sets if not n.startswith("_")]
        return cls({name: graph.node_ids(name) for name in names}, grow=False)

    @classmethod
    def from_samples(cls, folder: str) -> "Vocabulary":
        """Every id the records of a `sample` output folder hold (one pass over its
        `#id` features, local or gs://, read a chunk of records at a time by the batched
        decoder); fixed."""
        from sampler.graph_tensor.batch_codec import BatchDecoder
        from sampler.graph_tensor.codec import parse_example
        from sampler.output.batches import file_chunks
        from sampler.output.folder import open_samples
        from sampler.output.names import ID_FEATURE
        from unigraph.protos import graph_schema_pb2 as gs

        samples = open_samples(folder)
        ids_only = gs.GraphSchema()  # the schema's sets with their #id alone
        for name, node_set in samples.schema.node_sets.items():
            ids_only.node_sets[name].SetInParent()
            if ID_FEATURE in node_set.features:
                ids_only.node_sets[name].features[ID_FEATURE].CopyFrom(
                    node_set.features[ID_FEATURE])
        for name, edge_set in samples.schema.edge_sets.items():
            ids_only.edge_sets[name].source = edge_set.source
            ids_only.edge_sets[name].target = edge_set.target
        names = [n for n, p in ids_only.node_sets.items() if ID_FEATURE in p.features]
        decoder = BatchDecoder(ids_only, indices=False)
        found: dict[str, list] = {name: [] for name in names}
        for path in samples.files:
            for chunk in file_chunks(path):
                columns = decoder.columns(chunk.buffer, chunk.starts, chunk.lengths)
                if columns is not None:
                    for name in names:
                        found[name].append(np.unique(columns.values(
                            f"nodes/{name}.{ID_FEATURE}").fixed))
                    continue
                for i in range(len(chunk)):  # records laid out otherwise
                    graph = parse_example(ids_only, chunk.record(i), validate=False)
                    for name in names:
                        found[name].append(_as_bytes(graph.node_sets[name][ID_FEATURE]))
        return cls({name: np.concatenate(parts) if parts else np.zeros(0, "S1")
                    for name, parts in found.items()}, grow=False)

    @property
    def fixed(self) -> bool:
        """Whether every code is known up front (so worker processes agree on them)."""
        return not self._grow

    def node_sets(self) -> list[str]:
        return sorted(set(self._fixed) | set(self._seen))

    def size(self, node_set: str) -> int:
        """The number of codes of a node set (an embedding table's rows)."""
        if node_set in self._fixed:
            return len(self._fixed[node_set])
        return len(self._seen.get(node_set, ()))

    def index(self, node_set: str, ids) -> np.ndarray:
        """The codes of these ids (int64); a growing vocabulary adds unseen ones."""
        if isinstance(ids, Strings):  # a decoded batch's: keys read from where they lie
            codes = self._by_span_keys(node_set, ids)
            if codes is not None:
                return codes
            ids = ids.fixed
        ids = _as_bytes(ids)
        if node_set in self._fixed:
            known = self._fixed[node_set]
            codes = self._by_keys(node_set, ids)
            if codes is not None:
                return codes
            codes = np.searchsorted(known, ids)
            found = codes < len(known)
            found[found] = known[codes[found]] == ids[found]
            if not found.all():
                raise SamplerError(f"node set '{node_set}': id "
                                   f"{ids[~found][0].decode(errors='replace')!r} is not in the "
                                   f"vocabulary ({len(known):,} ids)")
            return codes.astype(np.int64)
        if not self._grow:
            raise SamplerError(f"node set '{node_set}' is not in the vocabulary (it has "
                               f"{', '.join(self.node_sets()) or 'no node set'})")
        codes = self._codes.setdefault(node_set, {})
        seen = self._seen.setdefault(node_set, [])
        out = np.empty(len(ids), np.int64)
        for i, key in enumerate(ids.tolist()):
            code = codes.get(key)
            if code is None:
                code = codes[key] = len(seen)
                seen.append(key)
            out[i] = code
        return out

    def _key_table(self, node_set: str):
        """(ByteKeys of the node set's ids or None, a _KeyTable of their words: the
        keys byte-swapped, as Strings.words_after reads them), made once."""
        if node_set not in self._keys:
            known = self._fixed[node_set]
            keys = byte_keys(known) if len(known) else None
            table = _KeyTable(keys.keys.byteswap()) if keys is not None else None
            self._keys[node_set] = keys, table
        return self._keys[node_set]

    def _by_span_keys(self, node_set: str, ids: Strings) -> Optional[np.ndarray]:
        """_by_keys of ids a decoder holds as spans (Strings.words_after), without
        making them fixed-width first; None where that does not go. The ids of a batch
        cut from a decoded chunk are looked up with the chunk's, once for all its
        batches (kept with the chunk's Strings, as long as a batch of it is)."""
        if node_set not in self._fixed:
            return None
        if ids.whole is not None and ids.lengths.ndim == 1:
            whole, start = ids.whole
            key = (self, node_set)  # the vocabulary itself: fixed sets' codes never change
            if key not in whole.memo:
                whole.memo[key] = self._codes_of_spans(node_set, whole)
            codes = whole.memo[key]
            if codes is not None:
                return codes[start:start + len(ids)].copy()  # the tensor's own
        return self._codes_of_spans(node_set, ids)

    def _codes_of_spans(self, node_set: str, ids: Strings) -> Optional[np.ndarray]:
        keys, table = self._key_table(node_set)
        found = ids.words_after(keys.prefix) if keys is not None else None
        if found is None or not len(found):
            return None
        codes = table.find(found)
        return None if codes.min() < 0 else codes

    def _by_keys(self, node_set: str, ids: np.ndarray) -> Optional[np.ndarray]:
        """`index` of a fixed node set through uint64 keys (sampler.core.arrays.ByteKeys:
        ids that share a prefix and differ in at most 8 bytes after it, as most do),
        which search several times faster than byte strings; None where they do not fit
        (then the strings are searched)."""
        keys, table = self._key_table(node_set)
        if keys is None or not len(ids):
            return None
        found = _word_keys(ids, keys.prefix)
        if found is None:
            if ids.dtype.itemsize > keys.width:  # wider: its ids all fit unless a byte
                raw = ids.view(np.uint8).reshape(len(ids), ids.dtype.itemsize)
                if raw[:, keys.width:].any():  # past the width is set
                    return None
                ids = ids.astype(f"S{keys.width}")
            found = byte_keys(ids, keys.prefix)
            if found is None:
                return None
            found = found.keys.byteswap()  # the table's words are little-endian
        codes = table.find(found)
        if codes.min() < 0:
            return None  # an id it does not hold: the strings' search says which
        return codes

    def ids(self, node_set: str, codes) -> np.ndarray:
        """The ids (bytes, an 'S' array) of these codes: `ids(set, data[set].n_id)`."""
        codes = np.asarray(codes, dtype=np.int64)
        if node_set in self._fixed:
            return self._fixed[node_set][codes]
        seen = self._seen.get(node_set, [])
        return np.array([seen[c] for c in codes.tolist()], dtype="S") if len(codes) \
            else np.zeros(0, "S1")

    def __repr__(self) -> str:
        sizes = ", ".join(f"{n}: {self.size(n):,}" for n in self.node_sets())
        return f"Vocabulary({'fixed' if self.fixed else 'growing'}; {sizes})"


class _KeyTable:
    """Distinct uint64 words -> their positions, by a hash table (open addressing, linear
    probing, at most a quarter full): a lookup is a multiplication, a shift, two gathers
    and a comparison per word, several times less than a binary search per id of a
    batch. Ids' words are not random (ASCII digits), so of a few multipliers the one that
    leaves the fewest words away from their first slot is used: most lookups end at the
    first probe, the others are probed together, up to the farthest word's distance.
    Built once per node set, read only after."""

    def __init__(self, keys: np.ndarray):
        roomy = 4 if len(keys) <= _ROOMY_KEYS else 2
        self.bits = max(4, (roomy * len(keys)).bit_length())
        size = 1 << self.bits
        self.multiplier = _multiplier(keys, self.bits)
        self.keys = np.full(size, _empty_word(keys), dtype=np.uint64)
        self.codes = np.full(size, -1, dtype=np.int64)
        pending = np.arange(len(keys), dtype=np.int64)
        home = self._slots(keys)
        slots = home.copy()
        while len(pending):  # each round: the keys whose slot is free and first to ask
            wanted = slots[pending]
            free = self.codes[wanted] < 0
            taken, first = np.unique(wanted[free], return_index=True)
            winners = pending[free][first]
            self.keys[taken], self.codes[taken] = keys[winners], winners
            placed = np.zeros(len(keys), dtype=bool)
            placed[winners] = True
            pending = pending[~placed[pending]]
            slots[pending] = (slots[pending] + 1) & (size - 1)
        farthest = int(((slots - home) & (size - 1)).max()) if len(keys) else 0
        self.steps = np.arange(1, farthest + 1, dtype=np.int64)

    def _slots(self, keys: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):  # uint64 products wrap, as intended
            return ((keys * self.multiplier) >> np.uint64(64 - self.bits)).view(np.int64)

    def find(self, keys: np.ndarray) -> np.ndarray:
        """Each key's position, -1 for a key the table does not hold."""
        slots = self._slots(keys)
        hit = self.keys[slots] == keys
        codes = self.codes[slots]
        if hit.all():  # the usual case: every word at its first slot (or an empty one: -1)
            return codes
        pending = np.flatnonzero(~hit)  # probed together, a few slots further at a time
        base, wanted, mask = slots[pending], keys[pending], len(self.keys) - 1
        for at in range(0, len(self.steps), _PROBES):
            probes = (base[:, None] + self.steps[at:at + _PROBES]) & mask
            found = self.keys[probes] == wanted[:, None]
            done = found.any(axis=1)
            which = found[done].argmax(axis=1)  # the first probe that holds the word
            codes[pending[done]] = self.codes[probes[done, which]]
            pending, base, wanted = pending[~done], base[~done], wanted[~done]
            if not len(pending):
                break
        codes[pending] = -1
        return codes


_ROOMY_KEYS = 1 << 20  # node sets up to this many ids get a table 4 times as large
_MULTIPLIERS = 8       # multipliers tried per table
_PROBES = 8            # further slots probed at once for the words not at their first


def _multiplier(keys: np.ndarray, bits: int) -> np.uint64:
    """Of Fibonacci hashing's multiplier and a few other odd ones (fixed, so every
    process builds the same table), the one whose first slots collide least."""
    candidates = [_GOLDEN] + [m | np.uint64(1) for m in np.random.default_rng(
        0x5A17).integers(1 << 62, 1 << 63, _MULTIPLIERS - 1, dtype=np.uint64)]
    best, fewest = _GOLDEN, None
    for multiplier in candidates if len(keys) > 1 else candidates[:1]:
        with np.errstate(over="ignore"):
            slots = ((keys * multiplier) >> np.uint64(64 - bits)).view(np.int64)
        collisions = len(keys) - np.count_nonzero(np.bincount(slots, minlength=1 << bits))
        if fewest is None or collisions < fewest:
            best, fewest = multiplier, collisions
        if collisions == 0:
            break
    return best


def _empty_word(keys: np.ndarray) -> np.uint64:
    """A word that is no key (empty slots hold it, with code -1)."""
    if not (keys == 0).any():
        return np.uint64(0)
    return np.setdiff1d(np.arange(len(keys) + 1, dtype=np.uint64), keys)[0]


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)  # Fibonacci hashing's multiplier


def _word_keys(ids: np.ndarray, prefix: bytes) -> Optional[np.ndarray]:
    """The _KeyTable words of 'S' ids whose width is a multiple of 8 (the batched
    decoder's): the 8 bytes after the prefix, NUL-padded, little-endian (ByteKeys' keys,
    sampler.core.arrays.byte_keys, byte-swapped); None unless every id has the prefix
    and at most 8 bytes after it."""
    width = ids.dtype.itemsize
    if width % 8 or not ids.flags.c_contiguous or len(prefix) + 8 > width + 8:
        return None
    words = ids.view("<u8").reshape(len(ids), width // 8)
    whole, part = divmod(len(prefix), 8)
    padded = prefix + bytes(8 * (whole + 1) - len(prefix))
    expected = np.frombuffer(padded, "<u8")
    for k in range(whole):
        if not (words[:, k] == expected[k]).all():
            return None
    shift = np.uint64(8 * part)
    tail = words[:, whole] >> shift if part else words[:, whole].copy()
    if part:
        mask = np.uint64((1 << (8 * part)) - 1)
        if not ((words[:, whole] & mask) == expected[whole]).all():
            return None
        if whole + 1 < words.shape[1]:
            tail |= words[:, whole + 1] << np.uint64(64 - 8 * part)
            if (words[:, whole + 1] >> shift).any():
                return None  # more than 8 bytes after the prefix
    start = whole + 2 if part else whole + 1
    if start < words.shape[1] and words[:, start:].any():
        return None
    return tail


def integer_ids(ids) -> Optional[np.ndarray]:
    """The ids as int64 when every one is a canonical decimal integer ('12', '-3'; not
    '012' or '+3', which would not read back as the same id), else None."""
    array = _as_bytes(ids)
    if not len(array):
        return np.zeros(0, np.int64)
    try:
        values = array.astype(np.int64)
    except (ValueError, OverflowError):
        return None
    return values if np.array_equal(values.astype("S"), array) else None
