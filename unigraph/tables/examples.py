"""tf.train.Example records of a table, parsed a whole chunk at a time.

A chunk whose records are all laid out like its first (the same features in
the same order, as every writer writes them) is read by example_layout: a few
array operations per feature. Any other is parsed here, the general way.

Every record of a chunk is parsed at once, one protobuf level at a time: the
k-th map entry of every record in one set of array operations (so the loops
run over entries per record and values per list, never over records), every
length and tag read through unigraph.encoding.wire's 8-byte windows. What comes out
is, per wanted column, where its values sit in the chunk's buffer (bytes) or
the decoded numbers, plus the value count of every record.

This path covers what TensorFlow, TF-GNN and our writers produce: map entries
in any order, key before value, packed float and int64 lists, empty lists,
features with no kind set. Anything else a valid protobuf may hold (unknown
fields, unpacked numbers, a key given twice, a float feature stored as
int64_list) and anything malformed or missing makes `parse_chunk` return
None: the caller then decodes that chunk record by record with the protobuf
library, which reads every valid encoding and names the exact record and
problem. So this module never raises for input; it only declines.

Data shapes:
  Roles   name -> KEY (one bytes or int64 value per record), WEIGHT (one float),
          or the kind a feature's values must have (BYTES, FLOAT, INT64)
  Parsed  name -> Values(counts, numbers) or Values(counts, starts, lengths)
"""
from __future__ import annotations

import dataclasses

import numpy as np

from unigraph.tables import example_layout
from unigraph.encoding.wire import (TAG_BYTES_LIST, TAG_FIELD_1, TAG_FIELD_2, TAG_FLOAT_LIST,
                                    TAG_INT64_LIST, byte_at, decode_varint_spans, gather_rows,
                                    gather_spans, read_varints, windows)

KEY, WEIGHT = "key", "weight"
BYTES, FLOAT, INT64 = "bytes_list", "float_list", "int64_list"
_KIND_OF_TAG = {TAG_BYTES_LIST: BYTES, TAG_FLOAT_LIST: FLOAT, TAG_INT64_LIST: INT64}


class _Unusual(Exception):
    """Something the vectorized path does not handle: decode the chunk record by record."""


@dataclasses.dataclass
class Values:
    """One column over a chunk's records."""

    counts: np.ndarray                 # int64: values in each record
    numbers: np.ndarray | None = None  # float32 or int64 values, flat (numeric kinds)
    starts: np.ndarray | None = None   # bytes values: offset of each in the buffer
    lengths: np.ndarray | None = None  # bytes values: length of each


def parse_chunk(buffer: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
                roles: dict[str, str], memo: dict | None = None) -> dict[str, Values] | None:
    """The columns `roles` names, from the Examples at buffer[starts[i]:+lengths[i]].

    `buffer` is padded (unigraph.encoding.wire.WINDOW_BYTES zero bytes after the data).
    Returns None when any record needs the exact record-by-record path.
    `memo`, a dict kept by the caller across the chunks of one file, keeps the
    records' layout (example_layout) from one chunk to the next.
    """
    try:
        words = windows(buffer)
        if len(starts):
            parsed = _parse_alike(buffer, words, starts, lengths, roles,
                                  {} if memo is None else memo)
            if parsed is not None:
                return parsed
        spans = _entries(buffer, words, starts, starts + lengths, list(roles))
        return {name: _column(buffer, words, *spans[name], role)
                for name, role in roles.items()}
    except _Unusual:
        return None


_TAGS_OF_ROLE = {KEY: (TAG_BYTES_LIST, TAG_INT64_LIST), WEIGHT: (TAG_FLOAT_LIST,),
                 FLOAT: (TAG_FLOAT_LIST,), INT64: (TAG_INT64_LIST,), BYTES: (TAG_BYTES_LIST,)}


