"""Per-edge arrays of `synthetic-graph` kept on disk, and the block-wise steps over them.

`write_streamed` (pipelines/synthetic.py) draws one edge set at a time, and the draw
(shuffles, a sort to find repeated pairs, grouping by source) needs the set's arrays
whole. A `Scratch` folder holds them as memory-mapped files instead of on the heap: their
pages are the page cache's, which the kernel writes back and evicts under a memory cap,
so the process's own (anonymous) memory stays arrays of node-set size plus blocks of
`block` edges. `IN_MEMORY` is the same interface over plain arrays (`generate()`), so the
graph in memory and the streamed one run the same code and draw the same numbers.

Every function here gives exactly what its whole-array numpy counterpart gives:
  repeat_into          np.repeat(np.arange(len(counts)), counts), written block by block
  ranges_into          np.concatenate([np.arange(s, s + n) for s, n in zip(starts, lengths)])
  gather               array[positions]
  choice_no_replace    rng.choice(n, size, replace=False) (numpy's tail shuffle, without
                       an arange of n on the heap when that is the route numpy takes)
  stable_order         np.argsort(values, kind="stable") for small ints (a counting sort)
  sorted_keys          np.sort(a * n + b)
  repeated_runs        np.unique(keys, return_counts=True), the values counted twice or more
and numpy's own `Generator.shuffle` and `ndarray.sort` work in place on a mapped array
(given as a plain ndarray view, so that shuffle takes its fast path: the same draws).
"""
from __future__ import annotations

import os
import shutil
import tempfile

import numpy as np


class Scratch:
    """A folder of scratch arrays (created inside `parent`, named after this process,
    removed by `close()`; the folders there of processes that are gone are removed
    first), or, with `parent` None, plain arrays in memory."""

    def __init__(self, parent: str | None):
        if parent is not None:
            remove_stale(parent)
        self.folder = None if parent is None else tempfile.mkdtemp(
            prefix=f"{PREFIX}{os.getpid()}-", dir=parent)
        self._files: dict[int, tuple[np.memmap, str]] = {}  # id(map): (map, path)
        self._count = 0

    def empty(self, length: int, dtype) -> np.ndarray:
        """An uninitialised 1-d array; on disk when this scratch has a folder."""
        if self.folder is None or length == 0:  # mmap cannot map an empty file
            return np.empty(length, dtype=dtype)
        self._count += 1
        path = os.path.join(self.folder, f"{self._count:05d}.bin")
        mapped = np.memmap(path, dtype=dtype, mode="w+", shape=(length,))
        self._files[id(mapped)] = (mapped, path)
        # A plain ndarray over the map: numpy's fast paths (shuffle, sort) take it.
        return mapped.view(np.ndarray)

    def free(self, *arrays: np.ndarray) -> None:
        """Gives back the disk of arrays from `empty`, or views of them (their pages go
        with the last view); other arrays are left alone."""
        for array in arrays:
            base = array
            while base is not None:
                entry = self._files.get(id(base))
                if entry is not None and entry[0] is base:
                    del self._files[id(base)]
                    os.unlink(entry[1])
                    break
                base = getattr(base, "base", None)

    def close(self) -> None:
        """Removes the folder and every array still in it."""
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)
            self._files.clear()

    def __enter__(self) -> "Scratch":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


IN_MEMORY = Scratch(None)
PREFIX = ".synthetic-scratch-"  # then the pid of the process that made it, "-", a random tail


def remove_stale(parent: str) -> list[str]:
    """Removes the scratch folders in `parent` whose process is gone (killed before it
    could remove its own: SIGKILL, the kernel's out-of-memory kill); returns their names.
    A folder of a running process, or any other entry, is left alone."""
    removed = []
    for name in os.listdir(parent):
        pid, dash, _ = name[len(PREFIX):].partition("-")
        path = os.path.join(parent, name)
        if not (name.startswith(PREFIX) and pid.isdigit() and dash) or os.path.islink(path) \
                or not os.path.isdir(path) or int(pid) == os.getpid() or _alive(int(pid)):
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(name)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process
        return True
    return True


def blocks(n: int, block: int):
    """(lo, hi) of consecutive blocks of at most `block` rows covering 0..n."""
    for lo in range(0, n, block):
        yield lo, min(n, lo + block)


def repeat_into(out: np.ndarray, counts: np.ndarray, block: int) -> np.ndarray:
    """out[:] = np.repeat(np.arange(len(counts)), counts), a block of `out` at a time."""
    ends = np.cumsum(counts)
    for lo, hi in blocks(len(out), block):
        first = int(np.searchsorted(ends, lo, side="right"))
        last = int(np.searchsorted(ends, hi - 1, side="right"))
        starts = np.maximum(ends[first:last + 1] - counts[first:last + 1], lo)
        inside = np.minimum(ends[first:last + 1], hi) - starts
        out[lo:hi] = np.repeat(np.arange(first, last + 1, dtype=out.dtype), inside)
    return out


def ranges_into(out: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
                block: int) -> np.ndarray:
    """out[:] = the ranges starts[k] .. starts[k] + lengths[k] - 1 one after the other,
    a block of `out` at a time."""
    ends = np.cumsum(lengths)
    for lo, hi in blocks(len(out), block):
        first = int(np.searchsorted(ends, lo, side="right"))
        last = int(np.searchsorted(ends, hi - 1, side="right"))
        begin = ends[first:last + 1] - lengths[first:last + 1]
        inside = np.minimum(ends[first:last + 1], hi) - np.maximum(begin, lo)
        which = np.repeat(np.arange(first, last + 1), inside)
        out[lo:hi] = starts[which] + np.arange(lo, hi) - (ends[which] - lengths[which])
    return out


