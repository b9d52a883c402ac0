"""A store's .npy files written front to back, and read a page at a time, never mapped.

`NpyAppender` writes an array as slices arrive, np.save's bytes exactly, whether or not
its length is known in advance. `NpyPages` looks values up in a sorted .npy file and
gathers rows of one by position, reading only the pages that hold them (plain reads
into memory: a mapping's touched pages would count in the build's resident memory).
Both serve sampler.store's bounded build: the node sets' names, fingerprints,
timestamps and codes are arrays of node-set size, looked up by the edges in sorted
order, so each page is read about once per pass.
"""
from __future__ import annotations

import os
import shutil

import numpy as np

from sampler.core.arrays import byte_keys

PAGE_BYTES = 1 << 20


def npy_header(dtype, shape: tuple) -> bytes:
    """The bytes np.save writes before an array's data (format 1.0)."""
    import io

    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {
        "descr": np.lib.format.dtype_to_descr(np.dtype(dtype)), "fortran_order": False,
        "shape": tuple(int(s) for s in shape)})
    return buffer.getvalue()


class NpyAppender:
    """One .npy file, rows appended in order. `rows`, when given, is the final length:
    the header is written first and checked at the end. Otherwise a header for an
    unknown length is reserved and rewritten in place at `close` when the final one
    has the same size (np.save pads headers to 64 bytes, so it nearly always has),
    else the data is copied behind the right header."""

    def __init__(self, path: str, dtype, inner: tuple = (), rows: int | None = None):
        self.path, self.dtype, self.inner = path, np.dtype(dtype), tuple(inner)
        self.expected = rows
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self.file = open(path, "wb")
        self.header = npy_header(self.dtype, (rows if rows is not None else 0,) + self.inner)
        self.file.write(self.header)
        self.rows = 0

    def append(self, values: np.ndarray) -> None:
        values = np.ascontiguousarray(values, dtype=self.dtype)
        if values.shape[1:] != self.inner:
            raise AssertionError(f"{self.path}: rows of shape {values.shape[1:]}, expected "
                                 f"{self.inner}")
        self.file.write(values.data)
        self.rows += len(values)

    def close(self) -> tuple:
        """Finishes the file; returns its shape."""
        shape = (self.rows,) + self.inner
        if self.expected is not None:
            self.file.close()
            if self.rows != self.expected:
                raise AssertionError(f"{self.path}: {self.rows} rows written, "
                                     f"{self.expected} announced")
            return shape
        header = npy_header(self.dtype, shape)
        if len(header) == len(self.header):
            self.file.seek(0)
            self.file.write(header)
            self.file.close()
            return shape
        self.file.close()
        moved = self.path + ".data"
        os.replace(self.path, moved)
        with open(moved, "rb") as source, open(self.path, "wb") as target:
            source.seek(len(self.header))
            target.write(header)
            shutil.copyfileobj(source, target, 16 << 20)
        os.remove(moved)
        return shape

    def abandon(self) -> None:
        self.file.close()


