"""Categorical values hashed into buckets, the same on every machine.

A string's hash is the project's id hash (unigraph.encoding.row_hash.id_hashes: its
bytes as little-endian 64-bit words, NUL-padded, folded by splitmix64 steps while any
non-NUL byte remains); an integer's is one splitmix64 step of its 64-bit two's
complement. Either then takes one more step with the salt, and the bucket is that
modulo the number of buckets. No Python per value, no process-dependent seed (Python's
`hash` of a str differs between processes), so a DataLoader worker, the API and the
command line agree. sampler.training.features computes the same with TensorFlow ops.

A `Hasher` is one feature's hash_buckets, remembered: integers in a small range (token
ids of a text vocabulary) get their buckets from a table of every bucket of 0..top,
made once per process, by one gather; strings from the buckets of the distinct strings
it has seen (found by a token table, sampler.features.token_table), only the strings
new to it hashed; anything else is hashed as above. The buckets are the same either
way.
"""
from __future__ import annotations

import numpy as np

from sampler.core.arrays import unique_inverse
from sampler.features.token_table import TokenTable
from unigraph.encoding import splitmix
from unigraph.encoding.row_hash import ID_HASH_START, id_hashes


def value_hashes(values: np.ndarray) -> np.ndarray:
    """uint64 per value: 'S' strings by their bytes, integers (and bools) by value."""
    if values.dtype.kind == "S":
        return id_hashes(np.ascontiguousarray(values).reshape(-1)).reshape(values.shape)
    with np.errstate(over="ignore"):
        return splitmix.step(ID_HASH_START, values.astype(np.int64).view(np.uint64))


# Values hashed per pass over a slice of this many: the dozen whole-array steps of a
# chain stay in the CPU's cache (a batch's 321K token ids: 4.5 -> 1.9 ms here).
CHUNK = 16384


def hash_buckets(values: np.ndarray, num_buckets: int, salt: int) -> np.ndarray:
    """int64 bucket in [0, num_buckets) of each value ('S' or integer array, any shape):
    splitmix.step(value_hashes(values), salt) % num_buckets, computed in place in one
    array, a cache-sized slice at a time."""
    integer = values.dtype.kind != "S"
    hashed = values.astype(np.int64).astype(np.uint64) if integer else value_hashes(values)
    power_of_two = num_buckets & (num_buckets - 1) == 0
    with np.errstate(over="ignore"):
        salt_word = np.uint64(salt) * splitmix.GOLDEN
        flat = hashed.reshape(-1)
        for start in range(0, len(flat), CHUNK):
            part = flat[start:start + CHUNK]
            if integer:  # splitmix.step(ID_HASH_START, value)
                part *= splitmix.GOLDEN
                part ^= ID_HASH_START
                splitmix.finalize_inplace(part)
            part ^= salt_word
            splitmix.finalize_inplace(part)
            if power_of_two:
                part &= np.uint64(num_buckets - 1)
            else:
                part %= np.uint64(num_buckets)
    return hashed.view(np.int64)


# The largest table of integers' buckets a Hasher keeps (8 bytes each: 8 MiB), and how
# far past a batch's count of values its top may reach for a table to be made (a
# batch of few values over a wide range is hashed rather than tabled).
TABLE_LIMIT = 1 << 20
TABLE_FACTOR = 8
# The most distinct strings a Hasher remembers, how many times it takes in a batch's new
# ones (a feature whose strings keep being new, such as titles, is hashed as it comes
# after that), and the share of a batch's values that must be new for it to.
STRING_LIMIT = 1 << 18
STRING_UPDATES = 4
STRING_NEW_SHARE = 0.25


class Hasher:
    """hash_buckets(values, num_buckets, salt) of one feature, with the buckets of
    non-negative integers below a bound looked up in a table of 0..top, and of strings
    seen before in a table of those (module docstring). Threads may share one (a table
    is replaced whole, never changed); pickled (to a DataLoader worker) without its
    tables."""

    def __init__(self, num_buckets: int, salt: int):
        self.num_buckets, self.salt = num_buckets, salt
        self._table: np.ndarray | None = None
        # (the strings seen, a TokenTable of them giving each one's bucket + 1)
        self._strings: tuple[np.ndarray, TokenTable] | None = None
        self._string_updates = 0

    def __getstate__(self):  # the tables are made again where it lands
        return {"num_buckets": self.num_buckets, "salt": self.salt}

    def __setstate__(self, state):
        self.__init__(state["num_buckets"], state["salt"])

    def __call__(self, values: np.ndarray) -> np.ndarray:
        if values.dtype.kind == "S":
            return self._strings_hashed(values)
        table = self._table_for(values)
        if table is None:
            return hash_buckets(values, self.num_buckets, self.salt)
        out = np.empty(values.shape, np.int64)
        indices = values.view(np.int64) if values.dtype == np.uint64 else values
        np.take(table, indices, out=out, mode="clip")  # every value is in range
        return out

    def _table_for(self, values: np.ndarray) -> np.ndarray | None:
        """A table holding every value's bucket, or None (not integers in range)."""
        if values.dtype.kind not in "iu" or not values.size:
            return None
        table = self._table
        low, high = int(values.min()), int(values.max())
        if low < 0 or high >= TABLE_LIMIT:
            return None
        if table is not None and high < len(table):
            return table
        if high >= TABLE_FACTOR * values.size + (1 << 16):
            return None  # few values over a wide range: hashing them is cheaper
        size = min(TABLE_LIMIT, max(high + 1, 2 * len(table) if table is not None else 0))
        table = hash_buckets(np.arange(size, dtype=np.int64), self.num_buckets, self.salt)
        self._table = table
        return table

    def _strings_hashed(self, values: np.ndarray) -> np.ndarray:
        """hash_buckets of 'S' values: of those seen before from their table, of the
        others hashed (and remembered, while updates and room are left)."""
        flat = values.reshape(-1)
        if self._strings is None and self._string_updates < STRING_UPDATES and len(flat):
            self._remember(flat)
        memo = self._strings
        if memo is None:
            return hash_buckets(values, self.num_buckets, self.salt)
        out = memo[1].codes(flat)  # a string's bucket + 1, 0 for one not seen
        new = np.flatnonzero(out == 0)
        out -= 1
        if len(new):
            fresh = flat[new]
            out[new] = hash_buckets(fresh, self.num_buckets, self.salt)
            if (len(new) >= STRING_NEW_SHARE * len(flat)
                    and self._string_updates < STRING_UPDATES):
                self._remember(fresh)
        return out.reshape(values.shape)

    def _remember(self, fresh: np.ndarray) -> None:
        """The distinct strings of `fresh` added to those remembered, up to the limit."""
        self._string_updates += 1
        known = self._strings[0] if self._strings is not None else fresh[:0]
        room = STRING_LIMIT - len(known)
        if room <= 0:
            return
        distinct = unique_inverse(fresh)[0][:room]
        width = max(known.dtype.itemsize, distinct.dtype.itemsize)
        strings = np.concatenate([known.astype(f"S{width}"), distinct.astype(f"S{width}")])
        buckets = hash_buckets(strings, self.num_buckets, self.salt)
        self._strings = (strings, TokenTable(strings, codes=buckets + 1))
