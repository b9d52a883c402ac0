"""`python -m pipelines.bench.bench_install`: what an install costs, per variant, side by side.

Each variant is a pip requirement installed into a fresh virtualenv (pip's cache as
it is: say so when quoting the times). Measured: the install's wall time, the
virtualenv's size on disk, and `sample --help`'s start-up time (median of 5), so the
base install and the extras (or an older commit) compare in one run:

    python -m pipelines.bench.bench_install --variant base=. --variant 'tf+stats=.[tf,stats]' \\
        --variant before=git+file://$PWD@288b524 --json docs/benchmarks/install.json
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from pipelines import REPO_ROOT
from pipelines.bench.provenance import write_json


def _du(path: str) -> int:
    total = 0
    for folder, _, files in os.walk(path):
        for name in files:
            full = os.path.join(folder, name)
            if not os.path.islink(full):
                total += os.path.getsize(full)
    return total


def measure(name: str, requirement: str, python: str, cwd: str) -> dict:
    venv = tempfile.mkdtemp(prefix=f"bench-install-{name.replace('+', '-')}-")
    try:
        subprocess.run([python, "-m", "venv", venv], check=True)
        pip = [os.path.join(venv, "bin", "python"), "-m", "pip"]
        subprocess.run(pip + ["install", "-q", "--upgrade", "pip"], check=True)
        started = time.perf_counter()
        subprocess.run(pip + ["install", "-q", requirement], check=True, cwd=cwd)
        install_s = time.perf_counter() - started
        help_s = []
        for _ in range(5):
            started = time.perf_counter()
            subprocess.run([os.path.join(venv, "bin", "sample"), "--help"], check=True,
                           stdout=subprocess.DEVNULL)
            help_s.append(time.perf_counter() - started)
        listed = subprocess.run(pip + ["list", "--format", "json"], check=True,
                                capture_output=True, text=True).stdout
        packages = {p["name"].lower() for p in json.loads(listed)}
        return {"variant": name, "requirement": requirement,
                "install_s": round(install_s, 1), "venv_mb": round(_du(venv) / 1e6),
                "packages": len(packages),
                "sample_help_s": round(statistics.median(help_s), 2),
                "has": {k: k in packages for k in ("tensorflow", "matplotlib", "pandas",
                                                   "torch")}}
    finally:
        shutil.rmtree(venv, ignore_errors=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="bench_install", description=__doc__.split("\n\n")[0])
    parser.add_argument("--variant", action="append", required=True, metavar="NAME=REQ",
                        help="a pip requirement to install, e.g. base=. or 'tf=.[tf]'")
    parser.add_argument("--python", default=sys.executable,
                        help="the interpreter whose venv module makes the virtualenvs")
    parser.add_argument("--json", metavar="FILE", help="also write the results here")
    args = parser.parse_args(argv)
    cwd = REPO_ROOT
    rows = []
    for variant in args.variant:
        name, _, requirement = variant.partition("=")
        rows.append(measure(name, requirement, args.python, cwd))
        print(json.dumps(rows[-1]))
    document = {
        "benchmark": "install",
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
                   f"{platform.python_version()}, {platform.platform()}",
        "command": "python -m pipelines.bench.bench_install " + " ".join(
            f"--variant '{v}'" for v in args.variant) + (f" --json {args.json}"
                                                          if args.json else ""),
        "notes": "pip's download cache was warm: times are installs, not downloads",
        "rows": rows,
    }
    if args.json:
        write_json(document, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
