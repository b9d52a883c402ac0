"""Ctrl-C is one line and exit status 130 at every stage of every engine (issue 36, item 6).

Real signals to real processes: each command runs as a child in a process group of its
own, and the group gets SIGINT (what a terminal's Ctrl-C sends: workers included) or
SIGTERM at a known stage. Stages are reached without sleeping on a guess: an input that
is a FIFO blocks the command in its read until the test signals it (a table while the
graph is read, seeds during the checks, a shard while the readers read); a staged file
marks the stage where shards are written. Each case asserts the status, the one line on
stderr, no traceback, and what is left on disk (the previous output byte for byte, no
partial output).
"""
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest

from tests.conftest import REPO_ROOT, default_sigint
from tests.pipelines.test_sample_safety import DEMO, DEMO_SPEC, tree

SIGNALS = {"SIGINT": signal.SIGINT, "SIGTERM": signal.SIGTERM}


class Fifo:
    """A FIFO at `path` in place of a file. Every open for reading gets `content` (the
    file's bytes) until `block()` holds; the next open gets nothing: the command waits
    in its read, and `opened` is set. `release()` completes that read as a read of the
    file completes (its bytes, then end of file), and every later open gets them at once.
    A read that ended early, failed or got the bytes twice would race the interrupt: the
    command must stop for the signal, not for a read error the test made.

    A FIFO does not tell one reader from the next: while a reader has it open, an open
    for writing returns at once and its bytes go to that same reader. So the server opens
    it again only once no process has it open (the reader took its end of file)."""

    def __init__(self, path, content=b"", block=lambda: True):
        os.mkfifo(path)
        self.path, self.content, self.block = str(path), content, block
        self.opened, self.released, self.stopped = threading.Event(), threading.Event(), False
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while not self.stopped:
            fd = os.open(self.path, os.O_WRONLY)  # blocks until a reader opens it
            if not self.released.is_set() and not self.opened.is_set() and self.block():
                self.opened.set()
                self.released.wait()
            # A daemon thread: an interrupted reader that never takes the rest blocks
            # only this thread.
            self._complete(fd)
            self._wait_until_closed()

    def _complete(self, fd):
        try:
            os.write(fd, self.content)  # a FIFO holds 64 kB: the reader takes the rest
        except OSError:
            pass  # it read what it wanted (a header) and closed, or it has ended
        finally:
            os.close(fd)

    def _wait_until_closed(self, timeout=30.0):
        """Until no process has the FIFO open: a reader waiting in its open has no file
        descriptor yet, so it is the next reader, not the last one."""
        deadline = time.monotonic() + timeout
        while self._open_anywhere() and time.monotonic() < deadline:
            time.sleep(0.002)

    def _open_anywhere(self):
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                fds = os.listdir(f"/proc/{pid}/fd")
            except OSError:
                continue  # the process has ended
            for fd in fds:
                try:
                    if os.readlink(f"/proc/{pid}/fd/{fd}") == self.path:
                        return True
                except OSError:
                    continue  # closed since the listing (the listing's own one, too)
        return False

    def release(self):
        self.released.set()

    def stop(self):
        self.release()
        self.stopped = True
        try:  # the server waits in its open: let it see `stopped`
            os.close(os.open(self.path, os.O_RDONLY | os.O_NONBLOCK))
        except OSError:
            pass


def fifo_for(path, block=lambda: True):
    """The file at `path` replaced by a Fifo serving its bytes until `block()`."""
    with open(path, "rb") as f:
        content = f.read()
    os.remove(path)
    return Fifo(path, content, block)


def interrupt(module, args, ready, signum=signal.SIGINT, timeout=120.0, then=None):
    """Runs `python -m module args`, waits until `ready()`, signals its process group,
    calls `then()` (a Fifo's release: the read in flight completes); returns (status,
    stdout, stderr)."""
    process = subprocess.Popen([sys.executable, "-m", module, *map(str, args)], cwd=REPO_ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True, preexec_fn=default_sigint)
    deadline = time.monotonic() + timeout
    try:
        while not ready():
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the stage was never reached"
            time.sleep(0.005)
        os.killpg(process.pid, signum)
        if then is not None:
            time.sleep(0.2)  # the signal is handled first, then the read returns
            then()
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return process.returncode, out, err


