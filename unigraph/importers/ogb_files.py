"""The files of an OGB dataset folder, read with Arrow, each problem one line naming the file.

An OGB dataset folder is what the `ogb` package unzips (its `ogb/io/read_graph_raw.py`
reads it): headerless gzipped CSV files of numbers (`raw/edge.csv.gz`: one edge a line,
`source,target`; `raw/node-feat.csv.gz`: one node's features a line; counts in
`num-node-list.csv.gz` ...), a few with a header row (`raw/num-node-dict.csv.gz`: node
types, then their counts), `.npz` archives for the binary datasets (`raw/data.npz`) and
PyTorch files for link prediction splits (`split/<name>/train.pt`).

Arrow parses the CSV files (and inflates them) in blocks, so a table of any size streams
through; `.npz` members are read by rows from the archive (their `.npy` header is checked
against the member's size first), and `.pt` files with `torch.load(weights_only=True)`,
which loads tensors and plain containers and never runs code from the file. A declared
size (a node count, an array's shape) is never allocated before it is checked against
what the files hold.
"""
from __future__ import annotations

import gzip
import os
import warnings
import zipfile
from typing import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv

from unigraph.errors import TableError, one_line, require_extra

BLOCK_BYTES = 16 << 20          # CSV text parsed per block
NPY_ROWS = 1 << 20              # rows of an .npz member read at a time
MAX_COUNT = 1 << 40             # a node or edge count beyond this is not a count (RowIds)
_FIRST_LINE_LIMIT = 1 << 24


def _fail(path: str, error: Exception) -> TableError:
    return TableError(f"{path}: {one_line(error)}")


def column_count(path: str) -> int:
    """The number of comma-separated values on the file's first line (0: an empty file)."""
    try:
        with gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb") as f:
            line = f.readline(_FIRST_LINE_LIMIT)
    except (OSError, EOFError) as e:
        raise _fail(path, e) from None
    if len(line) >= _FIRST_LINE_LIMIT:
        raise TableError(f"{path}: line 1: longer than {_FIRST_LINE_LIMIT} bytes")
    line = line.strip()
    return line.count(b",") + 1 if line else 0


try:  # ISA-L's inflate: 2-3 times zlib's speed, most of the CPU of reading a gzipped file
    from isal import igzip as _igzip
    from isal.isal_zlib import error as _IsalError
except ImportError:  # pragma: no cover - a platform without its wheel: Arrow's zlib
    _igzip, _IsalError = None, OSError
_INFLATE_ERRORS = (OSError, EOFError, _IsalError)


def _text_stream(path: str):
    """The file's text as a read()-able stream: gzip inflated by ISA-L (the `isal`
    package) where it is installed, else by Arrow (zlib)."""
    if _igzip is not None and path.endswith(".gz"):
        return _igzip.open(path, "rb")
    return pa.input_stream(path, compression="detect")


def _text_blocks(path: str) -> Iterator[tuple[int, bytes]]:
    """(first byte's offset, whole lines) of a (gzipped) text file, about BLOCK_BYTES each."""
    offset = 0
    rest = b""
    with _text_stream(path) as stream:
        while True:
            data = stream.read(BLOCK_BYTES)
            if not data:
                break
            data = rest + data
            cut = data.rfind(b"\n") + 1
            if cut == 0:  # one line longer than a block: keep reading
                rest = data
                continue
            rest = data[cut:]
            yield offset, data[:cut]
            offset += cut
    if rest:
        yield offset, rest


def _line_at(path: str, offset: int) -> int:
    """The line number of a byte offset of the (inflated) file: rescanned, on errors only."""
    lines, done = 1, 0
    with pa.input_stream(path, compression="detect") as stream:
        while done < offset:
            data = stream.read(min(BLOCK_BYTES, offset - done))
            if not data:
                break
            lines += data.count(b"\n")
            done += len(data)
    return lines


def stream_numbers(path: str, columns: int, value_type: pa.DataType) -> Iterator[pa.RecordBatch]:
    """The headerless CSV file's rows in blocks, every one of its `columns` columns parsed
    as `value_type`; a short or long row, a value that is not a number, or broken gzip
    data is one line naming the file (and the block's first line).

    The file is inflated a block at a time and each block of whole lines parsed by
    Arrow's `read_csv`: half the CPU of Arrow's streaming reader here, memory bounded."""
    names = [f"c{i}" for i in range(columns)]
    read_options = pa_csv.ReadOptions(column_names=names, use_threads=False)
    convert = pa_csv.ConvertOptions(column_types={n: value_type for n in names},
                                    strings_can_be_null=False, quoted_strings_can_be_null=False)
    parse = pa_csv.ParseOptions(newlines_in_values=False)
    offset = 0
    try:
        for offset, text in _text_blocks(path):
            table = pa_csv.read_csv(pa.BufferReader(text), read_options=read_options,
                                    convert_options=convert, parse_options=parse)
            for i in range(columns):
                if table.column(i).null_count:
                    raise TableError(f"{path}: an empty value in column {i + 1} (in the lines "
                                     f"from line {_line_at(path, offset)})")
            yield from table.to_batches()
    except TableError:
        raise
    except pa.ArrowInvalid as e:
        raise TableError(f"{path}: in the lines from line {_line_at(path, offset)}: "
                         f"{one_line(e)}") from None
    except _INFLATE_ERRORS as e:
        raise _fail(path, e) from None


