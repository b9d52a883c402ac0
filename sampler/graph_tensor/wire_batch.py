"""Where the wanted features' data sit in many tf.train.Example records, found at once.

`wire.feature_spans` and `wire.list_payload` find a key's data in one record, walking
it in Python. For a batch of records laid out alike (the same keys in the same order
as the first record: what every writer of GraphTensor records produces, ours in sorted
key order) this finds them for all records together: records then differ only in the
lengths of what they hold and in which lists are empty, so

  1. the map entries are walked entry by entry for every record at once (a gather and
     a table lookup per entry: only the lengths that lead from one entry to the next);
  2. everything else is checked in bulk over [entries, records]: each entry's tag and
     key bytes (8 at a time), that key and Feature fill the entry, that a wanted
     Feature holds at most one list, of its kind, its numbers packed in one run.

The result is, per wanted key and record, where its list's data start and how long
they are: packed float32s or varints, or a bytes_list's items (`0x0A len bytes`,
`unigraph.encoding.wire.bytes_list_items` reads them). An empty or absent list is 0
bytes. A record laid out otherwise (another key order, a key missing or repeated,
unpacked numbers, a length field over 4 bytes, an unknown field, another kind of list)
is not `alike`: the caller decodes it the exact way (`codec.parse_example`), which
reads any valid encoding and names what is wrong. Nothing here raises for input.

Data shapes:
  buffer   uint8: the records at starts[i]:+lengths[i], then at least WINDOW_BYTES more
           (a tfrecord.RecordChunk's buffer, or unigraph.encoding.wire.padded)
  Spans    alike [records] bool; per wanted key: begin, length [records] int64
"""
from __future__ import annotations

import dataclasses
from typing import Mapping, Optional

import numpy as np

from sampler.graph_tensor import wire
from unigraph.errors import GraphTensorError
from unigraph.encoding.wire import (TAG_BYTES_LIST, TAG_FIELD_1, TAG_FIELD_2, TAG_FLOAT_LIST,
                                    TAG_INT64_LIST, read_varints, windows)

LIST_TAGS = {wire.BYTES: TAG_BYTES_LIST, wire.FLOAT: TAG_FLOAT_LIST, wire.INT64: TAG_INT64_LIST}
_BLOCK = 8  # key bytes compared at once (one window)


@dataclasses.dataclass(frozen=True)
class Layout:
    """The map entries of a record, in the order written: each one's key and the bytes
    from the entry's length to its Feature's length (key tag, key, value tag)."""

    keys: tuple[str, ...]
    prefixes: tuple[bytes, ...]


def layout_of(record: bytes) -> Optional[Layout]:
    """The layout of one record, or None when it is not one the batch walk reads (an
    entry without a value, the value before the key, a key twice, another field)."""
    try:
        entries = wire.canonical_entries(record)
    except GraphTensorError:  # malformed: the exact path says how
        return None
    if entries is None or not entries:
        return None
    keys = tuple(key for key, _ in entries)
    if len(set(keys)) != len(keys) or any(start == end for _, (start, end) in entries):
        return None
    prefixes = []
    for key in keys:
        raw = key.encode("utf-8")
        prefixes.append(bytes([TAG_FIELD_1]) + wire.varint(len(raw)) + raw
                        + bytes([TAG_FIELD_2]))
    return Layout(keys, tuple(prefixes))


@dataclasses.dataclass
class Spans:
    alike: np.ndarray                 # bool per record: laid out as the layout says
    begin: np.ndarray                 # [wanted, records]: where each list's data start
    length: np.ndarray                # and their bytes (0: an empty or absent list)
    reason: Optional[str] = None      # why some record is not alike (the first check failing)


_ADVANCE: Optional[np.ndarray] = None


def _advance_table() -> np.ndarray:
    """For the two bytes after an entry's tag: the entry's bytes (tag, length and what it
    counts) when its length takes one or two bytes, else -1."""
    global _ADVANCE
    if _ADVANCE is None:
        pair = np.arange(1 << 16, dtype=np.int64)
        low, high = pair & 0xFF, pair >> 8
        table = np.where(low < 0x80, 2 + low, 3 + ((low & 0x7F) | (high << 7)))
        _ADVANCE = np.where((low >= 0x80) & (high >= 0x80), -1, table)
    return _ADVANCE


_KEYS_DIFFER = "map entries in another order or of other keys than the first record's"


