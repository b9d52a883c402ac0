"""Bytes for the elements the Beam pipeline moves between workers, without pickle.

The elements are dataclasses of this project (`unigraph.*`, `sampler.*`: batches,
bucket tables, pieces, counts) made of numpy arrays, dicts, lists, tuples and
scalars, often nested in tuples with int keys. `encode` writes each value as a
one-byte tag and its payload; `decode` rebuilds it. A dataclass is written as its
module and qualified name and its fields in declaration order, and rebuilt without
calling its __init__ (only classes of this project's packages).

Arrays are most of the bytes, and a runner copies every element several times, so:
- An array's raw bytes are joined into the element as they lie in memory (one copy,
  no per-item work), at an offset that is a multiple of 8 from the element's start.
  `decode` copies the element once into a writable buffer and the arrays are views of
  it (aligned, writable; they keep the buffer alive), so decoding costs one copy of
  the element and no per-array allocation.
- An integer array of at least NARROW_MIN items whose values span less than 2**8,
  2**16, 2**24 or 2**32 (max - min) is written as its minimum and the differences in
  that many bits, and rebuilt in its own dtype with the same values: codes into small
  dictionaries, offsets within a row and the row ids of one file are written in
  1, 2 or 3 bytes instead of 4 or 8.
- A one-dimensional integer array whose values never decrease (each sample's sampled
  edges listed together, the seeds' requests by sample, a file's row ids) is written
  by its runs where values repeat (each distinct value once, and how many times it
  repeats: a run of 10 edges of one sample in 2 bytes, not 20), or else as its first
  value and the steps between neighbours (row ids counting up by one in 1 byte each),
  whichever is smaller; the parts are narrowed like any array. Rebuilt with np.repeat
  or a cumulative sum, in the array's own dtype.

The bytes are a function of the value as built: equal arrays, scalars, strings and
tuples give equal bytes (deterministic, so ints and tuples of them are valid group
keys); a dict's entries are written in their order, which the sampler's code always
builds the same way (features in schema order). A value of any other type (a Beam
internal object, an object array) falls back to pickle: `encode(value, strict=True)`
refuses that instead, which the tests use to prove no element of ours needs it.
`encoded_size(value)` is len(encode(value)) without encoding (unigraph.beam.shuffle
counts shuffled bytes with it); `size_bound(value)` an upper bound of it that reads no
array's data (the runner's own size metrics).
"""
from __future__ import annotations

import dataclasses
import importlib
import pickle
import struct

import numpy as np

_PACKAGES = ("unigraph.", "sampler.", "pipelines.")
_Q = struct.Struct("<Q")
_q = struct.Struct("<q")
_D = struct.Struct("<d")
_ALIGN = 8  # array data starts at a multiple of this from the element's start
_PAD = bytes(_ALIGN)
NARROW_MIN = 64  # items: smaller integer arrays are written as they are
# Three bytes as two fields (numpy has no 24-bit integer): one file's RowIds above
# 2**16 (4 of the 12 bytes a sampled edge took) take 3 bytes, not 4.
_U24 = np.dtype([("low", "<u2"), ("high", "u1")])
_NARROW = ((1, np.dtype(np.uint8)), (2, np.dtype(np.uint16)), (3, _U24),
           (4, np.dtype(np.uint32)))
_WIDTHS = {width: narrow for width, narrow in _NARROW}
_MASK64 = (1 << 64) - 1


_UNSIGNED = {1: np.dtype(np.uint8), 2: np.dtype(np.uint16), 4: np.dtype(np.uint32),
             8: np.dtype(np.uint64)}
_PROBES = 64  # evenly spaced items checked in order before the whole array is
_UNKNOWN = object()  # a narrowing not yet computed


class NotEncodable(TypeError):
    """strict encoding met a value it would have to pickle."""


def _ours(cls) -> bool:
    return cls.__module__.startswith(_PACKAGES) and dataclasses.is_dataclass(cls)


