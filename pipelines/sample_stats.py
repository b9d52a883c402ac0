"""`sample-stats OUT [OUT2]`: what a `sample` output folder holds, in numbers and pictures.

    sample-stats out/                 # writes out/stats/stats.json and out/stats/index.html
    sample-stats run_a/ run_b/        # two runs side by side, written to run_a/stats/vs-run_b/

Reads every record once, streaming (local or gs://; shards of a local folder in
parallel worker processes), and writes:
  stats.json   per node set and edge set: nodes / edges per subgraph (min, p5, p50,
               p95, max, mean); bytes per record; empty and seed-only subgraphs;
               per op the share of (sample, node) draws that hit sample_size (from
               sample_report.json); per feature: mean, std, quantiles, NaN / inf
               counts (numbers), distinct count and top values (strings), ragged
               row lengths
  index.html   the same as tables, with histograms; self-contained (figures are
               inlined PNGs), opens from disk
and prints a short summary. With two folders, stats.json is {"runs": {"A": ...,
"B": ...}} and the HTML shows a row per run and overlaid histograms.

From Python: sampler.output.stats.sample_stats(folder) returns the numbers as a
dict; sampler.output.stats_frame gives per-record counts, per-set quantiles and
per-feature summaries as pandas DataFrames.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from sampler.output.files import write_text
from sampler.output.stats import FolderStats, folder_stats
from sampler.output.stats_summary import format_summary
from unigraph.storage import paths
from unigraph.errors import SamplerError, message_line, one_line, printable, require_extra
from unigraph.interrupts import interruptible

STATS_FOLDER = "stats"
JSON_FILE = "stats.json"
HTML_FILE = "index.html"
LABELS = ("A", "B")


def default_output(folders: list[str]) -> str:
    first = folders[0].rstrip("/") or "/"
    if len(folders) == 1:
        return paths.join(first, STATS_FOLDER)
    other = os.path.basename(folders[1].rstrip("/")) or "other"
    return paths.join(paths.join(first, STATS_FOLDER), f"vs-{other}")


def _progress(label: str, quiet: bool):
    if quiet:
        return None

    def report(done: int, total: int, path: str, records: int) -> None:
        if total > 1:
            print(f"[sample-stats] {label}: shard {done}/{total} read ({records:,} records)",
                  file=sys.stderr, flush=True)
    return report


@interruptible("sample-stats", "interrupted; no report written")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="sample-stats", description=__doc__.split("\n\n")[0],
        epilog="examples:\n  sample-stats out/demo\n  sample-stats out/k8 out/k16 "
               "--output /tmp/k8_vs_k16\n  sample-stats gs://bucket/out --output /tmp/stats",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", metavar="OUT", nargs="+",
                        help="a `sample` output folder; give two to compare them")
    parser.add_argument("--output", metavar="DIR",
                        help="where to write stats.json and index.html (default: OUT/stats, "
                             "or OUT/stats/vs-<second folder's name> for two)")
    parser.add_argument("--workers", type=int, default=None,
                        help="processes reading a local folder's shards (default: one per "
                             "CPU; the numbers do not depend on it)")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    parser.add_argument("--no-html", dest="html", action="store_false",
                        help="write stats.json and the summary only, no index.html (the "
                             "HTML report's figures need matplotlib: the [stats] extra)")
    args = parser.parse_args(argv)
    if len(args.folders) > 2:
        parser.error(f"at most two folders (to compare), got {len(args.folders)}")
    try:
        # Checked before the folders are read: a missing extra is one line at once.
        stats_report = None
        if args.html:
            require_extra("matplotlib", "stats", "sample-stats' HTML report",
                          otherwise="or --no-html for stats.json and the summary alone")
            from sampler.output import stats_report
        runs: list[tuple[str, FolderStats]] = []
        for label, folder in zip(LABELS, args.folders):
            runs.append((label, folder_stats(folder, workers=args.workers,
                                             progress=_progress(label, args.quiet))))
        numbers = [(label, stats.as_dict()) for label, stats in runs]
        output = args.output or default_output(args.folders)
        document = numbers[0][1] if len(numbers) == 1 else {
            "runs": {label: d for label, d in numbers}}
        json_path, html_path = paths.join(output, JSON_FILE), paths.join(output, HTML_FILE)
        if not paths.is_remote(output):
            os.makedirs(output, exist_ok=True)
        write_text(json_path, json.dumps(document, indent=1, allow_nan=False) + "\n")
        if stats_report is not None:
            write_text(html_path, stats_report.render_html(runs))
    except SamplerError as e:
        print(f"sample-stats: error: {message_line(e)}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"sample-stats: error: cannot write the report: {one_line(e)}", file=sys.stderr)
        return 2
    try:
        print(printable(format_summary(numbers), keep="\n"))
        print(f"wrote {json_path}" + (f"\nwrote {html_path}" if stats_report else ""))
    except BrokenPipeError:   # e.g. `| head`: the files are written all the same
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
