"""What a Ctrl-C during a Beam run prints: the one line `sample` prints, nothing else.

A terminal's Ctrl-C (or a scheduler's SIGTERM to the process group) reaches every
process of the run: besides this one, the SDK worker processes of Beam's
multi-processing mode or a local Dask cluster's workers. Each of those prints its own
traceback on the stderr it shares with this process, and Beam's threads here print
theirs ("Worker subprocess exited with return code -2"); none of that can be turned
off in Beam without patching it (docs/architecture.md: the project never does).

So while a pipeline runs (`quiet_after_interrupt`), descriptor 2 is a pipe: a thread
forwards what arrives to the real stderr, each piece after a short hold; when this
process gets SIGINT or SIGTERM, the gate closes and nothing more passes: the pieces held
and everything after are dropped, and the run's KeyboardInterrupt ends in `sample`'s one
line. Without an interrupt, everything is forwarded, in order, before the run returns.
Only in the main thread, and only where descriptor 2 exists.
"""
from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import threading
import time

HOLD_SECONDS = 0.1  # how long a piece of output waits before it is forwarded
_DRAIN_SECONDS = 1.0  # at the end of a run, the longest wait for output in flight


class _Gate:
    def __init__(self):
        self.interrupted = False
        self._real = os.dup(2)
        self._read, write = os.pipe()
        os.dup2(write, 2)
        os.close(write)
        self._busy = False
        self._thread = threading.Thread(target=self._forward, name="stderr-gate",
                                        daemon=True)
        self._thread.start()

    def _forward(self) -> None:
        try:
            while True:
                chunk = os.read(self._read, 1 << 16)
                if not chunk:
                    return
                self._busy = True
                time.sleep(HOLD_SECONDS)
                ready = select.select([self._read], [], [], 0)[0]
                while ready:  # what arrived meanwhile goes with it, in order
                    more = os.read(self._read, 1 << 16)
                    if not more:
                        break
                    chunk += more
                    ready = select.select([self._read], [], [], 0)[0]
                if not self.interrupted:
                    os.write(self._real, chunk)
                self._busy = False
        except OSError:  # stderr gone, or restored and closed: nothing more to forward
            return
        finally:
            os.close(self._read)

    def close_gate(self) -> None:
        self.interrupted = True

    def restore(self) -> None:
        """Descriptor 2 back to the real stderr; output in flight forwarded first unless
        interrupted. Worker processes may keep the pipe's other end: the thread stays
        (a daemon) and forwards or drops what they still write."""
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        deadline = time.monotonic() + _DRAIN_SECONDS
        while not self.interrupted and time.monotonic() < deadline and (
                self._busy or select.select([self._read], [], [], 0)[0]):
            time.sleep(0.01)
        os.dup2(self._real, 2)
        os.close(self._real)


@contextlib.contextmanager
def quiet_after_interrupt():
    """Yields an object whose `interrupted` says whether SIGINT or SIGTERM arrived; from
    that moment nothing more reaches stderr until the block ends."""
    if threading.current_thread() is not threading.main_thread():
        yield _NoGate()
        return
    try:
        os.fstat(2)
    except OSError:
        yield _NoGate()
        return
    gate = _Gate()

    def interrupted(signum, frame):
        gate.close_gate()
        raise KeyboardInterrupt

    previous = {s: signal.signal(s, interrupted) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield gate
    except BaseException:
        if gate.interrupted:
            raise KeyboardInterrupt from None
        raise
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        gate.restore()


class _NoGate:
    interrupted = False
