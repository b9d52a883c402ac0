"""Decoding raw table columns into the typed columns of NodeBatch/EdgeBatch.

Every format reader hands over Arrow arrays (CSV: text cells; Parquet: native
columns; TFRecord: the values of a feature gathered over many records), and
this module turns them into numpy ids, weights and feature values following
the schema, with whole-column (vectorised) operations. When a column holds a
bad value, it finds the first offending row (bisecting for failed casts, so the
common path stays vectorised) and raises a one-line TableError through the
reader's `locate(row)`, which renders "<file>: line N" / "record N" / "row N".

Data shapes:
  Locate   = Callable[[int], str]: row within the batch -> "<file>: line 7"
  Levels   = list of int64 arrays, one per item dimension: the number of entries
             of every list at that depth (as Arrow's nested lists store them).
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from unigraph.encoding import wire
from unigraph.columnar.batches import FeatureValues
from unigraph.errors import TableError, one_line
from unigraph.columnar.ragged import Ragged
from unigraph.tables.layout import FeatureSpec

Locate = Callable[[int], str]

_ARROW_TYPES = {
    np.dtype(np.float32): pa.float32(), np.dtype(np.float64): pa.float64(),
    np.dtype(np.float16): pa.float32(),  # parsed as float32, then narrowed by numpy
    np.dtype(np.int64): pa.int64(), np.dtype(np.int32): pa.int32(),
    np.dtype(np.int16): pa.int16(), np.dtype(np.int8): pa.int8(),
    np.dtype(np.uint8): pa.uint8(), np.dtype(np.uint16): pa.uint16(),
    np.dtype(np.uint32): pa.uint32(), np.dtype(np.bool_): pa.bool_(),
}


def arrow_type(spec: FeatureSpec) -> pa.DataType:
    """The Arrow type numbers of a feature are parsed as (float16 goes through float32)."""
    return _ARROW_TYPES[spec.dtype]


def show(value, limit: int = 60) -> str:
    """A value for a message: quoted, one line, cut to `limit` characters."""
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="backslashreplace")
    text = repr(str(value))
    return text if len(text) <= limit else text[:limit - 4] + "...'"


def is_text(arrow_type: pa.DataType) -> bool:
    return (pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type)
            or pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type))


def is_list(arrow_type: pa.DataType) -> bool:
    return (pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type)
            or pa.types.is_fixed_size_list(arrow_type))


def list_depth(arrow_type: pa.DataType) -> int:
    depth = 0
    while is_list(arrow_type):
        arrow_type, depth = arrow_type.value_type, depth + 1
    return depth


def _contiguous(column) -> pa.Array:
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


def _first_null(column: pa.Array) -> int:
    return int(np.flatnonzero(column.is_null().to_numpy(zero_copy_only=False))[0])


def _check_no_nulls(column: pa.Array, locate: Locate, name: str) -> None:
    if column.null_count:
        raise TableError(f"{locate(_first_null(column))}: column '{name}': empty (null) value")


def _first_failing(values: pa.Array, convert) -> int:
    """Index of the first element `convert` rejects, by bisection (convert(all) failed)."""
    lo, hi = 0, len(values)  # the first failure lies in [lo, hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            convert(values.slice(lo, mid - lo))
            lo = mid
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError, OverflowError):
            hi = mid
    return lo


# ---- ids -------------------------------------------------------------------

def ids_from_arrow(column, locate: Locate, name: str) -> np.ndarray:
    """Id cells (text, or integers written as decimal text) -> a numpy 'S' array.

    Rejects empty ids and ids ending in a NUL byte, which a numpy 'S' array
    would silently strip.
    """
    column = _contiguous(column)
    _check_no_nulls(column, locate, name)
    if pa.types.is_integer(column.type):
        column = pc.cast(column, pa.string())
    elif not is_text(column.type):
        raise TableError(f"{locate(0)}: id column '{name}' has type {column.type}, "
                         f"expected text")
    if not (pa.types.is_string(column.type) or pa.types.is_binary(column.type)):
        column = pc.cast(column, pa.large_binary())
    n = len(column)
    offset_type = np.int32 if pa.types.is_string(column.type) or pa.types.is_binary(
        column.type) else np.int64
    offsets = np.frombuffer(column.buffers()[1], dtype=offset_type)[
        column.offset:column.offset + n + 1].astype(np.int64)
    data_buffer = column.buffers()[2]
    data = (np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None
            else np.zeros(0, np.uint8))
    return ids_from_spans(data, offsets[:-1], np.diff(offsets), locate, name)


def ids_from_spans(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray, locate: Locate,
                   name: str) -> np.ndarray:
    """Ids stored at data[starts[i]:starts[i] + lengths[i]] -> a numpy 'S' array.

    Rejects empty ids and ids ending in a NUL byte, which a numpy 'S' array
    would silently strip.
    """
    n = len(starts)
    if n and (lengths == 0).any():
        raise TableError(f"{locate(int(np.argmin(lengths)))}: column '{name}': empty id")
    width = int(lengths.max()) if n else 1
    if width > MAX_ID_BYTES:  # before the [n, width] matrix is allocated
        bad = int(np.argmax(lengths))
        raise TableError(f"{locate(bad)}: column '{name}': an id of {width} bytes, longer "
                         f"than the {MAX_ID_BYTES} an id may have")
    if n and width <= _WORD_IDS_UP_TO:
        out, last_bytes = _ids_by_words(data, starts, lengths, width)
    else:
        # Every id's bytes in its row of a fixed-width matrix, zeros after its end.
        out = wire.gather_rows(data, starts, width)
        if n and int(lengths.min()) < width:
            out *= np.arange(width)[None, :] < lengths[:, None]
        last_bytes = out[np.arange(n), lengths - 1] if n else np.zeros(0, np.uint8)
    if n and not last_bytes.all():
        bad = int(np.flatnonzero(last_bytes == 0)[0])
        value = data[starts[bad]:starts[bad] + lengths[bad]].tobytes()
        raise TableError(f"{locate(bad)}: column '{name}': id {show(value)} "
                         f"ends with a NUL byte")
    return out.view(f"S{width}").reshape(n)


# Ids become a fixed-width 'S' array as wide as the longest: a batch holds rows times its
# length, so an id's length is bounded (4 KiB ids: 256 MiB for a batch of 65,536 rows).
MAX_ID_BYTES = 4096
_WORD_IDS_UP_TO = 16  # ids up to this many bytes are read as one or two uint64 windows
_LOW_BYTES = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [(1 << 64) - 1],
                      dtype=np.uint64)


def _ids_by_words(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
                  width: int) -> tuple[np.ndarray, np.ndarray]:
    """([n, width] uint8 ids zero-padded, each id's last byte) through 8-byte windows."""
    n = len(starts)
    reach = int(starts.max()) + 8 * ((width + 7) // 8)  # the last window read ends before
    if reach > len(data) - wire.WINDOW_BYTES:  # not padded enough (Arrow's buffers): a copy
        padded = np.zeros(reach + wire.WINDOW_BYTES, dtype=np.uint8)
        padded[:len(data)] = data
        data = padded
    words = wire.windows(data)
    blocks, lasts = [], None
    for at in range(0, width, 8):
        left = lengths if width <= 8 else np.clip(lengths - at, 0, 8)
        block = words[starts + at] & _LOW_BYTES[left]
        # The id's last byte, from the block that holds it.
        shift = (left - 1 if width <= 8 else (left - 1).clip(0)) * 8
        last = (block >> shift.astype(np.uint64)) & np.uint64(0xFF)
        lasts = last if lasts is None else np.where(left > 0, last, lasts)
        blocks.append(block)
    words_out = blocks[0] if len(blocks) == 1 else np.stack(blocks, axis=1)
    rows = words_out.view(np.uint8).reshape(n, 8 * len(blocks))
    return (rows if width == rows.shape[1] else np.ascontiguousarray(rows[:, :width])), lasts


# ---- weights -----------------------------------------------------------------

def weights_from_arrow(column, locate: Locate, name: str) -> np.ndarray:
    """A weight column (numeric, or text cells) -> float64, all finite."""
    column = _contiguous(column)
    _check_no_nulls(column, locate, name)
    if is_text(column.type):
        column = pc.utf8_trim_whitespace(pc.cast(column, pa.string()))
    elif not (pa.types.is_integer(column.type) or pa.types.is_floating(column.type)):
        raise TableError(f"{locate(0)}: weight column '{name}' has type {column.type}, "
                         f"expected a number")

    weights = _cast(column, pa.float64(), locate,
                    lambda bad: f"column '{name}': weight {show(column[bad].as_py())} "
                                f"is not a number")
    return _all_finite(np.asarray(weights, dtype=np.float64), locate, name,
                       lambda i: show(column[i].as_py()))  # the cell as the user wrote it


def weights_from_values(values: np.ndarray, locate: Locate, name: str) -> np.ndarray:
    """Already-numeric weights (e.g. from TFRecord) -> float64, all finite."""
    weights = np.asarray(values, dtype=np.float64)
    return _all_finite(weights, locate, name, lambda i: show(weights[i]))


def _cast(values: pa.Array, target: pa.DataType, locate: Locate,
          problem: Callable[[int], str]) -> np.ndarray:
    """`values` cast to `target` as numpy; a TableError names the first value that does
    not convert (found only on the error path, so the happy path is one cast)."""
    def convert(part):
        return part if part.type == target else pc.cast(part, target, safe=True)

    try:
        return _numbers_to_numpy(convert(values))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        bad = _first_failing(values, convert)
        raise TableError(f"{locate(bad)}: {problem(bad)}") from None


_NUMPY_NUMBERS = {pa.from_numpy_dtype(np.dtype(t)): np.dtype(t) for t in (
    np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
    np.float16, np.float32, np.float64)}


def numbers_to_numpy(column) -> np.ndarray:
    """An Arrow array or chunked array as numpy (see _numbers_to_numpy)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()
    return _numbers_to_numpy(column)


def _numbers_to_numpy(array: pa.Array) -> np.ndarray:
    """An Arrow array as numpy; numbers without nulls as a view of Arrow's memory.

    (Arrow's conversion that may copy imports pandas on first use: half a second.)
    """
    dtype = _NUMPY_NUMBERS.get(array.type)
    if dtype is not None and array.null_count == 0:
        data = array.buffers()[1]
        if data is None:
            return np.zeros(0, dtype=dtype)
        return np.frombuffer(data, dtype=dtype)[array.offset:array.offset + len(array)]
    return array.to_numpy(zero_copy_only=False)


def _all_finite(weights: np.ndarray, locate: Locate, name: str,
                shown: Callable[[int], str]) -> np.ndarray:
    finite = np.isfinite(weights)
    if not finite.all():
        bad = int(np.flatnonzero(~finite)[0])
        raise TableError(f"{locate(bad)}: column '{name}': weight {shown(bad)} "
                         f"is not a finite number")
    return weights


# ---- flat values -------------------------------------------------------------------

def _is_time_type(arrow_type: pa.DataType) -> bool:
    return (pa.types.is_timestamp(arrow_type) or pa.types.is_date(arrow_type)
            or pa.types.is_duration(arrow_type))


def cast_values(values: pa.Array, spec: FeatureSpec, where: Callable[[int], str],
                name: str) -> np.ndarray:
    """A flat Arrow array of values -> numpy values of the feature's dtype.

    Text (CSV cells) is parsed; native Arrow numbers are cast safely (no silent
    truncation or overflow). `where(i)` locates value i for messages.
    """
    values = _contiguous(values)
    if spec.is_string:
        if not is_text(values.type):
            raise TableError(f"{where(0)}: column '{name}' has type {values.type}, "
                             f"expected text for {spec.dtype_name}")
        return pc.cast(values, pa.large_binary()).to_numpy(zero_copy_only=False)
    text = is_text(values.type)
    if text:
        values = pc.utf8_trim_whitespace(pc.cast(values, pa.string()))
    elif _is_time_type(values.type):  # a Parquet timestamp or date: its integer, in its unit
        values = values.view(pa.int64() if values.type.bit_width == 64 else pa.int32())
    elif not (pa.types.is_integer(values.type) or pa.types.is_floating(values.type)
              or pa.types.is_boolean(values.type)):
        raise TableError(f"{where(0)}: column '{name}' has type {values.type}, "
                         f"expected numbers for {spec.dtype_name}")
    result = _cast(values, _ARROW_TYPES[spec.dtype], where,
                   lambda bad: f"column '{name}': {show(values[bad].as_py())} "
                               f"is not a valid {spec.dtype_name}")
    return np.asarray(result).astype(spec.dtype, copy=False)


# ---- assembling items ------------------------------------------------------------

def _row_of(levels: list[np.ndarray], depth: int, index: int) -> int:
    """The table row that entry `index` of nesting level `depth` belongs to."""
    for k in range(depth - 1, -1, -1):
        splits = np.concatenate([[0], np.cumsum(levels[k])])
        index = int(np.searchsorted(splits, index, side="right") - 1)
    return index


def assemble(spec: FeatureSpec, n: int, levels: list[np.ndarray], values: np.ndarray,
             locate: Locate, name: str) -> FeatureValues:
    """Per-dimension list lengths plus flat values -> [n, *shape] array or Ragged.

    Fixed dimensions must have exactly their size everywhere. Every dimension up
    to the last ragged one becomes a Ragged level (fixed ones with constant row
    lengths); dimensions after it stay as trailing shape of the values.
    """
    for k, size in enumerate(spec.shape):
        if size >= 0 and len(levels[k]) and (levels[k] != size).any():
            bad = int(np.flatnonzero(levels[k] != size)[0])
            raise TableError(
                f"{locate(_row_of(levels, k, bad))}: column '{name}': expected {size} values "
                f"in dimension {k} of shape {list(spec.shape)}, found {int(levels[k][bad])}")
    ragged = spec.ragged_dims
    if not ragged:
        return values.reshape((n,) + spec.shape)
    last = ragged[-1]
    result: FeatureValues = values.reshape((-1,) + spec.shape[last + 1:])
    for k in range(last, -1, -1):
        result = Ragged(result, levels[k])
    return result


def from_flat(spec: FeatureSpec, counts: np.ndarray, values: np.ndarray, locate: Locate,
              name: str) -> FeatureValues:
    """One flat list of values per row (a CSV cell, a tf.Example feature) -> item values.

    A flat list can only say where the rows begin, so a shape may have a ragged
    dimension only first ([-1], [-1, 3]); deeper raggedness needs Parquet lists.
    """
    n = len(counts)
    shape = spec.shape
    if not shape:
        if n and (counts != 1).any():
            bad = int(np.flatnonzero(counts != 1)[0])
            raise TableError(f"{locate(bad)}: column '{name}': expected 1 value for a scalar "
                             f"{spec.dtype_name}, found {int(counts[bad])}")
        return values.reshape(n)
    if any(d == -1 for d in shape[1:]):
        raise TableError(
            f"{locate(0)}: column '{name}': shape {list(shape)} has a ragged inner dimension, "
            f"which one flat list per cell cannot express; store this table as Parquet "
            f"with nested lists")
    inner = int(np.prod(shape[1:], dtype=np.int64))
    if shape[0] >= 0:
        expected = shape[0] * inner
        if n and (counts != expected).any():
            bad = int(np.flatnonzero(counts != expected)[0])
            raise TableError(f"{locate(bad)}: column '{name}': expected {expected} values for "
                             f"shape {list(shape)}, found {int(counts[bad])}")
        return values.reshape((n,) + shape)
    if inner != 1 and n and (counts % max(inner, 1)).any():
        bad = int(np.flatnonzero(counts % inner)[0])
        raise TableError(f"{locate(bad)}: column '{name}': expected a multiple of {inner} values "
                         f"for shape {list(shape)}, found {int(counts[bad])}")
    outer = counts // inner if inner else np.zeros_like(counts)
    return Ragged(values.reshape((-1,) + shape[1:]), outer)


def _flat_locator(counts: np.ndarray, locate: Locate) -> Callable[[int], str]:
    splits = np.concatenate([[0], np.cumsum(counts)])
    return lambda i: locate(int(np.searchsorted(splits, i, side="right") - 1))


# ---- per format --------------------------------------------------------------------

def feature_from_text(spec: FeatureSpec, column, locate: Locate, name: str) -> FeatureValues:
    """CSV cells: a scalar is the cell's text; a vector is space-separated values."""
    column = pc.cast(_contiguous(column), pa.string())
    if not spec.shape:
        return cast_values(column, spec, locate, name)
    trimmed = pc.utf8_trim_whitespace(column)
    pieces = pc.utf8_split_whitespace(trimmed)
    counts = pc.list_value_length(pieces).to_numpy(zero_copy_only=False).astype(np.int64)
    # Splitting an empty cell yields [""]: that row has no values at all.
    empty = pc.equal(trimmed, "").to_numpy(zero_copy_only=False)
    flat = pieces.flatten()
    if empty.any():
        flat = flat.filter(pa.array(np.repeat(~empty, counts)))
        counts = np.where(empty, 0, counts)
    values = cast_values(flat, spec, _flat_locator(counts, locate), name)
    return from_flat(spec, counts, values, locate, name)


def feature_from_arrow(spec: FeatureSpec, column, locate: Locate, name: str) -> FeatureValues:
    """A native Arrow column (Parquet): scalars, or (fixed-size) lists nested per dimension.

    A multi-dimensional feature may also be one flat list per row. Where a feature
    holds exactly one value per item, both spellings work, as they do in CSV and
    TFRecord: a scalar column for shape [1] (OGBN-MAG's `labels`), and a list
    column of one value per row for a scalar.
    """
    column = _contiguous(column)
    _check_no_nulls(column, locate, name)
    depth = list_depth(column.type)
    if depth == 0 and all(size == 1 for size in spec.shape):
        values = cast_values(column, spec, locate, name)
        if not spec.shape:
            return values
        return from_flat(spec, np.ones(len(column), np.int64), values, locate, name)
    if depth == len(spec.shape):
        levels, current = [], column
        for k in range(depth):
            if current.null_count:
                bad = _row_of(levels, k, _first_null(current))
                raise TableError(f"{locate(bad)}: column '{name}': empty (null) list")
            levels.append(pc.list_value_length(current).to_numpy(
                zero_copy_only=False).astype(np.int64))
            current = current.flatten()
        if current.null_count:
            bad = _row_of(levels, depth, _first_null(current))
            raise TableError(f"{locate(bad)}: column '{name}': empty (null) value")
        values = cast_values(current, spec,
                             lambda i: locate(_row_of(levels, depth, i)), name)
        return assemble(spec, len(column), levels, values, locate, name)
    if depth == 1:
        counts = pc.list_value_length(column).to_numpy(zero_copy_only=False).astype(np.int64)
        flat = column.flatten()
        if flat.null_count:
            raise TableError(f"{_flat_locator(counts, locate)(_first_null(flat))}: "
                             f"column '{name}': empty (null) value")
        values = cast_values(flat, spec, _flat_locator(counts, locate), name)
        return from_flat(spec, counts, values, locate, name)
    raise TableError(f"{locate(0)}: column '{name}' has type {column.type} ({depth} list "
                     f"levels), expected {len(spec.shape)} for shape {list(spec.shape)}")


def feature_from_lists(spec: FeatureSpec, counts: np.ndarray, values: pa.Array,
                       locate: Locate, name: str) -> FeatureValues:
    """TFRecord: the values of one feature gathered over records, with per-record counts."""
    values = cast_values(values, spec, _flat_locator(counts, locate), name)
    return from_flat(spec, counts, values, locate, name)


def arrow_error(where: str, error: Exception) -> TableError:
    return TableError(f"{where}: {one_line(error)}")