class Walk:
    """How to find the `wanted` keys' list data (key -> wire kind, in the order the
    spans are returned) in records of one layout; made once, used for every batch."""

    def __init__(self, layout: Layout, wanted: Mapping[str, str]):
        self.layout = layout
        self.wanted = list(wanted)
        rows = {key: row for row, key in enumerate(layout.keys)}
        # A key the layout lacks: no record is alike (`spans` is not to be called).
        self.missing = next((key for key in wanted if key not in rows), None)
        if self.missing is not None:
            return
        prefixes = layout.prefixes
        blocks = -(-max(len(p) for p in prefixes) // _BLOCK)
        self.expected = np.zeros((len(prefixes), 1, blocks), dtype=np.uint64)
        self.masks = np.zeros((len(prefixes), 1, blocks), dtype=np.uint64)
        for row, prefix in enumerate(prefixes):
            room = blocks * _BLOCK - len(prefix)
            self.expected[row, 0] = np.frombuffer(prefix + bytes(room), dtype="<u8")
            self.masks[row, 0] = np.frombuffer(bytes([0xFF] * len(prefix)) + bytes(room),
                                               dtype="<u8")
        self.block_offsets = np.arange(0, blocks * _BLOCK, _BLOCK)
        self.prefix_lengths = np.array([len(p) for p in prefixes], dtype=np.int64)[:, None]
        self.chosen = np.array([rows[key] for key in wanted], dtype=np.int64)
        kinds = [wanted[key] for key in wanted]
        self.tags = np.array([LIST_TAGS[kind] for kind in kinds], dtype=np.uint64)[:, None]
        self.numeric = np.flatnonzero([kind != wire.BYTES for kind in kinds])
        self.floats = np.flatnonzero([kinds[row] == wire.FLOAT for row in self.numeric])

    def spans(self, buffer: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> Spans:
        """Where every wanted key's list data sit in every record (module docstring)."""
        n, count = len(starts), len(self.layout.keys)
        words = windows(buffer)
        limit = len(words) - 1
        ends = starts + lengths
        # Example.features: its tag, then the length of the rest of the record.
        head = words[np.minimum(starts, limit)]
        rest, size, ok = read_varints(head >> np.uint64(8))
        checks = [("a record that is not one Features message",
                   ((head & np.uint64(0xFF)) == TAG_FIELD_1) & ok
                   & (rest == lengths - 1 - size))]
        # The chain of entries, one entry of every record at a time: only the lengths
        # that lead from each entry to the next (the two bytes after its tag, looked up).
        entry_starts = np.empty((count + 1, n), dtype=np.int64)
        entry_starts[0] = np.minimum(starts + 1 + size, ends)
        table = _advance_table()
        for row in range(count):
            cursor = entry_starts[row]
            after_tag = words[np.minimum(cursor + 1, limit)]
            step = table[after_tag.view(np.uint16)[::4]]  # its first two bytes
            if step.min() < 0:  # lengths of three bytes or more
                long = np.flatnonzero(step < 0)
                value, size, ok = read_varints(after_tag[long])
                step[long] = np.where(ok, 1 + size + value, ends[long] - cursor[long] + 1)
            np.minimum(cursor + step, ends, out=entry_starts[row + 1])  # overruns: below
        # The entries in bulk: tag, length, and that each ends where the next starts.
        flat_words = words[entry_starts[:count].reshape(-1)]
        value, size, ok = read_varints(flat_words >> np.uint64(8))
        bodies = (entry_starts[:count].reshape(-1) + 1 + size).reshape(count, n)
        entry_ends = bodies + value.reshape(count, n)
        checks.append((_KEYS_DIFFER, ((flat_words & np.uint64(0xFF)) == TAG_FIELD_1
                                      ).reshape(count, n) & ok.reshape(count, n)
                       & (entry_ends == entry_starts[1:])))
        checks.append(("more bytes after the last map entry", entry_starts[count] == ends))
        # Each entry's key: `0x0A len key 0x12` compared 8 bytes at a time, and at least
        # one byte after it (the Feature's length).
        at = np.minimum(bodies[:, :, None] + self.block_offsets, limit)
        checks.append((_KEYS_DIFFER, ((words[at] & self.masks) == self.expected).all(axis=2)
                       & (bodies + self.prefix_lengths < entry_ends)))
        begin = np.zeros((0, n), np.int64)
        length = begin
        if self.wanted:
            begin, length, more = self._lists(words, bodies[self.chosen]
                                              + self.prefix_lengths[self.chosen],
                                              entry_ends[self.chosen], limit)
            checks += more
        spans = Spans(np.ones(n, dtype=bool), begin, length)
        for reason, passed in checks:
            passed = passed if passed.ndim == 1 else passed.all(axis=0)
            if spans.reason is None and not passed.all():
                spans.reason = reason
            spans.alike &= passed
        return spans

    def _lists(self, words: np.ndarray, at: np.ndarray, entry_ends: np.ndarray, limit: int):
        """(begin, length, checks) of the list data of the wanted entries, whose Feature's
        length is at `at` ([wanted, records]): the Feature fills the rest of its entry and
        holds no list (0 bytes) or one list of the key's kind filling it, numbers packed
        in one run."""
        size_of, bytes_of, ok = _varints(words[np.minimum(at, limit)])
        feature = at + bytes_of
        checks = [("a Feature that does not fill its map entry",
                   ok & (feature + size_of == entry_ends))]
        has_list = size_of > 0
        word = words[np.minimum(feature, limit)]
        list_size, bytes_of, ok = _varints(word >> np.uint64(8))
        data = feature + 1 + bytes_of
        checks.append(("a list of another kind than the schema's dtype, or more than one",
                       ~has_list | (((word & np.uint64(0xFF)) == self.tags) & ok
                                    & (data + list_size == entry_ends))))
        begin = np.where(has_list, data, feature)
        length = np.where(has_list, list_size, 0)
        rows = self.numeric
        if len(rows):
            # float_list and int64_list: one packed run (field 1, length-delimited).
            filled = has_list[rows] & (list_size[rows] > 0)
            word = words[np.minimum(data[rows], limit)]
            packed, bytes_of, ok = _varints(word >> np.uint64(8))
            run = data[rows] + 1 + bytes_of
            checks.append(("numbers not packed in one run", ~filled | (
                ((word & np.uint64(0xFF)) == TAG_FIELD_1) & ok
                & (run + packed == entry_ends[rows]))))
            begin[rows] = np.where(filled, run, begin[rows])
            length[rows] = np.where(filled, packed, 0)
            if len(self.floats):
                checks.append(("a float_list of a length not a multiple of 4",
                               length[rows[self.floats]] % 4 == 0))
        return begin, length, checks


def _varints(words: np.ndarray):
    """read_varints for a 2-D array of windows."""
    value, size, ok = read_varints(words.reshape(-1))
    return value.reshape(words.shape), size.reshape(words.shape), ok.reshape(words.shape)
