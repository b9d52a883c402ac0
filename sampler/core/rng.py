"""Counter-based randomness: stateless, vectorized 64-bit hashing.

Sampling must be reproducible across runs, runners, worker counts and retries
(docs/architecture.md, "Random streams"), so no draw may come from a stateful generator whose
output depends on what a worker happened to process before. Instead every
random number is a hash of the things that identify the draw:

    key = mix(seed, op_salt, sample_id, node_fingerprint, position_or_counter)

`mix` is a chain of splitmix64 finalizers (Steele, Lea, Flood: "Fast
splittable pseudorandom number generators", 2014; constants of Stafford's
"variant 13"), a bijection of 64-bit words with full avalanche. Because the
chain is a fold, `mix(a, b, c)` equals `mix_into(mix(a, b), c)`: callers hash the
per-query prefix once and then one step per edge.

Data shapes:
  Ids         = np.ndarray of dtype 'S' (fixed-width bytes, NUL padded)
  Fingerprint = np.uint64, a stable hash of one id's bytes
  Keys        = np.ndarray of uint64
"""
from __future__ import annotations

import hashlib

import numpy as np

from unigraph.encoding import splitmix

_MASK64 = (1 << 64) - 1
_START = np.uint64(0x243F6A8885A308D3)    # digits of pi: the chain's initial state
_UNIT = 2.0 ** -53


def _as_u64(value) -> np.ndarray:
    """uint64 view of an int, or an integer array (negative values wrap mod 2**64)."""
    if isinstance(value, (int, np.integer)):
        return np.uint64(int(value) & _MASK64)
    array = np.asarray(value)
    if array.dtype.kind not in "iu":
        raise ValueError(f"mix: expected integers, got dtype {array.dtype}")
    return array.astype(np.uint64, copy=False)


def _step(state, value) -> np.ndarray:
    """One link of the chain: finalize(state ^ value * golden) (unigraph.encoding.splitmix).

    For a fixed state this is a bijection of `value`, so distinct positions of
    one query never get equal keys.
    """
    z = splitmix.step(state, _as_u64(value))
    return z[()] if z.ndim == 0 else z


def mix(*values) -> np.ndarray | np.uint64:
    """Well-mixed uint64 from uint64/int arrays and scalars, broadcast together.

    Order matters (mix(a, b) != mix(b, a)); ints wrap mod 2**64. The result is a
    chain state: mix(a, b, c) == mix_into(mix(a, b), c).
    """
    if not values:
        raise ValueError("mix: needs at least one value")
    with np.errstate(over="ignore"):
        state = _START
        for value in values:
            state = _step(state, value)
    return state


def mix_into(state, *values) -> np.ndarray | np.uint64:
    """Continues a chain: mix(a, b, c) == mix_into(mix(a, b), c)."""
    with np.errstate(over="ignore"):
        for value in values:
            state = _step(state, value)
    return state


def unit_interval(keys) -> np.ndarray:
    """Floats in the open interval (0, 1) from the top 53 bits of uint64 keys.

    The value is j * 2**-53 for j in [1, 2**53); the one key prefix j == 0
    (probability 2**-53) maps to j == 1 so that log(u) is always finite.
    """
    top = np.asarray(keys, dtype=np.uint64) >> np.uint64(11)
    return np.maximum(top, np.uint64(1)).astype(np.float64) * _UNIT


def name_salt(text: str) -> int:
    """A stable uint64 for a name (e.g. a sampling op's name), as a Python int."""
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=8,
                             person=b"graphsmp").digest()
    return int.from_bytes(digest, "little")


def fingerprint(ids: np.ndarray, salt: int = 0) -> np.ndarray:
    """Stable 64-bit hashes of fixed-width byte ids (dtype 'S'), vectorized.

    A nonzero `salt` starts the chain elsewhere, giving an independent hash of the
    same bytes (two salts together make a 128-bit identity).

    The bytes are read as little-endian 64-bit words (so the result is the
    same on every platform) and folded into the chain word by word. A word is
    folded only while the id still has bytes at or after it, so the NUL
    padding of a wider array changes nothing: b'ab' hashes the same in 'S2'
    and in 'S9' (ids never end with NUL, numpy's own rule for 'S').
    """
    ids = np.asarray(ids)
    if ids.dtype.kind != "S":
        raise ValueError(f"fingerprint: ids must be a bytes array (dtype 'S'), got {ids.dtype}")
    flat = np.ascontiguousarray(ids.reshape(-1))
    n, width = len(flat), flat.dtype.itemsize
    words = splitmix.words(flat.view(np.uint8).reshape(n, width))  # [n, n_words]
    n_words = words.shape[1]
    # live[:, j]: the id has a nonzero byte in word j or later.
    live = np.logical_or.accumulate((words != 0)[:, ::-1], axis=1)[:, ::-1]
    with np.errstate(over="ignore"):
        start = _START if not salt else _step(_START, salt)
        state = np.full(n, start, dtype=np.uint64)
        for j in range(n_words):
            column = live[:, j]
            if not column.any():
                break  # later words are NUL padding for every id
            stepped = _step(state, words[:, j])
            state = np.where(column, stepped, state)
        # Close with a domain tag so that fingerprints never equal a bare mix().
        state = _step(state, np.uint64(0x6669_6E67_6572_7072))  # b"fingerpr"
    return state.reshape(ids.shape)
