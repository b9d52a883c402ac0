"""The user guide: generated pages up to date, the site builds with no broken page link
or anchor, and every example marked `<!-- test: run -->` runs.

A runnable example is the fenced block right after the marker: ```bash blocks run
with `bash -euo pipefail`, ```python blocks with this interpreter, each in a fresh
folder where `examples/` is the repo's, with the project's commands on PATH.
"""
import glob
import os
import re
import shutil
import subprocess
import sys

import pytest

from pipelines.tools import docs_gen, perf_tables

REPO = docs_gen.REPO_ROOT
RUNNABLE = re.compile(r"<!-- test: run -->\n```(bash|python)\n(.*?)\n```", re.S)


def runnable_examples():
    pages = sorted(glob.glob(os.path.join(REPO, "docs", "**", "*.md"), recursive=True))
    found = []
    for path in pages + [os.path.join(REPO, "README.md")]:
        with open(path) as f:
            text = f.read()
        for i, (language, code) in enumerate(RUNNABLE.findall(text)):
            found.append(pytest.param(language, code,
                                      id=f"{os.path.relpath(path, REPO)}#{i + 1}"))
    return found


def test_the_generated_pages_are_up_to_date():
    done = subprocess.run([sys.executable, "-m", "pipelines.tools.docs_gen", "--check"], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


def test_every_command_has_a_reference_page_in_the_site():
    with open(os.path.join(REPO, "mkdocs.yml")) as f:
        nav = f.read()
    for command in docs_gen.console_scripts():
        assert f"cli/{command}.md" in nav, command


def test_the_site_builds_strictly(tmp_path):
    """--strict with mkdocs.yml's validation: a link to a missing page or anchor, or a
    page left out of the nav, fails the build."""
    pytest.importorskip("mkdocs", reason="the [docs] extra builds the site")
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                           str(tmp_path / "site")], cwd=REPO, capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, NO_MKDOCS_2_WARNING="1"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "site" / "performance" / "index.html").exists()


def test_a_broken_anchor_fails_the_build(tmp_path):
    """The check above can fail: the same configuration over a page with a bad anchor."""
    pytest.importorskip("mkdocs", reason="the [docs] extra builds the site")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\n[there](other.md#no-such-heading)\n")
    (docs / "other.md").write_text("# Other\n\n## A heading\n")
    with open(os.path.join(REPO, "mkdocs.yml")) as f:
        config = f.read().split("\nnav:")[0]
    (tmp_path / "mkdocs.yml").write_text(config)
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "no-such-heading" in done.stderr


@pytest.mark.parametrize("language, code", runnable_examples())
def test_runnable_example(language, code, tmp_path):
    os.symlink(os.path.join(REPO, "examples"), tmp_path / "examples")
    bin_dir = os.path.dirname(sys.executable)
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ["PATH"],
               PYTHONPATH=REPO, TF_USE_LEGACY_KERAS="1")
    command = (["bash", "-euo", "pipefail", "-c", code] if language == "bash"
               else [sys.executable, "-c", code])
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}"


def test_there_are_runnable_examples():
    assert len(runnable_examples()) >= 4


def test_a_figures_region_is_filled_and_an_unknown_kind_refused():
    page = "intro\n<!-- figures:api -->\nold table\n<!-- /figures:api -->\nend\n"
    filled = perf_tables.fill_figures(page, {"api": "| new |"}, "page.md")
    assert filled == "intro\n<!-- figures:api -->\n| new |\n<!-- /figures:api -->\nend\n"
    with pytest.raises(ValueError, match="figures:api"):
        perf_tables.fill_figures(page, {}, "page.md")
    with pytest.raises(ValueError, match="'benchmark' is 'mystery'"):
        perf_tables.render_sections({"benchmarks/x.json": {"benchmark": "mystery"}})


def _engines_run(shuffled_per_subgraph=None):
    medians = {"memory": {"wall_s": 2.0, "cpu_s": 4.0, "seeds_per_s": 50.0,
                          "peak_rss_mb": 400.0, "peak_pss_mb": 300.0},
               "beam": {"wall_s": 8.0, "cpu_s": 8.0, "seeds_per_s": 12.5,
                        "peak_rss_mb": 900.0, "peak_pss_mb": 850.0}}
    if shuffled_per_subgraph is not None:
        medians["beam"]["shuffled_bytes_per_subgraph"] = shuffled_per_subgraph
    return {"benchmark": "engines", "date": "2026-11-25", "machine": "m", "command": "c",
            "config": {"engines": ["memory", "beam"], "scale": 0.01, "nodes": {"p": 1},
                       "edges": {"e": 1}, "format": "parquet", "seeds": 100,
                       "strategy": "RANDOM_UNIFORM"},
            "runs": [{"engine": "memory", "output_bytes": 5_000_000},
                     {"engine": "beam", "output_bytes": 5_000_000}],
            "medians": medians}


def test_the_cost_model_takes_the_measured_shuffle_where_the_run_has_it():
    """50 kB of output per subgraph: 100 GB shuffled per million by the old assumption
    (twice the output); 15 kB measured: 15 GB."""
    assumed = perf_tables.cost(_engines_run(), "benchmarks/x.json")
    measured = perf_tables.cost(_engines_run(15_000.0), "benchmarks/x.json")
    assert "100 GB: $1.10 per million" in assumed and "2x the output" in assumed
    assert "15 GB measured: $0.16 per million" in measured
    assert "15.0 kB per subgraph" in measured
    table = perf_tables.engines(_engines_run(15_000.0), "benchmarks/x.json")
    assert "shuffled kB/subgraph" in table and "| 15.0 |" in table
    assert "shuffled" not in perf_tables.engines(_engines_run(), "benchmarks/x.json")
