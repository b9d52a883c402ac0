"""A graph store is data: what opening one checks, and the full verification.

A store's files may be damaged (a disk, a partial copy) or crafted. Two levels:

- **On every open** (`open_array`, `check_node_table`, `check_adjacency`), what is cheap
  next to sampling: every file the manifest names stays inside the store's folder (its
  real path, links resolved) and is a regular file of the listed size; each `.npy`
  header parses and gives the listed dtype and shape, of the kind its role needs
  (codes integer, weights float, fingerprints uint64, the time type); lengths agree
  between arrays; codes lie in their ranges (node codes below the node set's size,
  target codes below the row's distinct targets, long-row chunks inside their rows);
  row splits start at 0, never decrease and end at the edge count; sorted arrays
  (names, sources, targets, table codes) strictly increase; weights and times are
  finite (a missing time is the lowest value); ragged lengths and string offsets add
  up. Each is a vectorized pass over arrays the job maps anyway, block by block (no
  temporary grows with the graph). So a damaged store gives one line naming the file,
  never a traceback or an out-of-range read.
- **`verify_checksums`** (`sample --verify-store`, `unigraph-convert --verify STORE`)
  reads every byte and compares every file's CRC-32 with the manifest's: a changed
  value that keeps every rule above (a weight 0.5 read as 0.7) is found only there.
"""
from __future__ import annotations

import os
import stat
from typing import Callable

import numpy as np

from unigraph.columnar.batches import FeatureValues
from unigraph.errors import SamplerError, message_line

BLOCK = 1 << 22  # items per pass of a check: bounds the temporaries


class StoreDamaged(SamplerError):
    """A graph store's file breaks a rule of the layout (one line naming the file)."""


def damaged(folder: str, relative: str, problem: str) -> StoreDamaged:
    return StoreDamaged(f"graph store {folder}: damaged: {relative}: {problem}; check it with "
                        f"`unigraph-convert --verify {folder}` or prepare the store again")


# ---- files ------------------------------------------------------------------------------

def contained_path(folder: str, relative: str) -> str | None:
    """The file's path when it resolves (links followed) inside the store's folder."""
    path = os.path.join(folder, relative)
    real, root = os.path.realpath(path), os.path.realpath(folder)
    return path if real.startswith(root.rstrip("/") + "/") else None


def check_files(folder: str, manifest: dict, refuse: Callable[[str], SamplerError]) -> None:
    """Every listed file inside the folder, a regular file, with its listed size."""
    for relative, meta in manifest["files"].items():
        path = contained_path(folder, relative)
        if path is None:
            raise refuse(f"damaged: {relative} leads outside the store's folder")
        try:
            info = os.stat(path)
        except OSError:
            raise refuse(f"incomplete: {relative} is missing") from None
        if not stat.S_ISREG(info.st_mode):
            raise refuse(f"damaged: {relative} is not a regular file")
        if info.st_size != meta["bytes"]:
            raise refuse(f"damaged: {relative} has {info.st_size} bytes, its manifest says "
                         f"{meta['bytes']}")


def open_array(folder: str, manifest: dict, relative: str) -> np.ndarray:
    """A listed `.npy` file mapped read-only, after its header is checked against the
    manifest and the file's size (np.load is never given a header it could misread)."""
    meta = manifest["files"].get(relative)
    if meta is None:
        raise damaged(folder, relative, "the layout needs it and the manifest does not list it")
    path = contained_path(folder, relative)
    if path is None:
        raise damaged(folder, relative, "it leads outside the store's folder")
    try:
        with open(path, "rb") as f:
            version = np.lib.format.read_magic(f)
            read_header = {(1, 0): np.lib.format.read_array_header_1_0,
                           (2, 0): np.lib.format.read_array_header_2_0}.get(version)
            if read_header is None:
                raise ValueError(f".npy format version {version}")
            shape, fortran, dtype = read_header(f)
            offset = f.tell()
        listed = np.dtype(meta["dtype"])
    except Exception as e:  # noqa: BLE001  numpy parses the header with ast: any error
        raise damaged(folder, relative, f"not a .npy array ({message_line(e, 120)})") from None
    if dtype != listed or list(shape) != list(meta["shape"]) or fortran or dtype.hasobject:
        raise damaged(folder, relative, f"holds {dtype.str}{list(shape)}, its manifest lists "
                                        f"{meta['dtype']}{meta['shape']}")
    size = offset + int(np.prod(shape, dtype=object)) * dtype.itemsize
    if size != meta["bytes"]:
        raise damaged(folder, relative, f"its header describes {size} bytes, the file has "
                                        f"{meta['bytes']}")
    if size == offset:  # numpy cannot map an empty array: nothing to share anyway
        return np.zeros(shape, dtype)
    # A plain ndarray over the mapping: np.memmap's Python-level __array_finalize__ would
    # run on every slice and view the hops take.
    return np.memmap(path, dtype, "r", offset=offset, shape=tuple(shape)).view(np.ndarray)


