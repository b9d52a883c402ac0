"""Gathers from a mapped store larger than memory: the pages a gather needs are asked
for all at once before it reads them, instead of faulted in one at a time.

A store larger than the memory a job may use is read at random (`mapped.advise_random`):
a hop gathers thousands of rows spread over arrays larger than the page cache the
job's cgroup leaves it, and each row not cached is a major page fault. On this
project's test machine (a VM with a virtio disk) a fault costs about 20 us of kernel
time and waits for its own read, so the disk works on one page at a time, about 80 us
each. Asking the kernel first for every page of the gather (MADV_WILLNEED: readahead
of exactly those pages, queued together, which returns without waiting) turns the
faults into minor ones on pages already read or in flight: 20,000 random rows of the
scale-1.0 store's paper features in a 100 MB cgroup took 6 us of CPU and 12 us of wall
each, against 32 and 130 faulted (benchmarks in docs/store.md, "Larger than memory").

`prefetching(array)` is a view of a mapped array whose gathers (`np.take`, which the
core's gathers use, and indexing by an integer array) ask for their pages first; the
values are the same bytes, read from the same mapping. Everything else it does is a
plain ndarray's: numpy's functions and ufuncs see plain arrays, and every array they
return is one.
"""
from __future__ import annotations

import ctypes
import mmap
import os
import platform

import numpy as np

PAGE = mmap.PAGESIZE
# Fewer indices than this are gathered as they are: a gather so small faults in a
# handful of pages, cheaper than sorting its pages and asking for them.
MIN_INDICES = 8
# Indices whose pages are asked for at once: at most 8 MB of 4 KB pages, and the gaps
# of at most GAP_PAGES that join their runs.
PIECE = 1024
# Pages asked for with their neighbours when at most this many lie between them: a
# range is read as one request, and 16 pages (64 KB) read in order cost the disk here
# about what one random page does. The scale-10 store under a 3 GB cap gave the same
# rate from 8 to 256 (within the noise), and 10-15% less with none.
GAP_PAGES = 16


class _Pages:
    """Where a mapped array's bytes are in its mapping, to ask for their pages."""

    def __init__(self, mapping: mmap.mmap, address: int, start: int, row_bytes: int,
                 rows: int):
        self.mapping, self.address = mapping, address  # the mapping and where it is
        self.start = start  # byte of the mapping where row 0 starts
        self.row_bytes, self.rows = row_bytes, rows

    def will_need(self, indices: np.ndarray) -> None:
        """Asks the kernel for every page holding a row of `indices` (in range; others
        are left to the gather, which raises as numpy does)."""
        rows = indices.astype(np.int64, copy=False).ravel()
        rows = np.where(rows < 0, rows + self.rows, rows)
        rows = rows[(rows >= 0) & (rows < self.rows)]
        if not len(rows):
            return
        starts, stops = page_runs(self.start + rows * self.row_bytes, self.row_bytes,
                                  GAP_PAGES)
        starts *= PAGE
        ask_for_pages(self, starts, np.minimum(stops * PAGE, len(self.mapping)) - starts)


def ask_for_pages(pages: _Pages, starts: np.ndarray, lengths: np.ndarray) -> None:
    """MADV_WILLNEED on each range [starts[i], starts[i] + lengths[i]) of the mapping:
    all of them in one system call per 1,024 (process_madvise, Linux 5.10 and later),
    else one call each (a call from Python costs a few microseconds, as much as the
    page it asks for). A system that refuses the advice leaves the faults to read."""
    if not len(starts):
        return
    if _PROCESS_MADVISE.usable():
        vectors = np.empty((len(starts), 2), np.uint64)  # struct iovec: base, length
        vectors[:, 0] = pages.address + starts
        vectors[:, 1] = lengths
        if _PROCESS_MADVISE.advise(vectors):
            return
    try:
        for start, length in zip(starts.tolist(), lengths.tolist()):
            pages.mapping.madvise(mmap.MADV_WILLNEED, start, length)
    except OSError:
        pass


class _ProcessMadvise:
    """process_madvise(2) on this process, through libc's syscall(): one call for many
    ranges. Usable once its first call succeeded; never again once one failed."""

    NUMBER = {"x86_64": 440, "aarch64": 440}  # the same on both (asm-generic number)
    MAX_RANGES = 1024  # UIO_MAXIOV

    def __init__(self):
        self._state = None  # None: untried; False: unusable; else (pid, pidfd, syscall)

    def usable(self) -> bool:
        if self._state is None or (self._state and self._state[0] != os.getpid()):
            self._state = self._open()  # a forked child opens its own pidfd
        return bool(self._state)

    def _open(self):
        number = self.NUMBER.get(platform.machine())
        if number is None or not hasattr(os, "pidfd_open"):
            return False
        try:
            syscall = ctypes.CDLL(None, use_errno=True).syscall
            syscall.restype = ctypes.c_long
            return os.getpid(), os.pidfd_open(os.getpid()), syscall, number
        except (OSError, AttributeError):
            return False

    def advise(self, vectors: np.ndarray) -> bool:
        _, pidfd, syscall, number = self._state
        for lo in range(0, len(vectors), self.MAX_RANGES):
            part = np.ascontiguousarray(vectors[lo:lo + self.MAX_RANGES])
            if syscall(ctypes.c_long(number), ctypes.c_long(pidfd),
                       ctypes.c_void_p(part.ctypes.data), ctypes.c_size_t(len(part)),
                       ctypes.c_int(mmap.MADV_WILLNEED), ctypes.c_uint(0)) < 0:
                self._state = False
                return False
        return True


