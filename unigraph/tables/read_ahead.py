"""Running an iterator a few items ahead of its consumer, in a thread.

Arrow parses CSV blocks in C++ with the GIL released; in a thread of its own it
parses the next batch while the caller's thread decodes the one before, so a
read costs about the longer of the two instead of their sum.

`read_ahead(items, depth)` yields what `items` yields, in order, and raises
what it raises, where it raises it (after the items before). Closing the
returned generator early (a `break`, an error downstream) stops the thread
and closes `items` (its files) in that thread.
"""
from __future__ import annotations

import queue
import threading
from typing import Iterator, TypeVar

T = TypeVar("T")

_DONE = object()
_POLL_SECONDS = 0.1  # how often a producer blocked on a full queue checks for a stop


class _Raised:
    def __init__(self, error: BaseException):
        self.error = error


def read_ahead(items: Iterator[T], depth: int = 2) -> Iterator[T]:
    """The items of `items`, produced by a thread at most `depth` items ahead."""
    ready: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def produce() -> None:
        try:
            for item in items:
                if not _put(ready, item, stop):
                    return
            _put(ready, _DONE, stop)
        except BaseException as error:  # handed to the consumer, raised there
            _put(ready, _Raised(error), stop)
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()

    thread = threading.Thread(target=produce, name="read-ahead", daemon=True)
    thread.start()
    try:
        while True:
            item = ready.get()
            if item is _DONE:
                return
            if isinstance(item, _Raised):
                raise item.error
            yield item
    finally:
        stop.set()
        thread.join()


def _put(ready: queue.Queue, item, stop: threading.Event) -> bool:
    """Puts `item` unless the consumer stopped first; whether it was put."""
    while not stop.is_set():
        try:
            ready.put(item, timeout=_POLL_SECONDS)
            return True
        except queue.Full:
            continue
    return False
