"""A categorical feature's vocabulary: its tokens, counted from the graph, written one
per line, looked up by array operations.

Tokens are the values the graph holds at least `min_count` times, ordered by count
(most first), then by value (bytewise for strings, numerically for integers), cut to
`max_tokens`. The order depends on the counts alone, so the same graph gives the same
file on every run and machine, however its tables are split into batches or files.
Index 0 is every value outside the vocabulary; token i (0-based line) is index i + 1:
what `tf.keras.layers.StringLookup(vocabulary=file)` and `IntegerLookup(vocabulary=file)`
give with their defaults (one out-of-vocabulary index, no mask token).

A file holds one token per line, so a token that is empty or holds a line break cannot
be written (TensorFlow's reader refuses empty lines and drops a '\\r' before a line's
end): such values never enter the vocabulary, and map to 0 everywhere.

Lookups never go through Python per value: string tokens by one hash table of their
64-bit words (sampler.features.token_table), integers by sampler.core.arrays.SortedIndex
over the sorted tokens (a table for small integers, else binary search).
"""
from __future__ import annotations

import hashlib
from typing import Iterable, Optional

import numpy as np
import pyarrow as pa

from sampler.core.arrays import SortedIndex, argsort, arrow_positions, unique_inverse
from sampler.features.spec import FeatureError
from sampler.features.token_table import TokenTable
from sampler.features.values import as_bytes, bytes_as_lines, first_value, flat_items

# Tokens per value kind: byte strings ('S') or int64.
Counts = tuple[np.ndarray, np.ndarray]  # (distinct values, sorted; int64 counts)


def token_array(values, integer: bool) -> np.ndarray:
    """Values as tokens: int64, or 'S' for strings."""
    flat, _ = flat_items(values)
    if integer:
        if flat.dtype.kind not in "biu":
            raise ValueError(flat)
        return flat.astype(np.int64, copy=False)
    return as_bytes(flat)


def count_values(values: np.ndarray) -> Counts:
    """(distinct values sorted, how often each occurs) of a flat token array."""
    values = values.reshape(-1)
    if not len(values):
        return values, np.zeros(0, np.int64)
    distinct, inverse = unique_inverse(values)
    return distinct, np.bincount(inverse, minlength=len(distinct)).astype(np.int64)


def merge_counts(parts: Iterable[Counts]) -> Counts:
    """The counts of several batches as one."""
    parts = list(parts)
    filled = [p for p in parts if len(p[0])]
    if len(filled) <= 1:
        return filled[0] if filled else parts[0] if parts else (np.zeros(0, np.int64),
                                                                np.zeros(0, np.int64))
    parts = filled
    values = np.concatenate([p[0] for p in parts])
    counts = np.concatenate([p[1] for p in parts])
    distinct, inverse = unique_inverse(values)
    totals = np.zeros(len(distinct), np.int64)
    np.add.at(totals, inverse, counts)
    return distinct, totals


def writable(tokens: np.ndarray) -> np.ndarray:
    """Which tokens a one-per-line file can hold (strings: not empty, no line break)."""
    if tokens.dtype.kind != "S" or not len(tokens):
        return np.ones(len(tokens), bool)
    raw = np.ascontiguousarray(tokens).view(np.uint8).reshape(len(tokens), -1)
    breaks = ((raw == 10) | (raw == 13)).any(axis=1)
    return (tokens != b"") & ~breaks


