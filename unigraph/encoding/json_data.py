"""JSON read from files the project does not control (reports, journals, locks, manifests).

`json.loads` raises RecursionError, not ValueError, on deeply nested input (`[[[[...`), which
would escape every `except ValueError` that turns a bad file into one line; `loads` here
raises ValueError for any input that is not a JSON document.
"""
from __future__ import annotations

import json


def loads(data: bytes | str):
    """The JSON document in `data`; ValueError (UnicodeDecodeError included) if it is none."""
    try:
        return json.loads(data.decode("utf-8") if isinstance(data, bytes) else data)
    except RecursionError:
        raise ValueError("nested too deeply to be read") from None
