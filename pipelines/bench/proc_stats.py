"""Wall time and peak memory of a command and every process it starts, read from /proc.

`run_measured(cmd)` starts `cmd`, and while it runs a thread polls /proc every
`interval` seconds (default 50 ms): it finds the process tree (the child, its
children, their children, ... by parent pid from /proc/<pid>/stat) and sums the
resident set size (/proc/<pid>/statm, resident pages * page size) over it. The
peak of that sum is the reported memory. Notes on what it measures:
  - a sum of RSS counts pages shared between processes (the Python binary, shared
    libraries, copy-on-write pages after fork) once per process, so it is an upper
    bound on the tree's physical memory; it is what a container's per-process
    accounting would see, roughly;
  - a process that lives less than one interval may be missed, and a peak between
    two polls is not seen: the figure is a lower bound on the true peak sum;
  - processes that leave the tree (daemonise, get re-parented) stop being counted.
Pages swapped out are not resident: beside the RSS, each poll reads every process's
swapped-out memory (VmSwap in /proc/<pid>/status), and the peak of RSS + swap summed
over the tree is reported too (the memory the job held, wherever it was; the same as
the RSS on a machine that did not swap).
The peak PSS (proportional set size, /proc/<pid>/smaps_rollup) is polled beside it,
every PSS_EVERY-th poll since the kernel walks the page tables to compute it: a page
shared by n processes counts 1/n in each, so the sum is the tree's physical memory,
without the double counting of copy-on-write pages that forked workers share with
their parent (the in-memory engine's graph). It is a lower bound on the true peak
as well, sampled less often. The walk's cost grows with the pages the tree has
resident: six workers mapping a 10 GB graph store took this thread a fifth of a
2-core machine, and the job 10-25% longer (its figures then measured the monitor
too). So a PSS reading waits until the last one's CPU time (page walks included) is
at most PSS_CPU_SHARE of the time since it began.
CPU time comes from getrusage(RUSAGE_CHILDREN) before and after the run: it counts
the child and every descendant that was waited for, and also any other child this
process reaps meanwhile (run one measured command at a time). On a shared machine,
CPU time is steadier than wall time.
Linux only (needs /proc); no psutil.
"""
from __future__ import annotations

import dataclasses
import os
import resource
import signal
import subprocess
import tempfile
import threading
import time

PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


def parent_map() -> dict[int, int]:
    """pid -> parent pid of every process visible in /proc."""
    parents = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:  # exited since listdir
            continue
        # The command name (field 2) is in parentheses and may hold spaces or ')'.
        fields = stat[stat.rfind(b")") + 2:].split()
        parents[int(entry)] = int(fields[1])
    return parents


def process_tree(root: int) -> list[int]:
    """`root` and all its descendants that are alive now."""
    children: dict[int, list[int]] = {}
    for pid, ppid in parent_map().items():
        children.setdefault(ppid, []).append(pid)
    tree, stack = [], [root]
    while stack:
        pid = stack.pop()
        tree.append(pid)
        stack.extend(children.get(pid, ()))
    return tree


