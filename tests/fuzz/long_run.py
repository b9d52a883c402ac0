"""`make fuzz`: a long fuzzing session of the five commands; writes the counts as JSON.

    python -m tests.fuzz.long_run --minutes 20 --json docs/benchmarks/fuzz.json

A plain random loop over tests/fuzz/harness.py's cases (hypothesis would stop at the
first failure; a session must go on and count). Every distinct finding (command, kind,
where it was raised) is kept once, with the first case that showed it: the mutated file
is saved under --crashes (`<n>-<file>`, default out/fuzz/crashes) with the case that
reproduces it. Counts per command, base and outcome (0, 1, 2) go in the JSON, and so does the
random seed, so a session can be replayed. One `sample` run of a table base in
BEAM_ONE_IN runs the Beam engine (seconds each: the session stays mostly on the memory
engine); the counts say how many did, how many ran without --seeds, how many checked a
store's checksums and how many wrote sample-stats' HTML page.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import random
import sys
import tempfile
import threading
import time

from tests.fuzz import harness

BEAM_ONE_IN = 25


class RandomDraw:
    def __init__(self, rng: random.Random):
        self.rng = rng

    def integer(self, low: int, high: int) -> int:
        # Small values more often: short edits, first records, lengths near the real one.
        if high - low > 64 and self.rng.random() < 0.5:
            return low + min(high - low, int(self.rng.expovariate(1 / 16)))
        return self.rng.randint(low, high)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="fuzz", description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float,
                        default=float(os.environ.get("FUZZ_MINUTES", 20)))
    parser.add_argument("--json", default="docs/benchmarks/fuzz.json")
    parser.add_argument("--crashes", default="out/fuzz/crashes",
                        help="where the first input of every distinct finding is saved")
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(2 ** 32)
    rng = random.Random(seed)
    draw = RandomDraw(rng)
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    os.makedirs(args.crashes, exist_ok=True)
    counts: collections.Counter = collections.Counter()
    findings: dict[str, dict] = {}
    started = time.time()
    deadline = started + 60 * args.minutes
    current: dict = {}

    def write(tried: int, hung: dict | None = None) -> None:
        result = {
            "benchmark": "fuzz",  # its renderer in pipelines/tools/perf_tables.py
            "what": "tests/fuzz/long_run.py: mutated inputs, stores and output folders' state "
                    "files run through the five commands",
            "command": f"make fuzz FUZZ_MINUTES={args.minutes:g}  (python -m "
                       f"tests.fuzz.long_run --minutes {args.minutes:g} --seed {seed})",
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python "
                       f"{platform.python_version()}",
            "seed": seed, "minutes": round((time.time() - started) / 60, 2),
            "inputs_tried": tried, "counts": dict(sorted(counts.items())),
            "distinct_findings": len(findings) + bool(hung), "findings": findings,
        }
        if hung:
            result["hung"] = hung
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)

    def watchdog() -> None:
        """SIGALRM cannot stop a hang inside C code; this thread can end the session."""
        while True:
            time.sleep(5)
            case = current.get("case")
            if case is not None and time.time() - current["since"] > 2 * harness.TIMEOUT_S:
                saved = os.path.join(args.crashes, f"hang-{case.file}")
                with open(saved, "wb") as f:
                    f.write(current["input"])
                write(current["tried"], {"case": vars(case), "saved_input": saved})
                print(f"hang: {case}; wrote {args.json}", file=sys.stderr, flush=True)
                os._exit(3)

    threading.Thread(target=watchdog, daemon=True).start()
    with tempfile.TemporaryDirectory(prefix="fuzz-") as root:
        bases = harness.build_bases(os.path.join(root, "bases"))
        previous = harness._digest(bases["output"].folder)
        tried = 0
        while time.time() < deadline:
            case, mutated = harness.draw_case(bases, draw, BEAM_ONE_IN)
            current.update(case=case, input=mutated, since=time.time(), tried=tried)
            outcome, problems = harness.run_case(bases, case, mutated,
                                                 os.path.join(root, "work"), previous)
            current["case"] = None
            tried += 1
            counts[f"command:{case.command}"] += 1
            counts[f"base:{case.base}"] += 1
            counts[f"exit:{outcome.code if outcome.crash is None else 'crash'}"] += 1
            if case.command == "sample" and case.base not in ("store", "state", "output"):
                counts[f"sample:engine:{case.engine}"] += 1
                counts["sample:without --seeds"] += not case.seeds
            if case.base == "store":
                verified = case.command == "unigraph-convert" or case.variant % 2
                counts[f"store:{'checksums' if verified else 'cheap checks'}"] += 1
            if case.command == "sample-stats":
                counts[f"sample-stats:{'html' if not case.variant % 2 else 'json'}"] += 1
            if problems:
                counts["violations"] += 1
                signature = harness.crash_signature(case, outcome, problems)
                if signature not in findings:
                    saved = os.path.join(args.crashes, f"{len(findings)}-{case.file}")
                    with open(saved, "wb") as f:
                        f.write(mutated)
                    findings[signature] = {
                        "case": vars(case), "problems": problems, "saved_input": saved,
                        "stderr": outcome.stderr[-2000:],
                        "traceback": (outcome.crash or "")[-4000:], "count": 0}
                    print(f"finding {len(findings)}: {signature}", file=sys.stderr)
                findings[signature]["count"] += 1
            if tried % 200 == 0:
                print(f"{tried} inputs, {len(findings)} distinct findings, "
                      f"{time.time() - started:.0f} s", file=sys.stderr)
    write(tried)
    print(f"{tried} inputs tried, {len(findings)} distinct findings; wrote {args.json}")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
