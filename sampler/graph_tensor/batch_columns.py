"""The values of many records' keys, as the records hold them (the batched decoder's
second step: wire_batch.py found where each key's data sit).

`Columns(buffer, spans, wanted, n)`: per wanted key, every record's values one after the
other (`values(key)`: int64 or float32 arrays, or Strings) and how many each record has
(`counts(key)`). All int64 lists of the batch are one varint run (keys that hold one
varint in every record, the `#size`s, are read in place instead), float lists are copied
once, and the strings of all string keys are found in one pass. Nothing of
`parse_example`'s rules is checked here: batch_codec.py checks them, sample-stats reads
the columns as they are.
"""
from __future__ import annotations

import numpy as np

from sampler.graph_tensor import wire, wire_batch
from sampler.graph_tensor.example_batch import Strings
from unigraph.encoding.bytes_lists import bytes_list_items
from unigraph.encoding.wire import decode_varint_spans, gather_spans, read_varints, windows
from unigraph.errors import GraphTensorError


class Unusual(Exception):
    """Records laid out so that the batch takes the exact path (the message says why)."""


class Invalid(Exception):
    """A record breaks a rule: the exact path names it."""


class Columns:
    """The wanted keys' values over a batch, as the records hold them: `values(key)` all
    records' values one after the other (int64 or float32 arrays, or Strings), and
    `counts(key)` how many each record has. Every int64 list is decoded in one run,
    floats copied once, strings found in one pass."""

    def __init__(self, buffer: np.ndarray, spans: wire_batch.Spans, wanted: dict, n: int):
        self._values: dict[str, object] = {}
        self._counts: dict[str, np.ndarray] = {}
        keys = list(wanted)
        kinds = [wanted[key] for key in keys]
        row = 0
        for kind in (wire.INT64, wire.FLOAT, wire.BYTES):
            stop = row + kinds.count(kind)
            if stop > row:
                self._read(buffer, spans.begin[row:stop].reshape(-1),
                           spans.length[row:stop].reshape(-1), keys[row:stop], kind, n)
            row = stop

    def _read(self, buffer, begin, length, keys: list[str], kind: str, n: int) -> None:
        if kind == wire.INT64:
            begin, length, keys = self._single_varints(buffer, begin, length, keys, n)
            if not keys:
                return
        data, offsets = gather_spans(buffer, begin, length)
        if kind == wire.INT64:
            try:
                values, counts = decode_varint_spans(data, offsets, "int64_list")
            except GraphTensorError:
                raise Invalid from None
        elif kind == wire.FLOAT:
            values, counts = data.view("<f4"), length // 4
        else:
            found = bytes_list_items(data, offsets)
            if found is None:
                raise Unusual("a bytes_list whose items are not all `1: bytes`")
            item_starts, item_lengths, counts = found
            widest = int(item_lengths.max()) if len(item_lengths) else 0
            values = (item_starts, item_lengths,  # room for the widest after any start
                      np.concatenate([data, np.zeros(widest + 16, dtype=np.uint8)]))
        counts = counts.reshape(len(keys), n)
        totals = np.zeros(len(keys) + 1, dtype=np.int64)
        np.cumsum(counts.sum(axis=1), out=totals[1:])
        for i, key in enumerate(keys):
            a, b = int(totals[i]), int(totals[i + 1])
            self._counts[key] = counts[i]
            if kind == wire.BYTES:
                item_starts, item_lengths, data = values
                self._values[key] = Strings.from_spans(data, item_starts[a:b],
                                                       item_lengths[a:b])
            else:
                self._values[key] = values[a:b]

    def _single_varints(self, buffer, begin, length, keys: list[str], n: int):
        """Keys that hold one varint in every record (a record's #size, usually) read in
        place, a window each, rather than copied; (begin, length, keys) of the others."""
        rows = length.reshape(len(keys), n)
        short = np.flatnonzero(((rows >= 1) & (rows <= 4)).all(axis=1))
        if not len(short):
            return begin, length, keys
        at = begin.reshape(len(keys), n)[short].reshape(-1)
        value, size, ok = read_varints(windows(buffer)[at])
        single = (ok & (size == rows[short].reshape(-1))).reshape(len(short), n).all(axis=1)
        value = value.reshape(len(short), n)
        done = set()
        for i, (row, one) in enumerate(zip(short.tolist(), single.tolist())):
            if one:
                self._values[keys[row]] = value[i]
                self._counts[keys[row]] = np.ones(n, dtype=np.int64)
                done.add(row)
        if not done:
            return begin, length, keys
        rest = [row for row in range(len(keys)) if row not in done]
        pick = np.array(rest, dtype=np.int64)
        return (begin.reshape(len(keys), n)[pick].reshape(-1),
                length.reshape(len(keys), n)[pick].reshape(-1), [keys[row] for row in rest])

    @classmethod
    def one_by_one(cls, records: list[bytes], wanted: dict) -> "Columns":
        """The same columns, each record walked on its own (wire.split_example: any key
        order and encoding); a missing key holds nothing. GraphTensorError names the
        record and key of a list of another kind than wanted, or one that does not
        decode."""
        columns = cls.__new__(cls)
        columns._values, columns._counts = {}, {}
        found = {key: [] for key in wanted}
        for i, record in enumerate(records):
            try:
                raw = wire.split_example(record)
                for key, kind in wanted.items():
                    values = []
                    if key in raw:
                        got, values = wire.decode_feature(raw[key], key)
                        if got is not None and got != kind:
                            raise GraphTensorError(f"tf.Example key '{key}': expected {kind}, "
                                                   f"found {got}")
                    found[key].append(values)
            except GraphTensorError as e:
                raise GraphTensorError(f"record {i}: {e}") from None
        for key, kind in wanted.items():
            parts = found[key]
            columns._counts[key] = np.fromiter(map(len, parts), np.int64, len(parts))
            if kind == wire.BYTES:
                objects = np.empty(int(columns._counts[key].sum()), dtype=object)
                objects[:] = [item for part in parts for item in part]
                columns._values[key] = Strings.from_objects(objects)
            else:
                dtype = np.float32 if kind == wire.FLOAT else np.int64
                columns._values[key] = (np.concatenate([np.asarray(p, dtype) for p in parts])
                                        if parts else np.zeros(0, dtype))
        return columns

    def __contains__(self, key: str) -> bool:
        return key in self._values

    def values(self, key: str):
        return self._values[key]

    def counts(self, key: str) -> np.ndarray:
        return self._counts[key]
