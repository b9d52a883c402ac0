"""Where a measurement comes from, recorded in every benchmark's JSON: the date, the
machine, its load, and the command that regenerates the figure (docs/performance.md
is written from these files by pipelines.perf_page; nothing there is typed by hand)."""
from __future__ import annotations

import json
import os
import platform
import shlex
import sys
import time


def machine() -> str:
    memory_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return (f"{platform.machine()}, {os.cpu_count()} cores, {memory_gb:.0f} GiB, "
            f"Python {platform.python_version()}, {platform.system()} {platform.release()}")


def provenance(program: str, argv: list[str] | None = None) -> dict:
    """{"date", "machine", "load_average", "command"} of this run; `program` is how a user
    types the command (`benchmark`), `argv` its arguments (default: this process's)."""
    args = sys.argv[1:] if argv is None else argv
    return {"date": time.strftime("%Y-%m-%d"), "machine": machine(),
            "load_average": round(os.getloadavg()[0], 1),
            "command": " ".join([program, shlex.join(args)]).strip()}


def publish(document: dict, path: str | None) -> None:
    """A measurement printed, and kept at `path` (--json) when one is given."""
    print(json.dumps(document, indent=1))
    if path:
        write_json(document, path)


def write_json(document: dict, path: str) -> None:
    """A measurement's JSON as docs/benchmarks keeps it (indented, one final newline)."""
    with open(path, "w", encoding="utf-8") as f:
        json.dump(document, f, indent=1)
        f.write("\n")