def rss_bytes(pid: int) -> int:
    """Resident set size of one process; 0 if it is gone."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * PAGE_SIZE
    except (OSError, IndexError, ValueError):
        return 0


def kib_field(path: str, prefix: bytes) -> int:
    """The value in bytes of the first line starting with `prefix` of a /proc file
    that gives sizes in kB; 0 if the process is gone (or the kernel lacks the line)."""
    try:
        with open(path, "rb") as f:
            for line in f:
                if line.startswith(prefix):
                    return int(line.split()[1]) * 1024
    except (OSError, IndexError, ValueError):
        pass
    return 0


def swap_bytes(pid: int) -> int:
    """Swapped-out memory of one process; 0 if it is gone."""
    return kib_field(f"/proc/{pid}/status", b"VmSwap:")


def pss_bytes(pid: int) -> int:
    """Proportional set size of one process; 0 if it is gone (or the kernel lacks it)."""
    return kib_field(f"/proc/{pid}/smaps_rollup", b"Pss:")


PSS_EVERY = 4  # polls per PSS reading, at most
PSS_CPU_SHARE = 0.02  # of one core, at most, for the PSS readings


class TreeMonitor:
    """Polls the tree of `pid` in a thread; `stop()` returns (peak RSS sum, max process
    count); `peak_pss` holds the peak PSS sum, `peak_rss_swap` that of RSS + swap."""

    def __init__(self, pid: int, interval: float = 0.05):
        self.pid, self.interval = pid, interval
        self.peak_rss = 0
        self.peak_rss_swap = 0
        self.peak_pss = 0
        self.max_processes = 0
        self.polls = 0
        self.pss_readings = 0
        self._pss_due = 0.0  # time.monotonic() from which the PSS may be read again
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> "TreeMonitor":
        self._thread.start()
        return self

    def poll(self) -> None:
        tree = process_tree(self.pid)
        rss, count = sum(rss_bytes(pid) for pid in tree), len(tree)
        swapped = sum(swap_bytes(pid) for pid in tree)
        self.peak_rss_swap = max(self.peak_rss_swap, rss + swapped)
        if self.polls % PSS_EVERY == 0 and time.monotonic() >= self._pss_due:
            started, cpu = time.monotonic(), time.thread_time()
            self.peak_pss = max(self.peak_pss, sum(pss_bytes(pid) for pid in tree))
            self.pss_readings += 1
            self._pss_due = started + (time.thread_time() - cpu) / PSS_CPU_SHARE
        self.peak_rss = max(self.peak_rss, rss)
        self.max_processes = max(self.max_processes, count)
        self.polls += 1

    def _run(self) -> None:
        while not self._stop.is_set():
            self.poll()
            self._stop.wait(self.interval)

    def stop(self) -> tuple[int, int]:
        self._stop.set()
        self._thread.join()
        return self.peak_rss, self.max_processes


def kill_tree(root: int) -> None:
    """SIGKILL `root` and its descendants (children first), each by its pid."""
    for pid in reversed(process_tree(root)):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _kill_all(root: int) -> None:
    """SIGKILL the process group `root` leads, then any descendant that left the group."""
    try:
        os.killpg(root, signal.SIGKILL)
    except OSError:
        pass
    kill_tree(root)


@dataclasses.dataclass
class RunStats:
    returncode: int
    wall_seconds: float      # from just before the process starts until it has exited
    peak_rss_bytes: int      # max over polls of the RSS summed over the process tree
    peak_pss_bytes: int      # the same for PSS (shared pages divided among their sharers)
    peak_rss_swap_bytes: int  # the same for RSS + swapped-out memory
    max_processes: int       # the most processes seen in the tree at one poll
    cpu_seconds: float       # user + system CPU of the tree (processes that were waited for)
    polls: int
    stdout: str
    stderr: str


def run_measured(cmd: list[str], *, interval: float = 0.05, cwd: str | None = None,
                 env: dict | None = None, timeout: float | None = None) -> RunStats:
    """Runs `cmd` to completion, measuring its process tree (see the module docstring)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        # Its own session: on a timeout the whole process group dies at once, including a
        # descendant forked while the tree is being walked.
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=cwd, env=env,
                                start_new_session=True)
        monitor = TreeMonitor(proc.pid, interval).start()
        try:
            returncode = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_all(proc.pid)
            returncode = proc.wait()
        except BaseException:  # e.g. Ctrl-C: the new session does not get it, so stop it here
            _kill_all(proc.pid)
            proc.wait()
            raise
        finally:
            wall = time.perf_counter() - started
            peak, processes = monitor.stop()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        out.seek(0)
        err.seek(0)
        return RunStats(returncode, wall, peak, monitor.peak_pss, monitor.peak_rss_swap,
                        processes, cpu, monitor.polls,
                        out.read().decode("utf-8", "replace"),
                        err.read().decode("utf-8", "replace"))
