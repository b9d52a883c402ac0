"""A decoded batch's string values without a Python object each (`Strings`).

A feature's values are held in one of three forms, made in the first and turned into
the others only when asked (most readers of a batch never read its node ids, and those
that do want one form, not all three):

  spans    where the values lie in a buffer of decoded bytes (the batched decoder's:
           the records' bytes_list items copied side by side) and each one's length;
           nothing more is done until a value or another form is asked for
  fixed    an 'S' array shaped like the feature's values (numpy drops a value's
           trailing NUL bytes there), `lengths` each value's exact byte length (same
           shape) and `exact` the values that do end in NUL bytes, by flat position
  objects  an object array of bytes (what a GraphTensor holds): made from `fixed`

Values of very uneven lengths (one long text among short ones) are kept as bytes
objects from the start, so that no fixed-width array is as wide as the longest times
their count; `fixed` is then made when asked.
"""
from __future__ import annotations

from typing import Mapping, Optional, Sequence

import numpy as np

from unigraph.encoding.wire import windows

_KEEP_BYTES = np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype=np.uint64)
_UNEVEN = 8  # fixed-width values may take this many times their bytes (plus 1 MB)


class Strings:
    """String values in one of three forms (module docstring): `fixed`, `exact`,
    `objects()` and `item(i)` make what they need; `lengths` is always there."""

    __slots__ = ("_fixed", "lengths", "_exact", "_objects", "_spans", "whole", "memo")

    def __init__(self, fixed: Optional[np.ndarray], lengths: np.ndarray,
                 exact: Optional[Mapping[int, bytes]] = None,
                 objects: Optional[np.ndarray] = None):
        self._fixed, self.lengths, self._exact = fixed, lengths, dict(exact or {})
        self._objects = objects
        self._spans: Optional[tuple[np.ndarray, np.ndarray]] = None
        # A slice of spans: (the Strings it is cut from, where it starts there), so that
        # what is derived from every value (a vocabulary's codes) is derived once for
        # the whole (a decoded chunk) and sliced for each batch cut from it (`memo`).
        self.whole: Optional[tuple["Strings", int]] = None
        self.memo: dict = {}

    @classmethod
    def _of_spans(cls, buffer: np.ndarray, starts: np.ndarray,
                  lengths: np.ndarray) -> "Strings":
        strings = cls(None, lengths)
        strings._exact, strings._spans = None, (buffer, starts)
        return strings

    def __len__(self) -> int:
        return len(self.lengths)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.lengths.shape

    @property
    def fixed(self) -> np.ndarray:
        if self._fixed is None:
            if self._spans is not None:
                self._fixed_from_spans()
            else:
                items = self._objects.reshape(-1).tolist()
                self._fixed = (np.array(items, dtype="S") if items else np.zeros(0, "S1")
                               ).reshape(self._objects.shape)
        return self._fixed

    @property
    def exact(self) -> dict[int, bytes]:
        """The values that end in NUL bytes (which `fixed` drops), by flat position."""
        if self._exact is None:
            self._fixed_from_spans()
        return self._exact

    @property
    def as_objects(self) -> bool:
        """Whether the values are held as bytes objects (uneven lengths)."""
        return self._objects is not None

    @classmethod
    def from_spans(cls, buffer: np.ndarray, starts: np.ndarray,
                   lengths: np.ndarray) -> "Strings":
        """The values buffer[starts[i]:+lengths[i]] of a uint8 array, as a vector (kept
        as spans of `buffer` until asked for)."""
        n = len(starts)
        lengths = lengths.astype(np.int64)
        words = max(1, -(-int(lengths.max()) // 8)) if n else 1
        if n * words * 8 > _UNEVEN * (int(lengths.sum()) + 8 * n) + (1 << 20):
            view = memoryview(buffer)
            objects = np.empty(n, dtype=object)
            objects[:] = [bytes(view[s:s + k]) for s, k in zip(starts.tolist(),
                                                                lengths.tolist())]
            return cls(None, lengths, objects=objects)
        return cls._of_spans(buffer, np.asarray(starts, dtype=np.int64), lengths)

    def _fixed_from_spans(self) -> None:
        """`fixed` and `exact` from the spans (which are then let go)."""
        buffer, starts = self._spans
        shape, lengths, starts = self.lengths.shape, self.lengths.reshape(-1), starts.reshape(-1)
        n = len(starts)
        words = max(1, -(-int(lengths.max()) // 8)) if n else 1
        if n and int(starts.max()) + 8 * words + 8 > len(buffer):
            buffer = np.concatenate([buffer, np.zeros(8 * words + 8, dtype=np.uint8)])
        # Each value as `words` little-endian uint64s, the bytes past its end masked to
        # NUL: a gather and a few whole-array operations per 8 bytes, nothing per byte.
        at = windows(buffer)
        rows = np.empty((n, words), dtype=np.uint64)
        shortest = int(lengths.min()) if n else 0
        for j in range(words):  # written in place: no column copied twice
            if shortest >= 8 * (j + 1):  # every value fills this word: nothing to mask
                rows[:, j] = at[starts + 8 * j]
                continue
            kept = np.clip(lengths - 8 * j, 0, 8)
            np.bitwise_and(at[starts + 8 * j], _KEEP_BYTES[kept], out=rows[:, j])
        nul = np.flatnonzero((lengths > 0) & (buffer[np.maximum(starts + lengths - 1, 0)] == 0))
        self._exact = {int(i): buffer[starts[i]:starts[i] + lengths[i]].tobytes() for i in nul}
        self._fixed = rows.view(f"S{8 * words}").reshape(shape)
        self._spans = None

    def words_after(self, prefix: bytes) -> Optional[np.ndarray]:
        """The bytes after `prefix` of each value, NUL-padded to 8 and read as a
        little-endian uint64 (sampler.core.arrays.byte_keys' keys, byte-swapped), read
        straight from the spans; None unless the values are held as spans, one
        dimension, each the prefix and at most 8 bytes more. About a dozen whole-array
        operations: a vocabulary looks up every node id of every batch this way."""
        if self._spans is None or self.lengths.ndim != 1:
            return None
        buffer, starts = self._spans
        size = len(prefix)
        if not len(starts):
            return np.zeros(0, dtype=np.uint64)
        after = self.lengths.astype(np.int64, copy=False) - size  # as uint64, a value shorter than the prefix is huge
        if int(after.view(np.uint64).max()) > 8:
            return None
        try:  # fancy indexing checks bounds: a value near the buffer's end raises
            return self._words_after(windows(buffer), starts, prefix, after)
        except IndexError:
            padding = np.zeros(size + 16, dtype=np.uint8)
            return self._words_after(windows(np.concatenate([buffer, padding])), starts,
                                     prefix, after)

    @staticmethod
    def _words_after(at: np.ndarray, starts: np.ndarray, prefix: bytes,
                     after: np.ndarray) -> Optional[np.ndarray]:
        size = len(prefix)
        for k in range(0, size, 8):  # the prefix, 8 bytes at a time
            part = prefix[k:k + 8]
            words = at[k:][starts]
            if len(part) < 8:
                words &= _KEEP_BYTES[len(part)]
            if not (words == np.uint64(int.from_bytes(part, "little"))).all():
                return None
        words = at[size:][starts]
        if int(after.min()) < 8:  # the bytes past a shorter value's end as NUL
            words &= _KEEP_BYTES[after]
        return words

    def keys_after(self, prefix: bytes) -> Optional[np.ndarray]:
        """`words_after` as sampler.core.arrays.byte_keys makes its keys (big-endian:
        they sort as the values do)."""
        words = self.words_after(prefix)
        return None if words is None else words.byteswap()

    @classmethod
    def from_objects(cls, values: np.ndarray) -> "Strings":
        """Bytes objects (an object array of any shape), kept as they are."""
        items = values.reshape(-1).tolist()
        lengths = np.fromiter(map(len, items), np.int64, len(items)).reshape(values.shape)
        return cls(None, lengths, objects=values)

    def reshape(self, shape: tuple[int, ...]) -> "Strings":
        if self._spans is not None:
            buffer, starts = self._spans
            return Strings._of_spans(buffer, starts.reshape(shape), self.lengths.reshape(shape))
        return Strings(None if self._fixed is None else self._fixed.reshape(shape),
                       self.lengths.reshape(shape), self._exact,
                       None if self._objects is None else self._objects.reshape(shape))

    def objects(self) -> np.ndarray:
        """The values as an object array of bytes (the shape of `fixed`)."""
        if self._objects is not None:
            return self._objects
        out = self.fixed.astype(object)
        flat = out.reshape(-1)
        for i, value in self.exact.items():
            flat[i] = value
        return out

    def item(self, i: int) -> bytes:
        """The value at flat position i, exactly."""
        if self._objects is not None:
            return self._objects.reshape(-1)[i]
        return self.exact.get(i, bytes(self.fixed.reshape(-1)[i]))

    def slice(self, start: int, stop: int) -> "Strings":
        """Items start..stop-1 (along the first dimension)."""
        if self._objects is not None:
            return Strings(None, self.lengths[start:stop], objects=self._objects[start:stop])
        if self._spans is not None:
            buffer, starts = self._spans
            cut = Strings._of_spans(buffer, starts[start:stop], self.lengths[start:stop])
            whole, at = self.whole or (self, 0)
            cut.whole = whole, at + start
            return cut
        inner = int(np.prod(self._fixed.shape[1:], dtype=np.int64))
        low, high = start * inner, stop * inner
        exact = {i - low: v for i, v in self._exact.items() if low <= i < high}
        return Strings(self._fixed[start:stop], self.lengths[start:stop], exact)

    @classmethod
    def concat(cls, parts: Sequence["Strings"]) -> "Strings":
        lengths = np.concatenate([p.lengths for p in parts])
        if any(p.as_objects for p in parts):
            return cls(None, lengths, objects=np.concatenate([p.objects() for p in parts]))
        if all(p._spans is not None for p in parts):
            return cls._spans_concat(parts, lengths)
        width = max(p.fixed.dtype.itemsize for p in parts)
        exact, at = {}, 0
        for part in parts:
            exact.update({i + at: v for i, v in part.exact.items()})
            at += part.fixed.size
        return cls(np.concatenate([p.fixed.astype(f"S{width}") for p in parts]), lengths,
                   exact)

    @classmethod
    def _spans_concat(cls, parts: Sequence["Strings"], lengths: np.ndarray) -> "Strings":
        """Parts held as spans, still as spans: the bytes each one's values lie in
        copied side by side."""
        pieces, starts, at = [], [], 0
        for part in parts:
            buffer, part_starts = part._spans
            low = int(part_starts.min()) if part_starts.size else 0
            high = int((part_starts + part.lengths).max()) if part_starts.size else 0
            pieces.append(buffer[low:high])
            starts.append(part_starts - low + at)
            at += high - low
        buffer = np.concatenate(pieces + [np.zeros(8, dtype=np.uint8)])
        return cls._of_spans(buffer, np.concatenate(starts), lengths)
