"""Where byte strings are in a vocabulary's tokens: one hash table of 64-bit words,
probed by whole-array operations (a vocabulary lookup of a decoded batch's strings).

A token ('S', so without trailing NUL bytes) is its bytes NUL-padded to whole 64-bit
words; two 'S' values are equal exactly when their words are. The tokens are grouped
by a hash of their words (multiply-xor, the top bits: at least 4 buckets per token, so
most buckets hold none or one), laid out bucket after bucket. A lookup hashes every
value at once and compares it with the first token of its bucket; only the values
whose bucket holds more tokens are compared again, with the next one (a few percent,
a few rounds). A value can only equal a token of its own bucket, so comparing it with
a neighbouring bucket's token (an empty bucket's "first") finds nothing, safely. For
a batch's 23K venues among 512 tokens: 0.2 ms, where hashing them as Arrow keys took
1.2 ms; nothing per value in Python, no sort.

The table only finds tokens; what it gives for one (its index + 1 in the tokens' own
order, or a code given with it: hashing.Hasher's buckets of the strings it has seen)
does not depend on the hash constants or the table's size. It takes about 70 bytes a
token (200K tokens of 16 bytes: 14 MB), made in each process that looks values up.
"""
from __future__ import annotations

import numpy as np

WORD = 8
# Values looked up per slice: every temporary stays under glibc's 128 KiB, so it is
# heap memory used again, not pages the kernel maps afresh for each array (on this
# 2-core VM a fresh 435 KB array cost 0.25 ms of page faults, more than its work).
CHUNK = 15872
_MIX = np.uint64(0xBF58476D1CE4E5B9)
# Multipliers tried when a table is made; the one whose fullest bucket holds the fewest
# tokens is kept (fewer lookup rounds). Odd, so multiplying is a bijection.
_MULTIPLIERS = tuple(np.uint64(m) for m in (0x9E3779B97F4A7C15, 0xD6E8FEB86659FD93,
                                            0xA0761D6478BD642F, 0xE7037ED1A0B428DB))


def words_of(values: np.ndarray, count: int | None = None) -> np.ndarray:
    """An 'S' array's values as uint64 words [n, ceil(itemsize / 8)] (native order; a
    view when the width is a whole number of words), widened with NUL words to
    `count` words."""
    flat = np.ascontiguousarray(values).reshape(-1)
    width = max(1, -(-flat.dtype.itemsize // WORD))
    if count is not None and count > width:
        width = count
    if flat.dtype.itemsize != width * WORD:
        flat = flat.astype(f"S{width * WORD}")
    return flat.view(np.uint64).reshape(len(flat), width)


def _buckets(words: np.ndarray, multiplier: np.uint64, shift: np.uint64) -> np.ndarray:
    """Each row's bucket (int64): its words folded by multiply-xor, the top bits kept
    (multiply-shift hashing). In place in one new array: every array a lookup makes is
    fresh memory the kernel maps page by page, so fewer is faster."""
    with np.errstate(over="ignore"):
        hashed = np.multiply(words[:, 0], multiplier)
        for j in range(1, words.shape[1]):
            hashed ^= words[:, j]
            hashed *= _MIX
        hashed >>= shift
    return hashed.view(np.int64)


class TokenTable:
    """Distinct 'S' tokens; `codes(values)` is each value's index among them + 1 (a
    vocabulary's indices), or its token's entry in `codes` when given (nonzero int64),
    and 0 where it is none of them."""

    def __init__(self, tokens: np.ndarray, codes: np.ndarray | None = None):
        tokens = tokens.reshape(-1)
        n = len(tokens)
        words = words_of(tokens) if n else np.zeros((0, 1), np.uint64)
        self.width = words.shape[1]  # words per token
        bits = max(4, (4 * n - 1).bit_length())  # 2^bits >= 4 buckets per token
        self._shift = np.uint64(64 - bits)
        best = None
        for multiplier in _MULTIPLIERS:
            bucket = _buckets(words, multiplier, self._shift)
            counts = np.bincount(bucket, minlength=1 << bits)
            fullest = int(counts.max()) if n else 0
            if best is None or fullest < best[0]:
                best = (fullest, multiplier, bucket, counts)
        self.rounds, self._multiplier, bucket, counts = best
        order = np.argsort(bucket, kind="stable")
        # Bucket b's tokens are entries starts[b]:starts[b + 1]; one entry more (NUL
        # words, code 0) keeps the last empty bucket's "first" in range.
        self._starts = np.zeros((1 << bits) + 1, np.int64)
        np.cumsum(counts, out=self._starts[1:])
        self._shared = counts > 1  # buckets whose values may need another round
        self._columns = np.zeros((self.width, n + 1), np.uint64)  # word j of each entry
        self._columns[:, :n] = words[order].T
        own = order + 1 if codes is None else np.asarray(codes, np.int64)[order]
        self._codes = np.append(own, 0).astype(np.int64)  # each entry's code, then 0

    def codes(self, values: np.ndarray) -> np.ndarray:
        """int64 code of each value of an 'S' array (flat): its token's (index + 1 by
        default), 0 where it is none of them."""
        n = values.size
        out = np.zeros(n, np.int64)
        if not n or not self.rounds:
            return out
        words = words_of(values, self.width)
        too_long = None
        if words.shape[1] > self.width:  # a byte past the widest token: none of them
            too_long = (words[:, self.width:] != 0).any(axis=1)
            words = words[:, :self.width]
        for start in range(0, n, CHUNK):
            part = slice(start, start + CHUNK)
            self._chunk(words[part], out[part], None if too_long is None else too_long[part])
        return out

    def _chunk(self, words: np.ndarray, out: np.ndarray, too_long) -> None:
        """codes() of a slice, written into `out`."""
        bucket = _buckets(words, self._multiplier, self._shift)
        shared = self._shared.take(bucket, mode="clip") if self.rounds > 1 else None
        first = self._starts.take(bucket, mode="clip", out=bucket)  # in place: both int64
        same = self._matches(first, words, None)
        if too_long is not None:
            same &= ~too_long
        self._codes.take(first, mode="clip", out=out)
        out *= same  # 0 where the value is not its bucket's first token
        if shared is None:
            return
        shared &= ~same  # the values whose bucket holds more tokens: the next ones
        left = np.flatnonzero(shared)
        for k in range(1, self.rounds):
            if not len(left):
                break
            entry = first[left] + k
            found = self._matches(entry, words, left)
            out[left[found]] = self._codes[entry[found]]
            # The rest go on (past their bucket's end they meet other buckets' tokens,
            # which no value of theirs can equal).
            left = left[~found]

    def _matches(self, entries: np.ndarray, words: np.ndarray, rows) -> np.ndarray:
        """Whether each value (of `rows`, or all) equals the token at its entry."""
        gathered = self._columns[0].take(entries, mode="clip")
        column = words[:, 0] if rows is None else words[rows, 0]
        same = gathered == column
        for j in range(1, self.width):
            self._columns[j].take(entries, mode="clip", out=gathered)
            column = words[:, j] if rows is None else words[rows, j]
            same &= gathered == column
        return same