def verify_checksums(folder: str, manifest: dict, refuse: Callable[[str], SamplerError]
                     ) -> None:
    """Every file's CRC-32 against the manifest (reads the whole store)."""
    from sampler.store.build import file_crc32  # the builder's own checksum

    check_files(folder, manifest, refuse)
    for relative, meta in sorted(manifest["files"].items()):
        if file_crc32(os.path.join(folder, relative)) != meta["crc32"]:
            raise refuse(f"damaged: {relative} does not match its checksum")


# ---- arrays --------------------------------------------------------------------------------

class Checker:
    """The rules of one store's arrays; each failure is StoreDamaged naming the file.
    `file_of(array)` names the file an array was mapped from."""

    def __init__(self, folder: str, file_of: Callable[[np.ndarray], str]):
        self.folder, self.file_of = folder, file_of

    def fail(self, array: np.ndarray, problem: str) -> StoreDamaged:
        return damaged(self.folder, self.file_of(array), problem)

    def kind(self, array: np.ndarray, kinds: str, what: str, expected: str,
             itemsize: int | None = None):
        if array.dtype.kind not in kinds or (itemsize and array.dtype.itemsize != itemsize):
            raise self.fail(array, f"{what}: {array.dtype.str} values, {expected} expected")

    def length(self, array: np.ndarray, expected: int, what: str) -> None:
        if array.ndim == 0 or len(array) != expected:
            shape = list(array.shape)
            raise self.fail(array, f"has shape {shape}, {what} ({expected}) expected")

    def codes(self, array: np.ndarray, limit: int, what: str, increasing: bool = False
              ) -> None:
        """Integer codes in [0, limit), strictly increasing if asked."""
        self.kind(array, "iu", what, "integer codes")
        previous = None
        for block in _blocks(array):
            low, high = int(block.min()), int(block.max())
            if low < 0 or high >= limit:
                bad = low if low < 0 else high
                raise self.fail(array, f"{what}: code {bad} is out of range (0 to {limit - 1})")
            if increasing and (np.any(block[1:] <= block[:-1]) or (
                    previous is not None and block[0] <= previous)):
                raise self.fail(array, f"{what}: not strictly increasing")
            previous = block[-1]

    def splits(self, array: np.ndarray, rows: int, total: int, what: str) -> None:
        """Row splits: rows + 1 integers from 0, never decreasing, ending at `total`."""
        self.kind(array, "iu", what, "integers")
        self.length(array, rows + 1, f"{what}: one more than the rows")
        if int(array[0]) != 0 or int(array[-1]) != total:
            raise self.fail(array, f"{what}: run from {int(array[0])} to {int(array[-1])}, "
                                   f"0 to {total} expected")
        previous = None
        for block in _blocks(array):
            if np.any(block[1:] < block[:-1]) or (previous is not None and block[0] < previous):
                raise self.fail(array, f"{what}: decrease")
            previous = block[-1]

    def sorted_names(self, names: np.ndarray) -> None:
        self.kind(names, "S", "node ids", "byte strings")
        if names.ndim != 1:
            raise self.fail(names, "node ids are one-dimensional")
        previous = None
        for block in _blocks(names, BLOCK // 8):
            if np.any(block[1:] <= block[:-1]) or (previous is not None and block[0] <= previous):
                raise self.fail(names, "node ids are not sorted and distinct")
            previous = block[-1]

    def finite(self, array: np.ndarray, what: str, lowest_allowed: bool = False) -> None:
        """Floats that are numbers (`lowest_allowed`: -inf too: a missing time)."""
        if array.dtype.kind != "f":
            return
        for block in _blocks(array):
            bad = np.isnan(block) | (block == np.inf) if lowest_allowed else ~np.isfinite(block)
            if bad.any():
                raise self.fail(array, f"{what}: {block[np.argmax(bad)]} is not a finite number")

    def fingerprints(self, array: np.ndarray, count: int, what: str) -> None:
        self.kind(array, "u", what, "uint64 fingerprints", 8)
        self.length(array, count, what)

    def times(self, array: np.ndarray, count: int, dtype: str, what: str) -> None:
        if array.dtype != np.dtype(dtype):
            raise self.fail(array, f"{what}: {array.dtype.str} values, {dtype} times expected")
        self.length(array, count, what)
        self.finite(array, what, lowest_allowed=True)

    def feature(self, arrays: dict[str, np.ndarray], description: dict, rows: int,
                dtype: np.dtype | None, shape: tuple[int, ...] | None, what: str) -> None:
        """One feature column's arrays (layout.feature_arrays) before they are used:
        `rows` items, ragged lengths adding up, string offsets inside the blob, the
        schema's dtype and (dense dimensions) shape."""
        count = rows
        for i in range(description["ragged"]):
            lengths = arrays[f"lengths{i}"]
            self.kind(lengths, "iu", f"{what}: row lengths", "integers")
            self.length(lengths, count, f"{what}: one length per row")
            if len(lengths) and int(lengths.min()) < 0:
                raise self.fail(lengths, f"{what}: a negative row length")
            count = int(lengths.sum(dtype=np.int64))
        if "strings" in description:
            blob, offsets = arrays["blob"], arrays["offsets"]
            self.kind(blob, "u", f"{what}: string bytes", "uint8", 1)
            inner = int(np.prod(description["strings"], dtype=np.int64))
            self.length(offsets, count * inner + 1, f"{what}: one more offset than strings")
            self.splits(offsets, count * inner, len(blob), f"{what}: string offsets")
            return
        values = arrays["values"]
        self.length(values, count, f"{what}: values")
        if dtype is not None and dtype != np.dtype(object) and values.dtype != dtype:
            raise self.fail(values, f"{what}: holds {values.dtype.str}, the schema declares "
                                    f"{dtype.str}")
        if shape is not None and description["ragged"] == 0 and -1 not in shape and \
                tuple(values.shape[1:]) != tuple(shape):
            raise self.fail(values, f"{what}: items of shape {list(values.shape[1:])}, the "
                                    f"schema declares {list(shape)}")


def _blocks(array: np.ndarray, size: int = BLOCK):
    for low in range(0, len(array), size):
        yield array[low:low + size]


def check_adjacency(check: Checker, bucket, n_sources: int, n_targets: int, where: str
                    ) -> None:
    """One layout of an edge set (sampler.core.adjacency.AdjacencyBucket, ids as codes);
    its times are checked before they are converted (`Checker.times`)."""
    edges = len(bucket.target_codes)
    check.codes(bucket.sources, n_sources, f"{where}: sources", increasing=True)
    check.splits(bucket.row_splits, len(bucket.sources), edges, f"{where}: row splits")
    check.codes(bucket.target_ids, n_targets, f"{where}: targets", increasing=True)
    check.codes(bucket.target_codes, len(bucket.target_ids), f"{where}: target codes")
    check.kind(bucket.rows, "i", f"{where}: row ids", "int64", 8)
    check.length(bucket.rows, edges, f"{where}: one row id per edge")
    check.fingerprints(bucket.source_fingerprints, len(bucket.sources),
                       f"{where}: one fingerprint per source")
    if bucket.target_fingerprints is not None:
        check.fingerprints(bucket.target_fingerprints, len(bucket.target_ids),
                           f"{where}: one fingerprint per target")
    if bucket.weights is not None:
        check.kind(bucket.weights, "f", f"{where}: weights", "floats")
        check.length(bucket.weights, edges, f"{where}: one weight per edge")
        check.finite(bucket.weights, f"{where}: weights")
    long_rows = bucket.long_rows
    if long_rows is not None:
        check.codes(long_rows.rows, len(bucket.sources), f"{where}: long rows",
                    increasing=True)
        check.splits(long_rows.chunk_offsets, len(long_rows.rows), len(long_rows.chunk_starts),
                     f"{where}: chunk offsets")
        check.length(long_rows.chunk_ends, len(long_rows.chunk_starts),
                     f"{where}: one end per chunk")
        for array in (long_rows.chunk_starts, long_rows.chunk_ends):
            check.codes(array, edges + 1, f"{where}: chunk bounds")
        row_of_chunk = np.repeat(long_rows.rows, np.diff(long_rows.chunk_offsets))
        if np.any(long_rows.chunk_starts > long_rows.chunk_ends) or \
                np.any(long_rows.chunk_starts < bucket.row_splits[row_of_chunk]) or \
                np.any(long_rows.chunk_ends > bucket.row_splits[row_of_chunk + 1]):
            raise check.fail(long_rows.chunk_starts, f"{where}: a chunk outside its row")


def check_node_table(check: Checker, codes: np.ndarray, n_names: int, where: str) -> None:
    check.codes(codes, n_names, f"{where}: table codes", increasing=True)


def checked_features(check: Checker, features: dict, get: Callable[[str, str], np.ndarray],
                     rows: int, declared: Callable[[str], tuple], where: str,
                     build: Callable[[dict, Callable], FeatureValues]) -> dict:
    """Each feature's arrays checked, then built (layout.feature_values). `get(prefix,
    suffix)` maps an array; `declared(name)` gives the schema's (dtype, shape) or
    (None, None)."""
    built = {}
    for name, description in features.items():
        suffixes = [f"lengths{i}" for i in range(description["ragged"])] + (
            ["blob", "offsets"] if "strings" in description else ["values"])
        arrays = {s: get(description["prefix"], s) for s in suffixes}
        dtype, shape = declared(name)
        check.feature(arrays, description, rows, dtype, shape, f"{where} feature '{name}'")
        built[name] = build(description, arrays.__getitem__)
    return built
