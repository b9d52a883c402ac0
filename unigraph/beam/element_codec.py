"""Bytes for the elements the Beam pipeline moves between workers, without pickle.

The elements are dataclasses of this project (`unigraph.*`, `sampler.*`: batches,
bucket tables, pieces, counts) made of numpy arrays, dicts, lists, tuples and
scalars, often nested in tuples with int keys. `encode` writes each value as a
one-byte tag and its payload (an array: dtype, shape and its raw bytes, so a large
array costs one copy and no per-item work); `decode` rebuilds it. A dataclass is
written as its module and qualified name and its fields in declaration order, and
rebuilt without calling its __init__ (only classes of this project's packages).

The bytes are a function of the value as built: equal arrays, scalars, strings and
tuples give equal bytes (deterministic, so ints and tuples of them are valid group
keys); a dict's entries are written in their order, which the sampler's code always
builds the same way (features in schema order). A value of any other type (a Beam
internal object, an object array) falls back to pickle: `encode(value, strict=True)`
refuses that instead, which the tests use to prove no element of ours needs it.
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


class NotEncodable(TypeError):
    """strict encoding met a value it would have to pickle."""


def _ours(cls) -> bool:
    return cls.__module__.startswith(_PACKAGES) and dataclasses.is_dataclass(cls)


def encode(value, strict: bool = False) -> bytes:
    out: list = []
    _encode(value, out, strict)
    return b"".join(out)


def _text(s: str, out: list) -> None:
    data = s.encode("utf-8")
    out.append(_Q.pack(len(data)))
    out.append(data)


def _encode(v, out: list, strict: bool) -> None:  # noqa: C901  one branch per kind
    t = type(v)
    if v is None:
        out.append(b"N")
    elif t is bool:
        out.append(b"T" if v else b"F")
    elif t is int:
        if -(1 << 63) <= v < (1 << 63):
            out.append(b"i")
            out.append(_q.pack(v))
        else:
            out.append(b"I")
            _text(str(v), out)
    elif t is float:
        out.append(b"f")
        out.append(_D.pack(v))
    elif t is str:
        out.append(b"s")
        _text(v, out)
    elif t is bytes:
        out.append(b"b")
        out.append(_Q.pack(len(v)))
        out.append(v)
    elif t is np.ndarray and not v.dtype.hasobject:
        array = np.ascontiguousarray(v)
        out.append(b"a")
        _text(array.dtype.str, out)
        out.append(_Q.pack(array.ndim))
        out.extend(_Q.pack(n) for n in array.shape)
        out.append(_Q.pack(array.nbytes))
        out.append(array.tobytes())
    elif isinstance(v, np.generic) and not isinstance(v, np.object_):
        out.append(b"g")
        _text(v.dtype.str, out)
        data = v.tobytes()
        out.append(_Q.pack(len(data)))
        out.append(data)
    elif t is list or t is tuple:
        out.append(b"l" if t is list else b"t")
        out.append(_Q.pack(len(v)))
        for item in v:
            _encode(item, out, strict)
    elif t is dict:
        out.append(b"d")
        out.append(_Q.pack(len(v)))
        for key, item in v.items():
            _encode(key, out, strict)
            _encode(item, out, strict)
    elif _ours(t):
        fields = dataclasses.fields(v)
        out.append(b"D")
        _text(f"{t.__module__}:{t.__qualname__}", out)
        out.append(_Q.pack(len(fields)))
        for field in fields:
            _encode(getattr(v, field.name), out, strict)
    else:
        if strict:
            raise NotEncodable(f"{t.__module__}.{t.__qualname__} would be pickled")
        data = pickle.dumps(v, protocol=pickle.HIGHEST_PROTOCOL)
        out.append(b"P")
        out.append(_Q.pack(len(data)))
        out.append(data)


def encoded_size(value) -> int:
    """len(encode(value)), computed without encoding: a walk over the value's fields,
    no copy of any array (unigraph.beam.shuffle counts shuffled bytes with it)."""
    t = type(value)
    if value is None or t is bool:
        return 1
    if t is int:
        return 9 if -(1 << 63) <= value < (1 << 63) else 9 + len(str(value).encode("utf-8"))
    if t is float:
        return 9
    if t is str:
        return 9 + len(value.encode("utf-8"))
    if t is bytes:
        return 9 + len(value)
    if t is np.ndarray and not value.dtype.hasobject:
        return 1 + 8 + len(value.dtype.str) + 8 + 8 * value.ndim + 8 + value.nbytes
    if isinstance(value, np.generic) and not isinstance(value, np.object_):
        return 1 + 8 + len(value.dtype.str) + 8 + value.dtype.itemsize
    if t is list or t is tuple:
        return 9 + sum(encoded_size(item) for item in value)
    if t is dict:
        return 9 + sum(encoded_size(k) + encoded_size(v) for k, v in value.items())
    if _ours(t):
        name = f"{t.__module__}:{t.__qualname__}"
        return (1 + 8 + len(name.encode("utf-8")) + 8
                + sum(encoded_size(getattr(value, f.name)) for f in dataclasses.fields(value)))
    return 9 + len(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))


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
    view = memoryview(data)
    value, end = _decode(view, 0)
    if end != len(view):
        raise ValueError(f"element codec: {len(view) - end} bytes after the value")
    return value


def _count(view, at: int) -> tuple[int, int]:
    return _Q.unpack_from(view, at)[0], at + 8


def _read_text(view, at: int) -> tuple[str, int]:
    n, at = _count(view, at)
    return bytes(view[at:at + n]).decode("utf-8"), at + n


def _decode(view, at: int):  # noqa: C901
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
        dtype, at = _read_text(view, at)
        ndim, at = _count(view, at)
        shape = tuple(
            _Q.unpack_from(view, at + 8 * i)[0] for i in range(ndim))
        at += 8 * ndim
        n, at = _count(view, at)
        # A copy: the array owns its memory and is writable, like the one encoded.
        array = np.frombuffer(view[at:at + n], dtype=np.dtype(dtype)).reshape(shape).copy()
        return array, at + n
    if tag == 0x67:  # g
        dtype, at = _read_text(view, at)
        n, at = _count(view, at)
        return np.frombuffer(view[at:at + n], dtype=np.dtype(dtype))[0], at + n
    if tag == 0x6C or tag == 0x74:  # l, t
        n, at = _count(view, at)
        items = []
        for _ in range(n):
            item, at = _decode(view, at)
            items.append(item)
        return (items if tag == 0x6C else tuple(items)), at
    if tag == 0x64:  # d
        n, at = _count(view, at)
        result = {}
        for _ in range(n):
            key, at = _decode(view, at)
            result[key], at = _decode(view, at)
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
            value, at = _decode(view, at)
            object.__setattr__(obj, field.name, value)
        return obj, at
    if tag == 0x50:  # P
        n, at = _count(view, at)
        return pickle.loads(view[at:at + n]), at + n
    raise ValueError(f"element codec: unknown tag {tag!r} at byte {at - 1}")
