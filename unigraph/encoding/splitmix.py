"""splitmix64's mixing step, vectorized: the one primitive both of the project's
64-bit hashes are chains of (sampler.core.rng, the random streams; unigraph.encoding.row_hash,
BigQuery rows' content ids). Constants of Stafford's "variant 13" (Steele, Lea,
Flood: "Fast splittable pseudorandom number generators", 2014); the finalizer is a
bijection of 64-bit words with full avalanche.
"""
from __future__ import annotations

import numpy as np

GOLDEN = np.uint64(0x9E3779B97F4A7C15)   # 2**64 / golden ratio, odd
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)
WORD = 8  # bytes per hashed word


def finalize_inplace(z: np.ndarray) -> np.ndarray:
    """splitmix64's output function, in place on a uint64 array."""
    z ^= z >> _S30
    z *= _M1
    z ^= z >> _S27
    z *= _M2
    z ^= z >> _S31
    return z


def step(state, value) -> np.ndarray:
    """One link of a chain, elementwise: finalize(state ^ value * golden), on uint64
    values (scalars or arrays, broadcast). For a fixed state a bijection of `value`."""
    with np.errstate(over="ignore"):
        z = np.asarray(np.bitwise_xor(np.asarray(state, dtype=np.uint64),
                                      np.asarray(value, dtype=np.uint64) * GOLDEN))
        finalize_inplace(z)
    return z


def words(matrix: np.ndarray) -> np.ndarray:
    """Rows of bytes [n, width] as little-endian uint64 words [n, ceil(width / 8)] (at
    least one word; the last one NUL padded), the same on every platform."""
    n, width = matrix.shape
    padded = np.zeros((n, max(1, -(-width // WORD)) * WORD), dtype=np.uint8)
    if width:
        padded[:, :width] = matrix
    return padded.view("<u8").astype(np.uint64)