def gather(array: np.ndarray, positions: np.ndarray, scratch: "Scratch",
           block: int) -> np.ndarray:
    """array[positions] in a scratch array, a block at a time."""
    out = scratch.empty(len(positions), array.dtype)
    for lo, hi in blocks(len(positions), block):
        out[lo:hi] = array[positions[lo:hi]]
    return out


def is_sorted(values: np.ndarray, block: int) -> bool:
    """values[i] <= values[i + 1] everywhere, looked at a block at a time."""
    return all(bool((values[lo + 1:hi + 1] >= values[lo:hi]).all())
               for lo, hi in blocks(len(values) - 1, block))


def positions_where(test, n: int, block: int) -> np.ndarray:
    """np.flatnonzero of a per-row test, `test(lo, hi)` giving rows lo:hi's booleans."""
    return np.concatenate([np.zeros(0, np.int64)] + [
        lo + np.flatnonzero(test(lo, hi)) for lo, hi in blocks(n, block)])


def stable_order(values: np.ndarray, splits: np.ndarray, out: np.ndarray,
                 block: int) -> np.ndarray:
    """out[:] = np.argsort(values, kind="stable"), for ints in 0..len(splits) - 2 whose
    group starts are `splits` (the cumulative counts, from 0): a counting sort, one block
    at a time, that places each row after the earlier rows of its value."""
    taken = splits[:-1].copy()  # the next free place of each value
    for lo, hi in blocks(len(values), block):
        part = values[lo:hi]
        order = np.argsort(part, kind="stable")
        grouped = part[order]
        first = np.searchsorted(grouped, grouped, side="left")  # each run's start
        out[taken[grouped] + np.arange(len(grouped)) - first] = lo + order
        taken += np.bincount(part, minlength=len(taken))
    return out


def sorted_keys(a: np.ndarray, b: np.ndarray, n: int, scratch: Scratch,
                block: int) -> np.ndarray:
    """np.sort(a * n + b) (int64) in a scratch array, filled a block at a time and sorted
    in place."""
    keys = scratch.empty(len(a), np.int64)
    for lo, hi in blocks(len(a), block):
        np.multiply(a[lo:hi], n, out=keys[lo:hi])
        keys[lo:hi] += b[lo:hi]
    keys.sort()
    return keys


def repeated_runs(keys: np.ndarray, scratch: "Scratch",
                  block: int) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct values that occur more than once in sorted `keys`, how many times
    each occurs), both scratch arrays, found a block at a time."""
    def starts(lo, hi):  # rows lo:hi that begin a run of two or more
        after = keys[lo + 1:hi + 1] == keys[lo:hi]
        before = np.zeros(hi - lo, bool)
        before[1:] = after[:-1]
        if lo:
            before[0] = keys[lo] == keys[lo - 1]
        return after & ~before
    pairs = len(keys) - 1
    count = sum(int(np.count_nonzero(starts(lo, hi))) for lo, hi in blocks(pairs, block))
    values, counts = scratch.empty(count, np.int64), scratch.empty(count, np.int64)
    at = 0
    for lo, hi in blocks(pairs, block):
        found = keys[lo:hi][starts(lo, hi)]
        values[at:at + len(found)] = found
        at += len(found)
    for lo, hi in blocks(count, block):
        counts[lo:hi] = (np.searchsorted(keys, values[lo:hi], side="right")
                         - np.searchsorted(keys, values[lo:hi], side="left"))
    return values, counts


def count_repeats(keys: np.ndarray, block: int) -> int:
    """len(keys) - len(np.unique(keys)) for sorted `keys`."""
    return sum(int(np.count_nonzero(keys[lo + 1:hi + 1] == keys[lo:hi]))
               for lo, hi in blocks(len(keys) - 1, block))


# numpy's Generator.choice(n, size, replace=False) (shuffle=True): for n > 10000 and
# size > n // 50 it shuffles the tail of arange(n) in place (a Fisher-Yates step for
# i = n - 1 down to max(n - size, 1), j = a bounded draw in 0..i) and returns its last
# `size` entries; otherwise Floyd's algorithm, in memory of `size`.
_CHOICE_CUTOFF = 50
_CHOICE_SMALL = 10000


def choice_no_replace(rng: np.random.Generator, n: int, size: int, scratch: Scratch,
                      block: int) -> np.ndarray:
    """rng.choice(n, size, replace=False), the same numbers and the same draws, with
    numpy's arange(n) in a scratch array (in memory: numpy's own call)."""
    if scratch.folder is None or not (n > _CHOICE_SMALL and size > n // _CHOICE_CUTOFF):
        return rng.choice(n, size, replace=False)
    index = scratch.empty(n, np.int64)
    for lo, hi in blocks(n, block):
        index[lo:hi] = np.arange(lo, hi, dtype=np.int64)
    first = max(n - size, 1)
    for top in range(n - 1, first - 1, -block):
        steps = np.arange(top, max(top - block, first - 1), -1, dtype=np.int64)
        # An array of bounds draws element by element: numpy's bounded draw for each i.
        picks = rng.integers(0, steps, endpoint=True, dtype=np.int64)
        for i, j in zip(steps.tolist(), picks.tolist()):
            index[i], index[j] = index[j], index[i]
    chosen = np.array(index[n - size:])
    scratch.free(index)
    return chosen