def one_interrupt_line(code, err, prog, said="interrupted"):
    lines = err.strip().splitlines()
    assert code == 130, err
    assert "Traceback" not in err and len(lines) == 1, err
    assert lines[0] == f"{prog}: {said}", err


def staged(out, temporary=False):
    """Whether a shard file (a temporary one: being written) is in a staging folder."""
    def found():
        if not os.path.isdir(out):
            return False
        for folder in os.listdir(out):
            if folder.startswith(".sample-staging-") and os.path.isdir(out / folder):
                for name in os.listdir(out / folder):
                    if ".tfrecord" in name and (".tmp-" in name) == temporary:
                        return True
        return False
    return found


@pytest.fixture(scope="module")
def graphs(tmp_path_factory):
    """A synthetic graph big enough for the memory engine's workers to take a while, and
    the demo graph's output for seed 1 (the previous output every case must keep)."""
    root = tmp_path_factory.mktemp("interrupts")
    subprocess.run([sys.executable, "-m", "pipelines.synthetic", "--scale", "0.005",
                    "--output", str(root / "syn"), "--format", "csv", "--quiet"],
                   cwd=REPO_ROOT, check=True, capture_output=True)
    from pipelines import sample
    assert sample.main(["--graph", DEMO, "--spec", DEMO_SPEC, "--output",
                        str(root / "demo_out"), "--seed", "1", "--quiet"]) == 0
    return root


