"""Runs a command under a memory cap: a child control group with a memory limit.

    with MemoryCap(600 << 20) as cap:
        subprocess.run(cap.wrap(["sample", ...]))
        cap.oom_kills()

For the graph store's larger-than-memory experiment (tests/sampler/store and
pipelines/bench/store_benchmark.py). cgroup v2 (`memory.max` under /sys/fs/cgroup, when its
memory controller is enabled there) or v1 (`memory.limit_in_bytes` under the memory
hierarchy, in a child of this process's own group). The limit counts anonymous memory
and the page cache the group faults in; clean file pages (a mapped store) are
reclaimed under it, anonymous ones cannot be (no swap), so a process whose own
memory exceeds the cap is killed. Needs the right to create groups (root);
`unavailable()` says why not, in one line.
"""
from __future__ import annotations

import os
import shlex
import uuid

from pipelines.bench.proc_stats import kib_field

V2_ROOT = "/sys/fs/cgroup"
V1_ROOT = "/sys/fs/cgroup/memory"


def _v2_usable() -> bool:
    try:
        with open(os.path.join(V2_ROOT, "cgroup.subtree_control")) as f:
            return "memory" in f.read().split()
    except OSError:
        return False


def _v1_parent() -> str | None:
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                _, controllers, path = line.rstrip("\n").split(":", 2)
                if "memory" in controllers.split(","):
                    return os.path.join(V1_ROOT, path.lstrip("/"))
    except OSError:
        pass
    return None


class MemoryCap:
    def __init__(self, limit_bytes: int, swap: bool = False):
        """`swap`: the cap limits RAM only, and what exceeds it is swapped out (where
        the machine has swap) instead of killing the process: to measure on this
        machine a job that needs more memory than it has (`benchmark --ram-cap-mb`)."""
        self.limit = int(limit_bytes)
        self.swap = swap
        self.folder: str | None = None
        self.version = None

    def __enter__(self) -> "MemoryCap":
        name = f"graph-sampler-cap-{uuid.uuid4().hex[:8]}"
        if _v2_usable():
            self.folder, self.version = os.path.join(V2_ROOT, name), 2
            os.mkdir(self.folder)
            self._write("memory.max", self.limit)
            self._write("memory.swap.max", "max" if self.swap else 0, required=False)
        else:
            parent = _v1_parent()
            if parent is None or not os.path.isdir(parent):
                raise OSError("no cgroup v2 memory controller and no v1 memory hierarchy")
            self.folder, self.version = os.path.join(parent, name), 1
            os.mkdir(self.folder)
            self._write("memory.limit_in_bytes", self.limit)
            if not self.swap:  # memory + swap capped alike: nothing may be swapped out
                self._write("memory.memsw.limit_in_bytes", self.limit, required=False)
        return self

    def __exit__(self, *exc) -> None:
        if self.folder is not None:
            try:
                os.rmdir(self.folder)  # empty once its processes ended
            except OSError:
                pass

    def _write(self, name: str, value: int | str, required: bool = True) -> None:
        try:
            with open(os.path.join(self.folder, name), "w") as f:
                f.write(str(value))
        except OSError:
            if required:
                raise

    def _read(self, name: str) -> str:
        with open(os.path.join(self.folder, name)) as f:
            return f.read()

    def wrap(self, cmd: list[str]) -> list[str]:
        """`cmd` run as a member of the group (a shell joins it, then becomes `cmd`)."""
        procs = os.path.join(self.folder, "cgroup.procs")
        return ["sh", "-c", f"echo $$ > {shlex.quote(procs)} && exec \"$@\"", "sh", *cmd]

    def peak_bytes(self) -> int | None:
        """The group's peak charge (anonymous memory and page cache), where the kernel
        keeps it."""
        for name in ("memory.peak", "memory.max_usage_in_bytes"):
            try:
                return int(self._read(name).split()[0])
            except (OSError, ValueError):
                continue
        return None

    def oom_kills(self) -> int:
        """Processes of the group the kernel killed for memory."""
        for name in ("memory.events", "memory.oom_control"):
            try:
                for line in self._read(name).splitlines():
                    key, _, value = line.partition(" ")
                    if key == "oom_kill":
                        return int(value)
            except OSError:
                continue
        return 0


def swap_total_bytes() -> int:
    """The machine's swap space (/proc/meminfo's SwapTotal); 0 where unknown."""
    return kib_field("/proc/meminfo", b"SwapTotal:")


def unavailable() -> str | None:
    """Why no memory cap can be set here (one line), or None when one can."""
    try:
        with MemoryCap(1 << 30):
            pass
    except OSError as e:
        return f"cannot create a memory-limited cgroup here: {e}"
    return None


def drop_cached(folder: str) -> None:
    """Drops a folder's files from the page cache (written back first), so that a capped
    run reads them, and is charged for them, inside its group: pages another process
    left in the cache would be used without counting against the cap."""
    for root, _, files in os.walk(folder):
        for name in files:
            fd = os.open(os.path.join(root, name), os.O_RDONLY)
            try:
                os.fdatasync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)