class FeatureVocabulary:
    """Tokens (int64 or 'S') in index order: token i is index i + 1, anything else 0."""

    def __init__(self, tokens: np.ndarray, where: str = "vocabulary"):
        self.tokens = tokens
        self.integer = tokens.dtype.kind in "iu"
        order = argsort(tokens) if len(tokens) else np.zeros(0, np.int64)
        ordered = tokens[order]
        repeated = np.flatnonzero(ordered[1:] == ordered[:-1])
        if len(repeated):
            token = ordered[repeated[0]]
            lines = np.flatnonzero(tokens == token)[:2] + 1
            raise FeatureError(f"{where}: token {first_value(np.array([token]))!r} repeats "
                               f"(lines {lines[0]} and {lines[1]})")
        # Integer tokens: SortedIndex's table or search over the sorted ones; strings:
        # a hash table of their words in index order (token_table), made on first use.
        self._index = SortedIndex(ordered) if self.integer else None
        self._codes = (order + 1).astype(np.int64) if self.integer else None
        self._table: Optional[TokenTable] = None
        self._lines = None  # the file's lines (tokens in index order), made on first use

    def __getstate__(self):
        # The tokens alone: the index is rebuilt where it lands (a DataLoader worker),
        # never pickled (its lookup table and sentinels belong to one process).
        return {"tokens": self.tokens}

    def __setstate__(self, state):
        self.__init__(state["tokens"])

    @classmethod
    def from_counts(cls, counts: Counts, min_count: int = 1, max_tokens: int = 0,
                    where: str = "vocabulary") -> "FeatureVocabulary":
        """The tokens held at least min_count times, most frequent first, ties by value
        (the distinct values come sorted: a stable sort by count keeps that order)."""
        distinct, totals = counts
        keep = (totals >= min_count) & writable(distinct)
        distinct, totals = distinct[keep], totals[keep]
        order = np.argsort(-totals, kind="stable")
        if max_tokens:
            order = order[:max_tokens]
        return cls(distinct[order], where)

    @property
    def size(self) -> int:
        """Tokens; indices run 0 (the rest) .. size."""
        return len(self.tokens)

    def lookup(self, values: np.ndarray) -> np.ndarray:
        """int64 index of each value (same shape): its token's line + 1, else 0."""
        shape = values.shape
        flat = values.reshape(-1)
        if not self.integer:
            if flat.dtype.kind != "S":
                flat = as_bytes(flat)
            if self._table is None:  # threads may race here: each makes the same table
                self._table = TokenTable(self.tokens)
            return self._table.codes(flat).reshape(shape)
        positions = self._index.positions(flat)
        codes = np.zeros(len(positions), np.int64)
        found = positions >= 0
        codes[found] = self._codes[positions[found]]
        return codes.reshape(shape)

    def lookup_bytes(self, values: np.ndarray) -> Optional[np.ndarray]:
        """lookup() of an object array of bytes (what the readers and the decoder give)
        without making it an 'S' array first: the values as lines (values.bytes_as_lines)
        looked up in one Arrow hash table of the file's lines (a batch's 54K tags: 2.0 ms,
        3.5 ms made 'S' and looked up). None where that does not apply (integer tokens;
        values that are not all bytes, hold a line break or end in a NUL byte):
        lookup(as_bytes(values))."""
        if self.integer or values.dtype != object:
            return None
        query = bytes_as_lines(values)
        if query is None:
            return None
        if self._lines is None:  # threads may race here: each makes the same array
            data = self.file_bytes()
            breaks = np.flatnonzero(np.frombuffer(data, np.uint8) == 10)
            offsets = np.concatenate([[0], breaks + 1]).astype(np.int64)
            self._lines = pa.Array.from_buffers(pa.large_binary(), self.size, [
                None, pa.py_buffer(offsets), pa.py_buffer(data)])
        positions = arrow_positions(query, self._lines)
        return (positions + 1).reshape(values.shape)

    def file_bytes(self) -> bytes:
        """The vocabulary file: one token per line, each line ending in '\\n'."""
        if self.integer:
            lines = self.tokens.astype("S")
        else:
            lines = self.tokens
        return b"".join(token + b"\n" for token in lines.tolist())

    def sha256(self) -> str:
        return hashlib.sha256(self.file_bytes()).hexdigest()

    @classmethod
    def parse(cls, data: bytes, integer: bool, where: str) -> "FeatureVocabulary":
        """A vocabulary file's tokens; FeatureError naming `where`, the line and the
        value for an empty line, a line that is no integer (integer features) or a
        token that repeats."""
        lines = data.split(b"\n")
        if lines and lines[-1] == b"":
            lines.pop()  # the last line's end
        raw = np.array(lines, dtype=object)
        tokens = raw.astype("S") if len(raw) else np.zeros(0, "S1")
        if len(tokens):
            crlf = np.char.endswith(tokens, b"\r")
            if crlf.any():  # as TensorFlow reads a line
                raw[crlf] = [line[:-1] for line in raw[crlf].tolist()]
                tokens = raw.astype("S")
        problems = np.flatnonzero((tokens == b"") | (raw != tokens.astype(object)))
        if len(problems):
            line = raw[problems[0]]
            what = "is empty" if not line else "ends in a NUL byte"
            raise FeatureError(f"{where}: line {problems[0] + 1} {what}")
        if not integer:
            return cls(tokens, where)
        try:
            numbers = tokens.astype(np.int64) if len(tokens) else np.zeros(0, np.int64)
        except (ValueError, OverflowError):
            bad = next((i for i, line in enumerate(raw.tolist()) if not _is_int64(line)), 0)
            raise FeatureError(f"{where}: line {bad + 1} "
                               f"{raw[bad].decode('utf-8', errors='replace')!r} is not an "
                               f"integer of 64 bits") from None
        return cls(numbers, where)

    def __repr__(self) -> str:
        return f"FeatureVocabulary({self.size:,} {'integer' if self.integer else 'string'} tokens)"


def _is_int64(line: bytes) -> bool:
    try:
        return -2 ** 63 <= int(line) < 2 ** 63
    except ValueError:
        return False


def check_token_values(values, integer: bool, where: str) -> Optional[np.ndarray]:
    """The values as tokens, or FeatureError naming the feature and a value of the
    wrong kind (a number where strings are declared, or the other way round)."""
    flat, _ = flat_items(values)
    if integer and flat.dtype.kind not in "biu":
        raise FeatureError(f"{where}: integer categories, but it holds "
                           f"{first_value(flat)!r} ({flat.dtype})")
    if not integer and flat.dtype.kind not in "OSU":
        raise FeatureError(f"{where}: string categories, but it holds "
                           f"{first_value(flat)!r} ({flat.dtype})")
    return token_array(values, integer)