def previous_output(graphs, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(graphs / "demo_out", out)
    return out, tree(out)


SAMPLE_SAID = "interrupted; previous output kept"


# ---- sample, each engine, each stage -------------------------------------------------------

@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM"])
def test_sample_on_beam_writing_shards(graphs, tmp_path, how):
    """Issue 36: Ctrl-C while the Beam engine wrote shards gave 125 lines of traceback
    and exit status 1 (Beam wraps the KeyboardInterrupt in a RuntimeError)."""
    out, before = previous_output(graphs, tmp_path)
    code, _, err = interrupt("pipelines.sample", ["--graph", DEMO, "--spec", DEMO_SPEC,
                                                  "--output", out, "--engine", "beam",
                                                  "--seed", "2", "--quiet"], staged(out),
                             SIGNALS[how])
    one_interrupt_line(code, err, "sample", SAMPLE_SAID)
    assert tree(out) == before


def test_sample_on_beam_with_worker_processes(graphs, tmp_path):
    """Beam's multi-processing mode: the signal reaches its SDK worker processes, which
    print their own tracebacks, and Beam's threads here report the workers' deaths;
    none of it reaches the terminal."""
    out, before = previous_output(graphs, tmp_path)
    code, _, err = interrupt("pipelines.sample", [
        "--graph", DEMO, "--spec", DEMO_SPEC, "--output", out, "--engine", "beam", "--seed",
        "2", "--quiet", "--direct_running_mode=multi_processing", "--direct_num_workers=2"],
        staged(out))
    assert code == 130 and err.strip().splitlines()[-1] == f"sample: {SAMPLE_SAID}", err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    assert "exited with return code" not in err, err
    assert tree(out) == before


def test_sample_on_beam_while_reading_a_table(graphs, tmp_path):
    """The checks read the table's header and first bytes; the pipeline's Read step
    waits in it."""
    graph = tmp_path / "g"
    shutil.copytree(DEMO, graph)
    out, before = previous_output(graphs, tmp_path)
    fifo = fifo_for(graph / "cites.csv", lambda: os.path.exists(out / ".sample-lock"))
    try:
        code, _, err = interrupt("pipelines.sample", [
            "--graph", graph, "--spec", DEMO_SPEC, "--output", out, "--engine", "beam",
            "--quiet"], fifo.opened.is_set, then=fifo.release)
    finally:
        fifo.stop()
    one_interrupt_line(code, err, "sample", SAMPLE_SAID)
    assert tree(out) == before


@pytest.mark.parametrize("stage", ["loading the graph", "workers writing shards"])
def test_sample_in_memory(graphs, tmp_path, stage):
    syn = tmp_path / "syn"
    shutil.copytree(graphs / "syn", syn)
    out, before = previous_output(graphs, tmp_path)
    fifo = None
    if stage == "loading the graph":
        fifo = fifo_for(syn / "writes.csv", lambda: os.path.exists(out / ".sample-lock"))
        ready = fifo.opened.is_set
    else:
        ready = staged(out, temporary=True)
    try:
        code, _, err = interrupt("pipelines.sample", [
            "--graph", syn, "--spec", syn / "sampling_spec.pbtxt", "--output", out,
            "--engine", "memory", "--workers", "2", "--quiet"], ready,
            then=fifo.release if fifo is not None else None)
    finally:
        if fifo is not None:
            fifo.stop()
    one_interrupt_line(code, err, "sample", SAMPLE_SAID)
    assert tree(out) == before


def test_sample_during_its_checks(graphs, tmp_path):
    """Before anything is written: the seeds are read by the checks."""
    fifo = Fifo(tmp_path / "seeds.csv")  # the checks read it first
    out = tmp_path / "new"
    try:
        code, _, err = interrupt("pipelines.sample", [
            "--graph", DEMO, "--spec", DEMO_SPEC, "--seeds", fifo.path, "--output", out,
            "--quiet"], fifo.opened.is_set, then=fifo.release)
    finally:
        fifo.stop()
    one_interrupt_line(code, err, "sample", SAMPLE_SAID)
    assert not out.exists()


# ---- the other commands -------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["parquet", "store"])
def test_unigraph_convert(tmp_path, fmt):
    graph = tmp_path / "g"
    shutil.copytree(DEMO, graph)
    converted = tmp_path / "converted"
    # Blocks once the conversion writes (its staging folder exists), or at once when the
    # store's build reads the table (it has checked the header by then).
    fifo = fifo_for(graph / "writes.csv", lambda: os.path.exists(converted) or any(
        n.startswith(".converted.staging-") for n in os.listdir(tmp_path)))
    try:
        code, _, err = interrupt("pipelines.convert", [
            "--graph", graph, "--output", converted, "--format", fmt],
            fifo.opened.is_set, then=fifo.release)
    finally:
        fifo.stop()
    one_interrupt_line(code, err, "unigraph-convert", "interrupted; nothing written")
    assert sorted(os.listdir(tmp_path)) == ["g"]  # no output, no staging folder


@pytest.fixture
def output_with_a_fifo_shard(graphs, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(graphs / "demo_out", out)
    shard = sorted(n for n in os.listdir(out) if n.endswith(".tfrecord"))[-1]
    fifo = fifo_for(out / shard)
    yield out, fifo
    fifo.stop()


@pytest.mark.parametrize("module, prog, flags, said", [
    ("pipelines.sample_check", "sample-check", [], "interrupted"),
    ("pipelines.sample_stats", "sample-stats", ["--workers", "2", "--quiet"],
     "interrupted; no report written"),
    ("pipelines.sample_stats", "sample-stats", ["--workers", "1", "--quiet", "--no-html"],
     "interrupted; no report written"),
    ("pipelines.inspect_output", "sample-inspect", ["--seed-id", "nobody"], "interrupted"),
])
def test_the_readers(output_with_a_fifo_shard, module, prog, flags, said):
    out, fifo = output_with_a_fifo_shard
    code, _, err = interrupt(module, [out, *flags], fifo.opened.is_set, then=fifo.release)
    one_interrupt_line(code, err, prog, said)
    assert not (out / "stats").exists()


def test_synthetic_graph(tmp_path):
    out = tmp_path / "syn"
    code, _, err = interrupt("pipelines.synthetic", ["--scale", "0.05", "--output", out,
                                                     "--quiet"],
                             lambda: os.path.isdir(out) and os.listdir(out))
    one_interrupt_line(code, err, "synthetic-graph")


def test_every_command_is_interruptible():
    """The decorator is on every console script's main (setup.py's entry points)."""
    import importlib
    import re

    with open(os.path.join(REPO_ROOT, "setup.py")) as f:
        scripts = re.findall(r'"([\w-]+)=([\w.]+):main"', f.read())
    assert len(scripts) >= 8
    for name, module in scripts:
        main = importlib.import_module(module).main
        assert getattr(main, "__wrapped__", None) is not None, f"{name}: not interruptible"


@pytest.mark.parametrize("command", [
    ["pipelines.graph_check", os.path.join(REPO_ROOT, "examples", "mag_tiny")],
    ["pipelines.inspect_output", "--help"],
])
def test_a_closed_stdout_ends_a_command_quietly(command):
    """`command | head`: the reader closed the pipe; no traceback, status 0."""
    process = subprocess.Popen([sys.executable, "-m", *command], cwd=REPO_ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()  # before the command writes anything
    err = process.stderr.read().decode()
    assert process.wait(60) == 0, err
    assert "Traceback" not in err and "Exception ignored" not in err, err


FINISHING_COMMAND = """
import atexit, sys, threading, time
from unigraph.interrupts import interruptible

atexit.register(lambda: print("atexit ran", flush=True))

def late_write():
    time.sleep(0.3)
    with open(sys.argv[1], "w") as f:
        f.write("written")

@interruptible("demo")
def main(argv=None):
    threading.Thread(target=late_write).start()  # not a daemon: an exit waits for it
    return {"int": 3, "str": "demo: a message", "none": None}[sys.argv[2]]

sys.exit(main())
"""


@pytest.mark.parametrize("returned, status, err", [("int", 3, ""), ("none", 0, ""),
                                                   ("str", 1, "demo: a message\n")])
def test_a_finished_command_ends_as_a_normal_exit_would(tmp_path, returned, status, err):
    """A finished command skips the interpreter's teardown (where Arrow's thread pools
    abort at random) but keeps what an exit does before it: its threads finish, atexit
    handlers run, and the status (or message) is the one `main` returned."""
    marker = tmp_path / "late"
    done = subprocess.run([sys.executable, "-c", FINISHING_COMMAND, str(marker), returned],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == status, done.stderr
    assert done.stdout == "atexit ran\n" and done.stderr == err
    assert marker.read_text() == "written"


CHATTY_COMMAND = """
import os, sys, threading, time
from unigraph.interrupts import interruptible

stop_talking = threading.Event()

def chatter():  # a library's thread reporting after the interrupt, as Beam's do
    while not stop_talking.is_set():
        sys.stderr.write("    return self._next()")
        sys.stderr.write("\\n")
        os.write(2, b"native: worker gone\\n")

@interruptible("demo", "interrupted; previous output kept")
def main(argv=None):
    print("before the interrupt", file=sys.stderr)
    threading.Thread(target=chatter, daemon=True).start()
    time.sleep(0.05)
    raise KeyboardInterrupt

sys.exit(main())
"""


def test_the_interrupt_line_is_the_last_thing_on_stderr():
    """Threads still printing after Ctrl-C (Beam's, reporting their workers' deaths) once
    put a piece of a traceback after `sample`'s line, and into it: now the line ends
    stderr, whole, whatever another thread writes meanwhile."""
    for _ in range(5):
        done = subprocess.run([sys.executable, "-c", CHATTY_COMMAND], cwd=REPO_ROOT,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 130, done.stderr
        lines = done.stderr.splitlines()
        assert lines[0] == "before the interrupt"
        assert lines[-1] == "demo: interrupted; previous output kept", lines[-3:]
        assert done.stderr.endswith("\ndemo: interrupted; previous output kept\n")
        assert done.stderr.count("demo: ") == 1
