"""What this machine offers a run: cores and memory, and what a graph will take of it.

The in-memory engine holds every table the job reads as numpy arrays, plus its
indexes; `memory_needed` estimates that from the tables' file sizes (how much a
byte on disk grows in memory depends on the format: Parquet is compressed, CSV
and TFRecord spell numbers out), so the default engine can be chosen before any
table is read.
"""
from __future__ import annotations

import ctypes
import os

import pyarrow

from sampler.plan.plan import Plan, edge_sets_to_read
from unigraph.storage import paths
from unigraph.tables.columns import set_bytes
from unigraph.schema import LoadedSchema, bigquery_source, has_table, table_files

# Bytes in memory per byte on disk, measured on the MAG-shaped synthetic graph
# (node and edge tables, indexes included), with room to spare.
GROWTH = {"parquet": 4.0, "csv": 2.0, "tfrecord": 1.5, "text": 2.0,
          "bigquery": 2.0}  # BigQuery counts logical (uncompressed) bytes: like CSV
BASE_BYTES = 400 << 20  # Python, numpy, pyarrow and the sampler before any table


def release_free_memory() -> None:
    """Hands freed memory back to the system: Arrow's allocator and glibc keep freed
    blocks for reuse, so without this the process's resident size carries every
    temporary it has freed (at scale 0.25 the loader's peak RSS was 994 MB trimmed
    only at the end, 801 MB trimmed after each table and each CSR), and forked workers
    would count those pages as their own."""
    pyarrow.default_memory_pool().release_unused()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter (malloc.h)


def give_back_freed_memory(threshold: int = 1 << 20) -> bool:
    """For a process that must stay within a memory limit (unigraph-convert --format
    store): glibc maps every block of `threshold` bytes or more on its own and unmaps
    it as soon as it is freed, and Arrow allocates through glibc too. By default glibc's
    threshold grows (up to 32 MB) as mapped blocks are freed, after which freed blocks
    stay in its heap until trimmed, and Arrow's own pool keeps what it freed for reuse:
    the resident size then carries every temporary of the past (the opposite trade of
    sampler.beam.runner.reuse_freed_memory). Returns whether glibc took it."""
    pyarrow.set_memory_pool(pyarrow.system_memory_pool())
    if "glibc.malloc" in os.environ.get("GLIBC_TUNABLES", ""):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, threshold))


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def available_memory() -> int | None:
    """Bytes this process could still use: MemAvailable, capped by the room left under
    each memory cgroup limit on the way from this process's own group to the root."""
    available = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    available = int(line.split()[1]) * 1024
    except OSError:
        return None
    for room in _cgroup_rooms():
        available = room if available is None else min(available, room)
    return available


def _cgroup_rooms():
    """limit - usage of each limited memory cgroup enclosing this process (v2: memory.max
    and memory.current; v1: the memory hierarchy's limit_in_bytes and usage_in_bytes),
    from its own group up. /proc/self/cgroup names the group; a child group's limit
    is not visible at the hierarchy's root."""
    try:
        with open("/proc/self/cgroup") as f:
            lines = f.read().splitlines()
    except OSError:
        return
    for line in lines:
        hierarchy, controllers, path = (line.split(":", 2) + ["", ""])[:3]
        if hierarchy == "0" and controllers == "":
            root, files = "/sys/fs/cgroup", ("memory.max", "memory.current")
        elif "memory" in controllers.split(","):
            root, files = "/sys/fs/cgroup/memory", ("memory.limit_in_bytes",
                                                    "memory.usage_in_bytes")
        else:
            continue
        folder = os.path.normpath(os.path.join(root, path.lstrip("/")))
        while folder.startswith(root):
            try:
                with open(os.path.join(folder, files[0])) as f, \
                        open(os.path.join(folder, files[1])) as g:
                    limit, usage = f.read().strip(), g.read().strip()
            except OSError:
                limit = usage = ""
            if limit.isdigit() and usage.isdigit() and int(limit) < (1 << 60):
                yield max(0, int(limit) - int(usage))
            if folder == root:
                break
            folder = os.path.dirname(folder)


def memory_needed(loaded: LoadedSchema, plan: Plan) -> int:
    """Estimated peak bytes of the in-memory engine for this job (before sampling)."""
    total = BASE_BYTES
    if loaded.store is not None:  # mapped: the page cache holds it, as the system sees fit
        return total
    node_sets = [n for n in plan.node_sets() if has_table(loaded.schema.node_sets[n].metadata)]
    for kind, names in (("nodes", node_sets), ("edges", edge_sets_to_read(plan, loaded.schema))):
        for name in names:
            if bigquery_source(loaded, kind, name) is not None:  # its metadata, or a dry run
                total += int(set_bytes(loaded, kind, name) * GROWTH["bigquery"])
                continue
            for path in table_files(loaded, kind, name):
                total += int(paths.size(path) * GROWTH.get(paths.file_format(path), 2.0))
    return total