class NpyPages:
    """A 1-D .npy file read by pages: `gather(positions)` and, for a sorted file,
    `positions(values)` (each value's index; every value must be present)."""

    def __init__(self, path: str, page_bytes: int = PAGE_BYTES):
        self.path = path
        with open(path, "rb") as f:
            version = np.lib.format.read_magic(f)
            read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                           else np.lib.format.read_array_header_2_0)
            shape, fortran, dtype = read_header(f)
            self.offset = f.tell()
        if len(shape) != 1 or fortran:
            raise ValueError(f"{path}: not a 1-D array")
        self.dtype, self.length = dtype, shape[0]
        self.page_rows = max(1, page_bytes // max(1, dtype.itemsize))
        self.pages = -(-self.length // self.page_rows)
        self._firsts: np.ndarray | None = None
        self._pages: dict[int, tuple] = {}  # the two pages read last, with their keys

    def read(self, lo: int, hi: int) -> np.ndarray:
        """Rows lo:hi, read into memory."""
        hi = min(hi, self.length)
        if hi <= lo:
            return np.zeros(0, self.dtype)
        with open(self.path, "rb") as f:
            f.seek(self.offset + lo * self.dtype.itemsize)
            return np.fromfile(f, self.dtype, hi - lo)

    def _page(self, page: int) -> np.ndarray:
        return self.read(page * self.page_rows, (page + 1) * self.page_rows)

    def gather(self, positions: np.ndarray) -> np.ndarray:
        """The rows at `positions` (any order), reading each page that holds one once."""
        positions = np.asarray(positions, np.int64)
        result = np.empty(len(positions), self.dtype)
        for page, where in self._by_page(positions // self.page_rows):
            result[where] = self._page(page)[positions[where] - page * self.page_rows]
        return result

    def find(self, values: np.ndarray) -> np.ndarray:
        """Each value's index in this sorted file, -1 where it is absent (int64)."""
        if self._firsts is None:  # one value per page: an index of node-set size / page
            self._firsts = np.concatenate(
                [self.read(p * self.page_rows, p * self.page_rows + 1)
                 for p in range(self.pages)]) if self.pages else np.zeros(0, self.dtype)
        values = np.asarray(values)
        result = np.full(len(values), -1, np.int64)
        pages = np.maximum(np.searchsorted(self._firsts, values, side="right") - 1, 0)
        for page, where in self._by_page(pages):
            found = self._find_on(page, values[where])
            result[where] = np.where(found >= 0, page * self.page_rows + found, -1)
        return result

    def _find_on(self, page: int, wanted: np.ndarray) -> np.ndarray:
        """Positions of values on one page, -1 where absent. Byte strings are compared as
        their ByteKeys where page and values share the page's prefix (each page's keys
        made once: sorted lookups come back to the same page block after block)."""
        if page not in self._pages:
            chunk = self._page(page)
            self._pages = {page: (chunk, byte_keys(chunk) if chunk.dtype.kind == "S" else None),
                           **dict(list(self._pages.items())[:1])}
        chunk, keys = self._pages[page]
        ordered = chunk
        if keys is not None:
            query = byte_keys(wanted, keys.prefix)
            if query is not None:
                ordered, wanted = keys.keys, query.keys
        found = np.minimum(np.searchsorted(ordered, wanted), len(ordered) - 1)
        return np.where(ordered[found] == wanted, found, -1)

    def positions(self, values: np.ndarray) -> np.ndarray:
        """Each value's index in this sorted file; every value must be in it."""
        result = self.find(values)
        if (result < 0).any():
            raise KeyError(f"{self.path}: a value looked up is not in the file")
        return result

    def _by_page(self, pages: np.ndarray):
        """(page, the positions of the entries on it) for each page an entry is on."""
        if not len(pages) or not self.length:
            return
        if bool((pages[1:] >= pages[:-1]).all()):  # sorted lookups: no sort needed
            order = None
            ordered = pages
        else:
            order = np.argsort(pages, kind="stable")
            ordered = pages[order]
        cuts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1], True])
        for a, b in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
            yield int(ordered[a]), (slice(a, b) if order is None else order[a:b])


class ConcatFiles:
    """The arrays of one store column (a feature's `values`, `lengths0`, `blob`,
    `offsets`..., as sampler.store.layout names them) written chunk after chunk: each
    array is the concatenation of the chunks' arrays, except the `offsets` of byte
    strings, which continue from the bytes before (each chunk's start from 0)."""

    def __init__(self, folder: str, prefix: str, register):
        self.folder, self.prefix, self.register = folder, prefix, register
        self.files: dict[str, NpyAppender] = {}
        self.offset_base: dict[str, int] = {}

    def append(self, arrays: dict[str, np.ndarray]) -> None:
        for suffix, values in arrays.items():
            relative = f"{self.prefix}{suffix}.npy"
            if relative not in self.files:
                self.files[relative] = NpyAppender(os.path.join(self.folder, relative),
                                                   values.dtype, values.shape[1:])
            elif suffix.endswith("offsets"):
                values = values[1:] + self.offset_base[suffix]
            if suffix.endswith("offsets") and len(values):
                self.offset_base[suffix] = int(values[-1])
            self.files[relative].append(values)

    def close(self) -> None:
        for relative, appender in self.files.items():
            self.register(relative, appender.dtype, appender.close())
        self.files = {}

    def abandon(self) -> None:
        for appender in self.files.values():
            appender.abandon()