def _parse_alike(buffer: np.ndarray, words: np.ndarray, starts: np.ndarray,
                 lengths: np.ndarray, roles: dict[str, str],
                 memo: dict) -> dict[str, Values] | None:
    """parse_chunk for records laid out like the first one (example_layout), else None.

    The layout of the chunk before is tried first; a new one is read from this
    chunk's first record only when that does not fit.
    """
    layout = memo.get("layout")
    found = (None if layout is None
             else example_layout.read_entries(buffer, words, starts, lengths, layout))
    if found is None:
        first = int(starts[0])
        layout = example_layout.layout_of(
            buffer[first:first + int(lengths[0])].tobytes(),
            {name: _TAGS_OF_ROLE[role] for name, role in roles.items()})
        if layout is None or layout == memo.get("layout"):
            return None
        memo["layout"] = layout
        found = example_layout.read_entries(buffer, words, starts, lengths, layout)
        if found is None:
            return None
    result = {}
    for name, role in roles.items():
        tag, begin, length = found[name]
        if tag == TAG_BYTES_LIST:  # one value per record (the layout says so)
            values = Values(np.ones(len(begin), dtype=np.int64), starts=begin, lengths=length)
        elif tag == TAG_FLOAT_LIST:
            values = _floats(buffer, begin, length)
        else:
            values = _int64s(buffer, begin, length)
        if role in (KEY, WEIGHT):
            _require(values.counts == 1)
        result[name] = values
    return result


def _require(condition) -> None:
    if not np.all(condition):
        raise _Unusual


_SHIFT_HEADER = np.uint64(16)
_SHIFT_BYTE = np.uint64(8)
_LOW_7 = np.uint64(0x7F)
_TAG_AND_MORE = np.uint64(0x80FF)


