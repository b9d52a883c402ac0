"""Ctrl-C and SIGTERM: one line and exit status 130 in every command, at every stage.

- **Commands** (`interruptible`): a command's `main` turns SIGTERM (a scheduler's stop)
  into KeyboardInterrupt like Ctrl-C, and KeyboardInterrupt into one line on stderr and
  exit status 130; whatever the command was doing cleans up on the way out (`finally`,
  `except BaseException`), as for any other error. Run from the command line (`argv` is
  None), the line is the last thing on stderr (`_last_words`: whatever another thread
  prints later goes nowhere), and the process then ends at once: a library's native
  thread still blocked in a read (pyarrow's CSV reader on a pipe) would otherwise call
  back into an interpreter that is shutting down, and Python aborts ("Fatal Python
  error: PyGILState_Release").
  A closed stdout (`| head`) ends a command quietly with status 0: the reader has what it
  wanted. A command that finished ends the same way once its output is flushed and what a
  normal exit runs first has run (its threads joined, `atexit`): Arrow's C++ thread pools
  abort at random in the interpreter's teardown ("terminate called without an active
  exception", exit status 134, apache/arrow#34314), after the work was done and printed.
- **Worker processes** (`quiet_worker`): a terminal's Ctrl-C reaches the whole process
  group. A forked worker ignores it (the parent stops the work and the pool) and dies
  with its parent, so no worker prints a traceback or outlives a killed parent; the
  parent forks them inside `workers_forked_quietly`, so none is interrupted before
  `quiet_worker` runs.
- **Wrapped interrupts** (`interrupted_in`): libraries that run user code wrap what it
  raises: Beam turns a KeyboardInterrupt raised inside a step into a RuntimeError
  (`KeyboardInterrupt [while running 'Sample/Assemble/...']`). `interrupted_in` finds the
  interrupt in such an exception's chain, so the driver raises it again as what it is.
"""
from __future__ import annotations

import atexit
import contextlib
import ctypes
import functools
import logging
import os
import signal
import sys
import threading
from typing import Callable

EXIT_INTERRUPTED = 130


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt


def interruptible(prog: str, said: str = "interrupted"):
    """Decorates a command's `main(argv)`: SIGTERM as Ctrl-C; KeyboardInterrupt as
    `<prog>: <said>` on stderr and exit status 130."""
    def decorate(main: Callable[..., int]) -> Callable[..., int]:
        @functools.wraps(main)
        def run(argv=None) -> int:
            on_main_thread = threading.current_thread() is threading.main_thread()
            previous = signal.signal(signal.SIGTERM, _raise_interrupt) if on_main_thread \
                else None
            try:
                status = main(argv)
                sys.stdout.flush()  # a closed pipe found here, not at the interpreter's exit
            except KeyboardInterrupt:
                if argv is None:
                    _last_words(f"{prog}: {said}")
                    _end_process(EXIT_INTERRUPTED)
                print(f"{prog}: {said}", file=sys.stderr)
                return EXIT_INTERRUPTED
            except BrokenPipeError:
                _silence_stdout()
                status = 0
            finally:
                if on_main_thread:
                    signal.signal(signal.SIGTERM, previous)
            if argv is None and on_main_thread:
                _finish_process(status)
            return status
        return run
    return decorate


def _last_words(line: str) -> None:
    """`line` as the last thing on stderr of a process about to end: descriptor 2 is
    pointed at /dev/null first, then the line written to the stderr it was, in one
    write, on a line of its own. A library's threads may still print after an interrupt
    (Beam's report their workers' deaths, late, a traceback written a piece at a time):
    a late piece came after the line, or before it on the same line. The line starts
    with a newline, which ends such a piece (on a terminal, the line after the "^C")."""
    try:
        stderr = os.dup(2)
    except OSError:  # no descriptor 2, or none to spare: the line as any other
        print(line, file=sys.stderr)
        return
    try:
        _to_devnull(2)
    except OSError:  # descriptor 2 left as it is: the line still goes in one write
        pass
    try:
        os.write(stderr, ("\n" + line + "\n").encode("utf-8", "backslashreplace"))
    except OSError:
        pass
    finally:
        os.close(stderr)


def _silence_stdout() -> None:
    """After a closed stdout: later writes (the interpreter's last flush) go nowhere."""
    try:
        _to_devnull(sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _to_devnull(fd: int) -> None:
    """Descriptor `fd` pointed at /dev/null: what is written to it goes nowhere."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def _end_process(status: int) -> None:
    """Ends the process now, its cleanup done: the logs and streams flushed, no
    interpreter shutdown for a native thread to trip over."""
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)


def _finish_process(status) -> None:
    """Ends a command that finished: what a normal exit does first (threads joined,
    `atexit` handlers run), then the process ends without the interpreter's teardown."""
    if isinstance(status, str):  # as sys.exit takes it: the message, then status 1
        print(status, file=sys.stderr)
    code = status if isinstance(status, int) else (0 if status is None else 1)
    shutdown_threads = getattr(threading, "_shutdown", None)  # what Python's exit calls
    if shutdown_threads is not None:
        shutdown_threads()
    atexit._run_exitfuncs()
    _end_process(code)


_STOPS = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def workers_forked_quietly():
    """Around the fork of `quiet_worker` processes (a Pool's constructor, an executor's
    first submit): Ctrl-C and SIGTERM are held back meanwhile, so a worker starts with
    them blocked until `quiet_worker` has set its own handlers (a Ctrl-C between the fork
    and the initializer made a worker print 'Process ForkPoolWorker-2:' and a
    traceback). The parent receives a signal that came meanwhile when this ends."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


class _HeldInterrupts:
    """The handlers `hold_interrupts` replaced, and the signals that came meanwhile."""

    def __init__(self):
        self.came: list[int] = []
        self.previous = {signum: signal.signal(signum, self._note) for signum in _STOPS}

    def _note(self, signum, frame):
        self.came.append(signum)


def hold_interrupts():
    """Holds Ctrl-C and SIGTERM back until `let_interrupts_through`: for a step that must
    not be cut between making something and entering the `try` that undoes it (Python
    raises a KeyboardInterrupt between any two calls, even between a call's return and
    the assignment of its result). Python runs signal handlers on the main thread only,
    whichever thread the kernel delivered the signal to, so replacing the handlers holds
    every signal (blocking it with a mask would hold only those delivered to this thread,
    and Arrow's threads take them too). What it returns goes to `let_interrupts_through`."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return _HeldInterrupts()


def let_interrupts_through(held) -> None:
    """Ends `hold_interrupts`: the handlers are back, and a signal that came meanwhile is
    handled now, in the caller (a KeyboardInterrupt raised here)."""
    if held is None:
        return
    for signum, handler in held.previous.items():  # None: set outside Python
        signal.signal(signum, signal.SIG_DFL if handler is None else handler)
    for signum in dict.fromkeys(held.came):
        handler = held.previous[signum]
        if callable(handler):
            handler(signum, None)
        elif handler == signal.SIG_DFL:
            os.kill(os.getpid(), signum)


def quiet_worker() -> None:
    """For a forked worker process, first thing: the parent handles Ctrl-C and SIGTERM
    and then stops the pool; the worker ignores Ctrl-C, ends on SIGTERM without a word,
    and is killed when its parent dies (Linux; elsewhere it ends when its queue closes)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPS)  # held since the fork
    try:
        ctypes.CDLL("libc.so.6").prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def interrupted_in(error: BaseException) -> bool:
    """Whether `error` is, or was raised while handling or because of, a KeyboardInterrupt
    (however a library wrapped it)."""
    seen = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, KeyboardInterrupt):
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False
