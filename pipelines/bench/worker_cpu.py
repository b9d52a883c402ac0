"""The CPU of a DataLoader's workers, read from /proc while they run, and what two idle
cores make of the CPU a batch costs (decode_benchmark's and minibatch_benchmark's
loaders). Linux only."""
from __future__ import annotations

import os
from typing import Optional


def cpu_seconds(pids: list[int]) -> float:
    """CPU seconds of these (live) processes so far (user + system, /proc/<pid>/stat)."""
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])  # utime, stime
    return total / os.sysconf("SC_CLK_TCK")


def two_idle_cores(main_ms: Optional[float], worker_ms: Optional[float]) -> Optional[float]:
    """What 2 workers give over 1 on two otherwise idle cores, from the CPU each batch
    cost with 2 workers: W in a worker, M in the main process. One worker is its own
    bound (W per batch; the main process's M runs beside it on the other core); two
    share both cores with the main process: (W + M) / 2 per batch. So 2W / (W + M).
    Wall time can only show this on a quiet machine; the CPU costs show it on any."""
    if not main_ms or not worker_ms:
        return None
    return round(2 * worker_ms / (worker_ms + main_ms), 2)