def _field(words: np.ndarray, at: np.ndarray, tag: int,
           word: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(payload start, payload end, window at the payload) of the field with `tag` at `at`.

    `word`, if given, holds the bytes at `at` (a window left over from reading
    the field before). When every length fits one byte (the usual case for
    table rows) the header is two bytes and the window shifted past it is
    returned, so nested headers come out of one gather; else the third item
    is None and the next field is read from `words` again.
    """
    word = words[at] if word is None else word
    # The tag, and no "more bytes" bit in the length's first byte: one compare.
    if (word & _TAG_AND_MORE == np.uint64(tag)).all():  # one-byte lengths
        begin = at + 2
        length = ((word >> _SHIFT_BYTE) & _LOW_7).astype(np.int64)
        return begin, begin + length, word >> _SHIFT_HEADER
    _require(byte_at(word) == tag)
    # A left-over window holds only a few valid bytes: read the longer lengths afresh.
    length, size, ok = read_varints(words[at] >> np.uint64(8))
    _require(ok)
    begin = at + 1 + size
    return begin, begin + length, None


def _entries(buffer: np.ndarray, words: np.ndarray, starts: np.ndarray, ends: np.ndarray,
             names: list[str]) -> dict[str, tuple]:
    """name -> (start, end, window or None) of each record's serialized Feature for that key."""
    n = len(starts)
    _require(ends > starts)  # an empty record has no features at all
    begin, end, _ = _field(words, starts, TAG_FIELD_1)  # Example.features
    _require(end == ends)
    keys = {name: np.frombuffer(name.encode("utf-8"), dtype=np.uint8) for name in names}
    found: dict[str, list] = {name: [] for name in names}
    active = np.flatnonzero(begin < end)  # records with at least one map entry
    cursor = begin[active]
    while len(active):
        entry_begin, entry_end, rest = _field(words, cursor, TAG_FIELD_1)  # Features.feature
        _require(entry_end <= ends[active])
        _require(entry_begin < entry_end)
        # key first, then value (what every writer does; the other order: exact path)
        key_begin, key_end, _ = _field(words, entry_begin, TAG_FIELD_1, rest)
        _require(key_end < entry_end)
        value_begin, value_end, rest = _field(words, key_end, TAG_FIELD_2)
        _require(value_end == entry_end)
        for name, chosen in _match_keys(buffer, words, key_begin, key_end - key_begin,
                                        keys).items():
            found[name].append((active[chosen], value_begin[chosen], value_end[chosen],
                                None if rest is None else rest[chosen]))
        more = entry_end < ends[active]
        active, cursor = active[more], entry_end[more]
    result = {}
    for name in names:
        parts = found[name]
        _require(len(parts) > 0)
        if len(parts) == 1:
            records, begin, end, rest = parts[0]
        else:
            records, begin, end = (np.concatenate([p[k] for p in parts]) for k in range(3))
            rest = (None if any(p[3] is None for p in parts)
                    else np.concatenate([p[3] for p in parts]))
        _require(len(records) == n)  # missing or repeated keys: the exact path says which
        if len(parts) > 1:
            order = np.argsort(records, kind="stable")
            records, begin, end = records[order], begin[order], end[order]
            rest = None if rest is None else rest[order]
            _require(records == np.arange(n))
        result[name] = (begin, end, rest)
    return result


def _match_keys(buffer: np.ndarray, words: np.ndarray, key_begin: np.ndarray,
                key_length: np.ndarray, keys: dict[str, np.ndarray]) -> dict:
    """name -> which of these entries (a slice or positions) have that name as key."""
    first = int(key_length[0])
    if (key_length == first).all() and _same_bytes(words, key_begin, first):
        # The usual case: the k-th entry has the same key in every record.
        start = int(key_begin[0])
        text = buffer[start:start + first].tobytes()
        return {name: slice(None) for name, key in keys.items() if key.tobytes() == text}
    result = {}
    for name, key in keys.items():
        chosen = np.flatnonzero(key_length == len(key))
        if len(chosen):
            chosen = chosen[_equals(words, key_begin[chosen], key)]
        if len(chosen):
            result[name] = chosen
    return result


def _block_masks(length: int) -> list[tuple[int, np.uint64]]:
    """(offset, mask) of each 8-byte block of a `length`-byte string."""
    blocks = []
    for offset in range(0, length, 8):
        width = min(8, length - offset)
        blocks.append((offset, np.uint64((1 << (8 * width)) - 1)))
    return blocks


def _same_bytes(words: np.ndarray, begin: np.ndarray, length: int) -> bool:
    """Whether the `length` bytes at every position equal those at the first."""
    for offset, mask in _block_masks(length):
        block = words[begin + offset] & mask
        if not (block == block[0]).all():
            return False
    return True


def _equals(words: np.ndarray, begin: np.ndarray, key: np.ndarray) -> np.ndarray:
    padded = np.zeros(len(key) + 8, dtype=np.uint8)
    padded[:len(key)] = key
    same = np.ones(len(begin), dtype=bool)
    for offset, mask in _block_masks(len(key)):
        expected = padded[offset:offset + 8].view("<u8")[0] & mask
        same &= (words[begin + offset] & mask) == expected
    return same


def _column(buffer: np.ndarray, words: np.ndarray, begin: np.ndarray, end: np.ndarray,
            window: np.ndarray | None, role: str) -> Values:
    """One column's values from each record's serialized Feature at buffer[begin:end]."""
    n = len(begin)
    kinds = np.zeros(n, dtype=np.int64)  # the tag of the list set, 0 for an empty Feature
    list_begin, list_end = begin.copy(), begin.copy()
    rest = None
    if (end > begin).all():  # the usual case: every Feature has its list set
        word = words[begin] if window is None else window
        tags = byte_at(word)
        _require(np.isin(tags, list(_KIND_OF_TAG)))
        kinds = tags
        list_begin, list_end, rest = _field(words, begin, int(tags[0]), word) if (
            tags == tags[0]).all() else _any_list(words, begin, word)
        _require(list_end == end)  # one list, nothing after it
    else:
        has_list = np.flatnonzero(end > begin)
        if len(has_list):
            word = words[begin[has_list]]
            tags = byte_at(word)
            _require(np.isin(tags, list(_KIND_OF_TAG)))
            kinds[has_list] = tags
            b, e, _ = _any_list(words, begin[has_list], word)
            list_begin[has_list], list_end[has_list] = b, e
            _require(list_end[has_list] == end[has_list])
    nonempty = list_end > list_begin
    if role == KEY:
        _require(nonempty)
        if (kinds == TAG_INT64_LIST).all():
            values = _packed_int64(buffer, words, list_begin, list_end, rest)
            _require(values.counts == 1)
            return values
        _require(kinds == TAG_BYTES_LIST)
        values = _bytes(words, list_begin, list_end, rest)
        _require(values.counts == 1)
        return values
    wanted = {WEIGHT: TAG_FLOAT_LIST, FLOAT: TAG_FLOAT_LIST, INT64: TAG_INT64_LIST,
              BYTES: TAG_BYTES_LIST}[role]
    _require((kinds == wanted) | ~nonempty)  # another kind holding values: the exact path
    if wanted == TAG_BYTES_LIST:
        return _bytes(words, list_begin, list_end, rest)
    if wanted == TAG_INT64_LIST:
        return _packed_int64(buffer, words, list_begin, list_end, rest)
    values = _packed_float(buffer, words, list_begin, list_end, rest)
    if role == WEIGHT:
        _require(values.counts == 1)
    return values


def _any_list(words: np.ndarray, at: np.ndarray, word: np.ndarray):
    """_field for a Feature whose list kind differs between records."""
    length, size, ok = read_varints(word >> np.uint64(8))
    _require(ok)
    begin = at + 1 + size
    return begin, begin + length, None


def _packed(words: np.ndarray, list_begin: np.ndarray, list_end: np.ndarray,
            window: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """(start, length) of each list's packed payload; (x, 0) for an empty list."""
    if len(list_begin) and (list_end > list_begin).all():
        begin, end, _ = _field(words, list_begin, TAG_FIELD_1, window)
        _require(end == list_end)  # one packed run (unpacked values: exact path)
        return begin, end - begin
    start, length = list_begin.copy(), np.zeros(len(list_begin), dtype=np.int64)
    nonempty = np.flatnonzero(list_end > list_begin)
    if len(nonempty):
        begin, end, _ = _field(words, list_begin[nonempty], TAG_FIELD_1)
        _require(end == list_end[nonempty])
        start[nonempty], length[nonempty] = begin, end - begin
    return start, length


def _packed_float(buffer: np.ndarray, words: np.ndarray, list_begin: np.ndarray,
                  list_end: np.ndarray, window: np.ndarray | None) -> Values:
    return _floats(buffer, *_packed(words, list_begin, list_end, window))


def _floats(buffer: np.ndarray, start: np.ndarray, length: np.ndarray) -> Values:
    """Packed float32 payloads at buffer[start:+length] of every record."""
    _require(length % 4 == 0)
    counts = length // 4
    if len(counts) and (counts == counts[0]).all():  # fixed length: one row per record
        rows = gather_rows(buffer, start, int(length[0]))
        numbers = rows.view("<f4").reshape(-1)
    else:
        data, _ = gather_spans(buffer, start, length)
        numbers = data.view("<f4")
    return Values(counts, numbers=numbers.astype(np.float32, copy=False))


def _packed_int64(buffer: np.ndarray, words: np.ndarray, list_begin: np.ndarray,
                  list_end: np.ndarray, window: np.ndarray | None) -> Values:
    return _int64s(buffer, *_packed(words, list_begin, list_end, window))


def _int64s(buffer: np.ndarray, start: np.ndarray, length: np.ndarray) -> Values:
    """Packed int64 varint payloads at buffer[start:+length] of every record."""
    data, offsets = gather_spans(buffer, start, length)
    try:  # a varint running into the next record, or longer than 10 bytes: the exact
        numbers, counts = decode_varint_spans(data, offsets, "int64_list")
    except ValueError:  # path names the record
        raise _Unusual from None
    return Values(counts, numbers=numbers)


def _bytes(words: np.ndarray, list_begin: np.ndarray, list_end: np.ndarray,
           window: np.ndarray | None) -> Values:
    """Each BytesList's values: where every value sits, records in order."""
    n = len(list_begin)
    counts = np.zeros(n, dtype=np.int64)
    records, starts, lengths = [], [], []
    active = np.flatnonzero(list_end > list_begin)
    cursor = list_begin[active]
    word = window[active] if window is not None else None
    while len(active):
        begin, end, _ = _field(words, cursor, TAG_FIELD_1, word)
        word = None
        _require(end <= list_end[active])
        records.append(active)
        starts.append(begin)
        lengths.append(end - begin)
        counts[active] += 1
        more = end < list_end[active]
        active, cursor = active[more], end[more]
    if not records:
        empty = np.zeros(0, dtype=np.int64)
        return Values(counts, starts=empty, lengths=empty)
    if len(records) == 1:
        return Values(counts, starts=starts[0], lengths=lengths[0])
    order = np.argsort(np.concatenate(records), kind="stable")  # record order, then value order
    return Values(counts, starts=np.concatenate(starts)[order],
                  lengths=np.concatenate(lengths)[order])