def matrix(batch: pa.RecordBatch) -> np.ndarray:
    """A record batch of numeric columns as one row-major [rows, columns] array."""
    try:
        return np.asarray(batch.to_tensor(row_major=True))  # one C++ pass (pyarrow >= 16)
    except (AttributeError, TypeError, pa.ArrowNotImplementedError):
        return np.stack([batch.column(i).to_numpy() for i in range(batch.num_columns)], axis=1)


def read_matrix(path: str, value_type: pa.DataType = pa.float64()) -> np.ndarray:
    """A whole headerless CSV file of numbers as a [rows, columns] array."""
    columns = column_count(path)
    if columns == 0:
        return np.zeros((0, 0), dtype=value_type.to_pandas_dtype())
    parts = [matrix(b) for b in stream_numbers(path, columns, value_type)]
    return np.concatenate(parts) if parts else np.zeros((0, columns),
                                                         value_type.to_pandas_dtype())


def integral(values: np.ndarray) -> bool:
    """Whether float values are all whole numbers (so OGB reads the file as integers)."""
    return bool(np.isfinite(values).all() and (np.mod(values, 1) == 0).all())


def read_values(path: str) -> np.ndarray:
    """A headerless CSV of numbers as OGB reads one: int64 when every value is whole,
    else float32 (NaN allowed, e.g. the labels of unlabelled nodes)."""
    values = read_matrix(path, pa.float64())
    return values.astype(np.int64) if integral(values) else values.astype(np.float32)


def read_counts(path: str) -> list[int]:
    """`num-node-list.csv.gz` / `num-edge-list.csv.gz`: one count a line (one per graph)."""
    values = read_matrix(path, pa.float64())
    if values.ndim != 2 or (len(values) and values.shape[1] != 1):
        raise TableError(f"{path}: expected one count a line, found {values.shape[1]} values")
    return [checked_count(path, v) for v in values.reshape(-1)]


def checked_count(path: str, value) -> int:
    """A count read from a file: a whole number in [0, 2**40)."""
    try:
        number = float(value)
    except ValueError:
        raise TableError(f"{path}: count {value!r} is not a number") from None
    if not np.isfinite(number) or number != int(number) or not 0 <= number < MAX_COUNT:
        raise TableError(f"{path}: count {value} is not a whole number from 0 to 2**40")
    return int(number)


def read_header_table(path: str) -> dict[str, list[str]]:
    """A small CSV with a header row (`num-node-dict.csv.gz`, `nodetype-has-label.csv.gz`):
    column name -> its values as text."""
    try:
        table = pa_csv.read_csv(path, convert_options=pa_csv.ConvertOptions(
            column_types={}, strings_can_be_null=False, auto_dict_encode=False),
            read_options=pa_csv.ReadOptions(block_size=BLOCK_BYTES))
    except (pa.ArrowInvalid, OSError, EOFError) as e:
        raise _fail(path, e) from None
    return {name: [str(v) for v in table.column(name).to_pylist()]
            for name in table.column_names}


def read_rows_of_text(path: str, columns: int) -> list[list[str]]:
    """A small headerless CSV of text (`triplet-type-list.csv.gz`) as rows."""
    names = [f"c{i}" for i in range(columns)]
    try:
        table = pa_csv.read_csv(path, read_options=pa_csv.ReadOptions(column_names=names),
                                convert_options=pa_csv.ConvertOptions(
                                    column_types={n: pa.string() for n in names}))
    except (pa.ArrowInvalid, OSError, EOFError) as e:
        raise _fail(path, e) from None
    return [list(row) for row in zip(*[table.column(n).to_pylist() for n in names])]


# ---- binary datasets: .npz archives -------------------------------------------------