_PROCESS_MADVISE = _ProcessMadvise()


def page_runs(row_starts: np.ndarray, row_bytes: int, gap: int = 0
              ) -> tuple[np.ndarray, np.ndarray]:
    """The pages holding rows of `row_bytes` bytes that start at these byte offsets, as
    runs of consecutive pages [starts[i], stops[i]), ascending, each page once; runs
    at most `gap` pages apart are one run, the pages between them included."""
    first, last = row_starts // PAGE, (row_starts + row_bytes - 1) // PAGE
    if row_bytes <= PAGE:  # a row is on one page or two: the pages, then their runs
        pages = np.unique(np.concatenate([first, last]))
        new_run = np.ones(len(pages), bool)
        new_run[1:] = pages[1:] > pages[:-1] + 1 + gap
        ends = pages
    else:  # rows of several pages: runs of overlapping or adjacent rows
        order = np.argsort(first)
        pages, ends = first[order], np.maximum.accumulate(last[order])
        new_run = np.ones(len(pages), bool)
        new_run[1:] = pages[1:] > ends[:-1] + 1 + gap
    starts = pages[new_run]
    stops = np.append(ends[np.flatnonzero(new_run)[1:] - 1], ends[-1:]) + 1
    return starts, stops


class PrefetchingArray(np.ndarray):
    """A mapped array whose gathers ask for their pages first (see the module)."""

    _pages: _Pages | None = None  # set on the view `prefetching` makes; None on others

    def take(self, indices, axis=None, out=None, mode="raise"):
        plain = self.view(np.ndarray)
        indices = np.asarray(indices)
        if self._pages is not None and out is None and (axis == 0 or axis is None
                                                        and self.ndim == 1) \
                and indices.ndim == 1 and indices.dtype.kind in "iu" \
                and len(indices) >= MIN_INDICES:
            return self._gather(lambda part: plain.take(part, axis=0, mode=mode), indices)
        return np.asarray(plain.take(indices, axis=axis, out=out, mode=mode))

    def __getitem__(self, key):
        plain = self.view(np.ndarray)
        if self._pages is not None and isinstance(key, np.ndarray) and key.ndim == 1 \
                and key.dtype.kind in "iu" and len(key) >= MIN_INDICES:
            return self._gather(plain.__getitem__, key)
        return plain[key]

    def _gather(self, gather, indices: np.ndarray) -> np.ndarray:
        """gather(indices), in the array's order: the indices sorted, PIECE at a time,
        each piece's pages asked for first (the pages of a whole large gather could
        outnumber what the page cache may hold, and be evicted before they are read).
        Sorted, a piece's rows lie in one stretch of the array, so its pages are few
        runs, read in order (and the gap pages between runs close together are read
        with them: page_runs); the values are then put back in the indices' order."""
        if len(indices) <= PIECE:
            self._pages.will_need(indices)
            return gather(indices)
        order = np.argsort(indices)  # equal indices give equal values: any order
        ordered = indices[order]
        out = None
        for lo in range(0, len(ordered), PIECE):
            part = ordered[lo:lo + PIECE]
            self._pages.will_need(part)
            values = gather(part)
            if out is None:
                out = np.empty((len(indices),) + values.shape[1:], values.dtype)
            out[order[lo:lo + PIECE]] = values
        return out

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = tuple(_plain(x) for x in inputs)
        if "out" in kwargs:
            kwargs["out"] = tuple(_plain(x) for x in kwargs["out"])
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        if func is np.take and args and args[0] is self:
            return self.take(*args[1:], **kwargs)
        return func(*_plain(args), **_plain(kwargs))

    def __reduce__(self):  # pickled (sent to another process) as the plain array it holds
        return np.asarray(self).__reduce__()


def _plain(value):
    """`value` with every PrefetchingArray in it (in tuples, lists and dicts) plain."""
    if isinstance(value, PrefetchingArray):
        return value.view(np.ndarray)
    if type(value) in (tuple, list):  # (not a named tuple: its fields stay as they are)
        return type(value)(_plain(v) for v in value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def mapping_of(array: np.ndarray) -> mmap.mmap | None:
    """The mmap under a mapped array (np.memmap's, under any views of it), or None."""
    base = array
    while base is not None:
        if isinstance(base, mmap.mmap):
            return base
        mapping = getattr(base, "_mmap", None)  # np.memmap's
        if isinstance(mapping, mmap.mmap):
            return mapping
        base = getattr(base, "base", None)
    return None


def prefetching(array: np.ndarray) -> np.ndarray:
    """A view of a mapped, C-contiguous array whose gathers ask for their pages first;
    any other array as it is (and where madvise is missing)."""
    mapping = mapping_of(array)
    if mapping is None or not hasattr(mmap, "MADV_WILLNEED") or array.ndim == 0 \
            or not array.flags.c_contiguous or array.nbytes == 0:
        return array
    mapped_at = np.frombuffer(mapping, np.uint8).ctypes.data
    view = array.view(PrefetchingArray)
    view._pages = _Pages(mapping, mapped_at, array.ctypes.data - mapped_at,
                         array.strides[0] if array.ndim > 1 else array.itemsize, len(array))
    return view