def _narrowing(array: np.ndarray, ordered: bool = False):
    """(narrow dtype, minimum as a Python int) for an integer array whose values fit a
    narrower unsigned type above their minimum, else None. `ordered`: the array is 1-d
    and never decreases, so its ends are its minimum and maximum."""
    if array.dtype.kind not in "iu" or array.dtype.itemsize < 2 or array.size < NARROW_MIN:
        return None
    if ordered:
        lo, hi = int(array[0]), int(array[-1])
    else:
        lo, hi = int(array.min()), int(array.max())
    for width, narrow in _NARROW:
        if width >= array.dtype.itemsize:
            return None
        if hi - lo < 1 << (8 * width):
            return narrow, lo
    return None


def _never_decreasing(array: np.ndarray) -> bool:
    """Whether a 1-d integer array's values never decrease; most arrays that do decrease
    are turned away by a few probes, not a pass over all of them."""
    if array.ndim != 1 or array.dtype.kind not in "iu" or array.size < NARROW_MIN:
        return False
    probes = array[::array.size // _PROBES]  # a view: nothing copied
    if (probes[1:] < probes[:-1]).any():
        return False
    return not (array[1:] < array[:-1]).any()


def _sorted_form(array: np.ndarray):
    """For a never-decreasing integer array, the smaller of its two forms (module
    docstring) if smaller than the array as narrowing alone writes it, else None:
    ("r", distinct values, run lengths as int64) or ("z", first value as the unsigned
    type's Python int, steps in the unsigned type of the array's width)."""
    if not _never_decreasing(array):
        return None
    plain = _narrowing(array, True)
    best, best_size = None, _array_size(array, 0, False, plain)
    changes = np.flatnonzero(array[1:] != array[:-1])  # where a run ends, less one
    if len(changes) < array.size // 2:
        starts = np.empty(len(changes) + 1, np.int64)
        starts[0] = 0
        starts[1:] = changes + 1
        values = array[starts]
        lengths = np.empty(len(starts), np.int64)
        lengths[:-1] = starts[1:] - starts[:-1]
        lengths[-1] = array.size - starts[-1]
        parts = (values, lengths), (_narrowing(values, True), _narrowing(lengths))
        size = _array_size(lengths, _array_size(values, 1, True, parts[1][0]), False,
                           parts[1][1])
        if size < best_size:  # runs: most steps are 0, so steps would not do better
            return ("r", *parts)
    # Steps only pay where they fit a narrower type than the values do; the mean step
    # is a lower bound on the largest, so most arrays they cannot help stop here.
    width = plain[0].itemsize if plain is not None else array.dtype.itemsize
    mean_step = (int(array[-1]) - int(array[0])) // (array.size - 1)
    if width == 1 or mean_step >> (8 * ((width + 1) // 2)):
        return best
    # Steps computed in the unsigned type: exact (modulo 2**bits) even across 0.
    unsigned = array.view(_UNSIGNED[array.dtype.itemsize])
    steps = unsigned[1:] - unsigned[:-1]
    narrowing = _narrowing(steps)
    if _array_size(steps, 1 + 8, False, narrowing) < best_size:
        best = ("z", (int(unsigned[0]), steps), (None, narrowing))
    return best


class _Writer:
    __slots__ = ("parts", "pos", "strict")

    def __init__(self, strict: bool):
        self.parts: list = []
        self.pos = 0
        self.strict = strict

    def put(self, data) -> None:
        self.parts.append(data)
        self.pos += len(data)

    def text(self, s: str) -> None:
        data = s.encode("utf-8")
        self.put(_Q.pack(len(data)))
        self.put(data)

    def array_head(self, tag: bytes, array: np.ndarray, dtype: np.dtype) -> None:
        """Tag, dtype, shape, then padding up to an aligned offset (none for 1-byte data)."""
        self.put(tag)
        self.text(array.dtype.str)
        self.put(_Q.pack(array.ndim))
        for n in array.shape:
            self.put(_Q.pack(n))
        if dtype.itemsize > 1:
            pad = -self.pos % _ALIGN
            if pad:
                self.put(_PAD[:pad])


def encode(value, strict: bool = False) -> bytes:
    writer = _Writer(strict)
    _encode(value, writer)
    return b"".join(writer.parts)


def _encode(v, out: _Writer) -> None:  # noqa: C901  one branch per kind
    t = type(v)
    if v is None:
        out.put(b"N")
    elif t is bool:
        out.put(b"T" if v else b"F")
    elif t is int:
        if -(1 << 63) <= v < (1 << 63):
            out.put(b"i")
            out.put(_q.pack(v))
        else:
            out.put(b"I")
            out.text(str(v))
    elif t is float:
        out.put(b"f")
        out.put(_D.pack(v))
    elif t is str:
        out.put(b"s")
        out.text(v)
    elif t is bytes:
        out.put(b"b")
        out.put(_Q.pack(len(v)))
        out.put(v)
    elif t is np.ndarray and not v.dtype.hasobject:
        _encode_array(np.ascontiguousarray(v), out, True)
    elif isinstance(v, np.generic) and not isinstance(v, np.object_):
        out.put(b"g")
        out.text(v.dtype.str)
        data = v.tobytes()
        out.put(_Q.pack(len(data)))
        out.put(data)
    elif t is list or t is tuple:
        out.put(b"l" if t is list else b"t")
        out.put(_Q.pack(len(v)))
        for item in v:
            _encode(item, out)
    elif t is dict:
        out.put(b"d")
        out.put(_Q.pack(len(v)))
        for key, item in v.items():
            _encode(key, out)
            _encode(item, out)
    elif _ours(t):
        fields = dataclasses.fields(v)
        out.put(b"D")
        out.text(f"{t.__module__}:{t.__qualname__}")
        out.put(_Q.pack(len(fields)))
        for field in fields:
            _encode(getattr(v, field.name), out)
    else:
        if out.strict:
            raise NotEncodable(f"{t.__module__}.{t.__qualname__} would be pickled")
        data = pickle.dumps(v, protocol=pickle.HIGHEST_PROTOCOL)
        out.put(b"P")
        out.put(_Q.pack(len(data)))
        out.put(data)


def _encode_array(array: np.ndarray, out: _Writer, sorted_forms: bool,
                  narrowing=_UNKNOWN) -> None:
    """A contiguous array: in a sorted form (not for the parts of one), narrowed, or as
    it lies in memory. `narrowing`: _narrowing(array) where the caller knows it."""
    form = _sorted_form(array) if sorted_forms else None
    if form is not None:
        _encode_sorted(array, form, out)
        return
    if narrowing is _UNKNOWN:
        narrowing = _narrowing(array)
    if narrowing is None:
        out.array_head(b"a", array, array.dtype)
        if array.nbytes:  # the array's own memory, joined without a copy of its own
            out.put(memoryview(array.reshape(-1).view(np.uint8)))
    else:
        narrow, lo = narrowing
        out.put(b"n")
        out.put(bytes((narrow.itemsize,)))
        out.put(_Q.pack(lo & _MASK64))
        out.array_head(b"", array, narrow)
        out.put(memoryview(_narrowed(array.reshape(-1), narrow, lo).view(np.uint8)))


def _narrowed(flat: np.ndarray, narrow: np.dtype, lo: int) -> np.ndarray:
    """The integers less `lo`, in the narrow type (integer casts wrap, so the difference
    is exact there)."""
    if narrow is _U24:
        wide = flat.astype(np.uint32)
        wide -= np.uint32(lo & 0xFFFFFFFF)
        data = np.empty(len(flat), _U24)
        data["low"] = wide  # assignment keeps the low 16 bits
        data["high"] = wide >> 16
        return data
    data = flat.astype(narrow)
    data -= narrow.type(lo & ((1 << (8 * narrow.itemsize)) - 1))
    return data


def _encode_sorted(array: np.ndarray, form, out: _Writer) -> None:
    """Tag, the dtype, then the form's parts: "r": values and run lengths, "z": the first
    value (8 bytes) and the steps."""
    kind = form[0]
    out.put(b"R" if kind == "r" else b"Z")
    out.text(array.dtype.str)
    (first, second), (_, narrowing) = form[1], form[2]
    if kind == "r":  # the distinct values (increasing: no runs, maybe steps), the lengths
        _encode_array(first, out, True)
        _encode_array(second, out, False, narrowing)
    else:
        out.put(_Q.pack(first))
        _encode_array(second, out, False, narrowing)


def encoded_size(value) -> int:
    """len(encode(value)), computed without encoding: a walk over the value's fields,
    no copy of any array (integer arrays are scanned for their range)."""
    return _size(value, 0, True)


def size_bound(value) -> int:
    """At least len(encode(value)), in a walk over the value's fields that reads no
    array's data: every array counted at its full width, as if nothing were narrowed
    or written by runs. What a runner's size metrics need (ElementCoder.estimate_size),
    at a cost independent of the arrays' sizes."""
    return _size(value, 0, False)


def _text_size(s: str) -> int:
    return 8 + len(s.encode("utf-8"))


def _array_head_end(array: np.ndarray, dtype: np.dtype, pos: int) -> int:
    pos += _text_size(array.dtype.str) + 8 + 8 * array.ndim
    return pos + (-pos % _ALIGN if dtype.itemsize > 1 else 0)


def _array_size(array: np.ndarray, pos: int, sorted_forms: bool, narrowing=_UNKNOWN) -> int:
    """Mirrors _encode_array."""
    form = _sorted_form(array) if sorted_forms else None
    if form is not None:
        pos = pos + 1 + _text_size(array.dtype.str)
        (first, second), (_, second_narrowing) = form[1], form[2]
        if form[0] == "r":
            return _array_size(second, _array_size(first, pos, True), False,
                               second_narrowing)
        return _array_size(second, pos + 8, False, second_narrowing)
    if narrowing is _UNKNOWN:
        narrowing = _narrowing(array)
    if narrowing is None:
        return _array_head_end(array, array.dtype, pos + 1) + array.nbytes
    narrow = narrowing[0]
    return _array_head_end(array, narrow, pos + 10) + array.size * narrow.itemsize


def _size(v, pos: int, scan: bool) -> int:  # noqa: C901  mirrors _encode
    t = type(v)
    if v is None or t is bool:
        return pos + 1
    if t is int:
        return pos + (9 if -(1 << 63) <= v < (1 << 63) else 1 + _text_size(str(v)))
    if t is float:
        return pos + 9
    if t is str:
        return pos + 1 + _text_size(v)
    if t is bytes:
        return pos + 9 + len(v)
    if t is np.ndarray and not v.dtype.hasobject:
        if not scan:  # the widest form: written as it lies (the longest of the forms)
            return _array_head_end(v, v.dtype, pos + 1) + v.nbytes
        return _array_size(np.ascontiguousarray(v), pos, True)
    if isinstance(v, np.generic) and not isinstance(v, np.object_):
        return pos + 1 + _text_size(v.dtype.str) + 8 + v.dtype.itemsize
    if t is list or t is tuple:
        pos += 9
        for item in v:
            pos = _size(item, pos, scan)
        return pos
    if t is dict:
        pos += 9
        for key, item in v.items():
            pos = _size(item, _size(key, pos, scan), scan)
        return pos
    if _ours(t):
        pos += 1 + _text_size(f"{t.__module__}:{t.__qualname__}") + 8
        for field in dataclasses.fields(v):
            pos = _size(getattr(v, field.name), pos, scan)
        return pos
    return pos + 9 + len(pickle.dumps(v, protocol=pickle.HIGHEST_PROTOCOL))


_classes: dict[str, type] = {}


def _class(name: str) -> type:
    cls = _classes.get(name)
    if cls is None:
        module, qualname = name.split(":", 1)
        if not module.startswith(_PACKAGES):
            raise ValueError(f"element codec: {name} is not a class of this project")
        cls = importlib.import_module(module)
        for part in qualname.split("."):
            cls = getattr(cls, part)
        _classes[name] = cls
    return cls


def decode(data: bytes):
    # One writable copy of the element; its arrays are views of it (module docstring).
    buffer = bytearray(data)
    value, end = _decode(buffer, memoryview(buffer), 0)
    if end != len(buffer):
        raise ValueError(f"element codec: {len(buffer) - end} bytes after the value")
    return value


def _count(view, at: int) -> tuple[int, int]:
    return _Q.unpack_from(view, at)[0], at + 8


def _read_text(view, at: int) -> tuple[str, int]:
    n, at = _count(view, at)
    return bytes(view[at:at + n]).decode("utf-8"), at + n


def _array_head(view, at: int, itemsize: int) -> tuple[np.dtype, tuple, int]:
    """(dtype, shape, where the data starts) of an array written by _Writer.array_head
    whose data items are `itemsize` bytes (None: the dtype's own)."""
    text, at = _read_text(view, at)
    dtype = np.dtype(text)
    ndim, at = _count(view, at)
    shape = tuple(_Q.unpack_from(view, at + 8 * i)[0] for i in range(ndim))
    at += 8 * ndim
    if (itemsize or dtype.itemsize) > 1:
        at += -at % _ALIGN
    return dtype, shape, at


def _decode(buffer, view, at: int):  # noqa: C901
    tag = view[at]
    at += 1
    if tag == 0x4E:  # N
        return None, at
    if tag == 0x54:  # T
        return True, at
    if tag == 0x46:  # F
        return False, at
    if tag == 0x69:  # i
        return _q.unpack_from(view, at)[0], at + 8
    if tag == 0x49:  # I
        text, at = _read_text(view, at)
        return int(text), at
    if tag == 0x66:  # f
        return _D.unpack_from(view, at)[0], at + 8
    if tag == 0x73:  # s
        return _read_text(view, at)
    if tag == 0x62:  # b
        n, at = _count(view, at)
        return bytes(view[at:at + n]), at + n
    if tag == 0x61:  # a
        dtype, shape, at = _array_head(view, at, 0)
        count = int(np.prod(shape, dtype=np.int64))
        n = count * dtype.itemsize
        if n == 0:
            return np.zeros(shape, dtype), at
        return np.frombuffer(buffer, dtype, count, at).reshape(shape), at + n
    if tag == 0x6E:  # n: an integer array narrowed above its minimum
        narrow = _WIDTHS[view[at]]
        lo, at = _count(view, at + 1)
        dtype, shape, at = _array_head(view, at, narrow.itemsize)
        count = int(np.prod(shape, dtype=np.int64))
        packed = np.frombuffer(buffer, narrow, count, at)
        if narrow is _U24:
            array = packed["low"].astype(np.uint32)
            array |= packed["high"].astype(np.uint32) << 16
            array = array.astype(dtype, copy=False)
        else:
            array = packed.astype(dtype)
        # lo as the dtype's value: its 64-bit two's complement, cut to the dtype (exact).
        array += np.array(lo, np.uint64).astype(dtype)
        return array.reshape(shape), at + count * narrow.itemsize
    if tag == 0x52:  # R: a never-decreasing array by its runs
        text, at = _read_text(view, at)
        values, at = _decode(buffer, view, at)
        lengths, at = _decode(buffer, view, at)
        return np.repeat(values, lengths).astype(np.dtype(text), copy=False), at
    if tag == 0x5A:  # Z: a never-decreasing array by its first value and steps
        text, at = _read_text(view, at)
        dtype = np.dtype(text)
        first, at = _count(view, at)
        steps, at = _decode(buffer, view, at)
        unsigned = _UNSIGNED[dtype.itemsize]
        array = np.empty(len(steps) + 1, unsigned)
        array[0] = first
        np.cumsum(steps, dtype=unsigned, out=array[1:])
        array[1:] += unsigned.type(first)
        return array.view(dtype), at
    if tag == 0x67:  # g
        text, at = _read_text(view, at)
        n, at = _count(view, at)
        return np.frombuffer(view[at:at + n], dtype=np.dtype(text))[0], at + n
    if tag == 0x6C or tag == 0x74:  # l, t
        n, at = _count(view, at)
        items = []
        for _ in range(n):
            item, at = _decode(buffer, view, at)
            items.append(item)
        return (items if tag == 0x6C else tuple(items)), at
    if tag == 0x64:  # d
        n, at = _count(view, at)
        result = {}
        for _ in range(n):
            key, at = _decode(buffer, view, at)
            result[key], at = _decode(buffer, view, at)
        return result, at
    if tag == 0x44:  # D
        name, at = _read_text(view, at)
        cls = _class(name)
        n, at = _count(view, at)
        fields = dataclasses.fields(cls)
        if n != len(fields):
            raise ValueError(f"element codec: {name} has {len(fields)} fields, got {n}")
        obj = cls.__new__(cls)
        for field in fields:
            value, at = _decode(buffer, view, at)
            object.__setattr__(obj, field.name, value)
        return obj, at
    if tag == 0x50:  # P
        n, at = _count(view, at)
        return pickle.loads(view[at:at + n]), at + n
    raise ValueError(f"element codec: unknown tag {tag!r} at byte {at - 1}")