class NpzMembers:
    """The arrays of an `.npz` archive (np.savez), read by rows without loading them."""

    def __init__(self, path: str):
        self.path = path
        try:
            self._zip = zipfile.ZipFile(path)
            self.names = {n[:-4]: n for n in self._zip.namelist() if n.endswith(".npy")}
        except (OSError, zipfile.BadZipFile) as e:
            raise _fail(path, e) from None

    def _header(self, stream, name: str):
        readers = {(1, 0): np.lib.format.read_array_header_1_0,
                   (2, 0): np.lib.format.read_array_header_2_0}
        try:
            version = np.lib.format.read_magic(stream)
            if version not in readers:
                raise ValueError(f".npy format version {version} is not read here")
            shape, fortran, dtype = readers[version](stream)
        except (ValueError, OSError) as e:
            raise TableError(f"{self.path}: array '{name}': {one_line(e)}") from None
        if fortran or dtype.hasobject:
            raise TableError(f"{self.path}: array '{name}' is {'Fortran-ordered' if fortran else 'of Python objects'}; "
                             f"only plain C-ordered numbers are read")
        return shape, dtype

    def shape(self, name: str) -> tuple[tuple[int, ...], np.dtype]:
        """(shape, dtype) from the member's header, checked against the member's size."""
        if name not in self.names:
            raise TableError(f"{self.path}: no array '{name}' (it holds "
                             f"{', '.join(sorted(self.names)) or 'none'})")
        info = self._zip.getinfo(self.names[name])
        with self._zip.open(info) as stream:
            shape, dtype = self._header(stream, name)
            header = stream.tell()
        data = int(np.prod(shape, dtype=object)) * dtype.itemsize
        if header + data != info.file_size:
            raise TableError(f"{self.path}: array '{name}' declares shape {list(shape)} of "
                             f"{dtype} ({data:,} bytes) but holds {info.file_size - header:,}")
        return shape, dtype

    def rows(self, name: str, rows: int = NPY_ROWS) -> Iterator[np.ndarray]:
        """The array's rows (first dimension), `rows` at a time."""
        shape, dtype = self.shape(name)
        width = int(np.prod(shape[1:], dtype=np.int64)) if len(shape) > 1 else 1
        try:
            with self._zip.open(self.names[name]) as stream:
                self._header(stream, name)
                left = shape[0] if shape else 1
                while left > 0:
                    take = min(rows, left)
                    data = stream.read(take * width * dtype.itemsize)
                    if len(data) != take * width * dtype.itemsize:
                        raise TableError(f"{self.path}: array '{name}' ends early")
                    yield np.frombuffer(data, dtype).reshape((take,) + tuple(shape[1:]))
                    left -= take
        except (OSError, zipfile.BadZipFile, EOFError) as e:
            raise TableError(f"{self.path}: array '{name}': {one_line(e)}") from None

    def columns(self, name: str, columns: int = NPY_ROWS) -> Iterator[np.ndarray]:
        """A [2, n] array (`edge_index`) as [k, 2] blocks of its columns: its two rows read
        side by side from two positions of the member."""
        shape, dtype = self.shape(name)
        if len(shape) != 2 or shape[0] != 2:
            raise TableError(f"{self.path}: array '{name}' of shape {list(shape)}, expected "
                             f"[2, n]")
        total = shape[1]
        try:
            with self._zip.open(self.names[name]) as first, \
                    self._zip.open(self.names[name]) as second:
                self._header(first, name)
                self._header(second, name)
                second.seek(second.tell() + total * dtype.itemsize)
                done = 0
                while done < total:
                    take = min(columns, total - done)
                    size = take * dtype.itemsize
                    top, bottom = first.read(size), second.read(size)
                    if len(top) != size or len(bottom) != size:
                        raise TableError(f"{self.path}: array '{name}' ends early")
                    yield np.stack([np.frombuffer(top, dtype), np.frombuffer(bottom, dtype)],
                                   axis=1)
                    done += take
        except (OSError, zipfile.BadZipFile, EOFError) as e:
            raise TableError(f"{self.path}: array '{name}': {one_line(e)}") from None

    def whole(self, name: str) -> np.ndarray:
        parts = list(self.rows(name))
        shape, dtype = self.shape(name)
        return np.concatenate(parts) if parts else np.zeros(shape, dtype)


# ---- link prediction splits: PyTorch files -----------------------------------------

def load_torch(path: str) -> dict:
    """A split file (`train.pt`: a dict of tensors and lists) as numpy arrays and lists;
    tensors only, never code (`weights_only=True`)."""
    torch = require_extra("torch", "torch", f"reading OGB link prediction splits ({path})")
    try:
        with warnings.catch_warnings():  # torch's notes on pickle protocols are not for users
            warnings.simplefilter("ignore")
            value = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # unpickling errors of every kind: the file is bad
        raise _fail(path, e) from None
    if not isinstance(value, dict):
        raise TableError(f"{path}: expected a dict of arrays, found {type(value).__name__}")
    return {str(k): (v.numpy() if hasattr(v, "numpy") else v) for k, v in value.items()}


def exists(path: str) -> bool:
    return os.path.isfile(path)
