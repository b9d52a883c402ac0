"""sampler.job.resources: what the machine offers and what a graph will take of it."""
import os
import shutil

import pytest

from sampler.job import resources
from sampler.plan.plan import build_plan
from sampler.plan.spec import load_spec
from tests.conftest import REPO_ROOT
from unigraph.schema import load_schema

MAG_TINY = os.path.join(REPO_ROOT, "examples", "mag_tiny")


def loaded_and_plan(folder):
    loaded = load_schema(folder)
    spec = os.path.join(folder, "sampling_spec.pbtxt")
    return loaded, build_plan(load_spec(spec), loaded, source=spec)


def test_cores_is_at_least_one():
    assert resources.cores() >= 1


def test_available_memory_is_positive_on_linux():
    available = resources.available_memory()
    assert available is None or 0 < available


def test_memory_needed_counts_every_table_the_job_reads():
    loaded, plan = loaded_and_plan(MAG_TINY)
    needed = resources.memory_needed(loaded, plan)
    read_once = sum(os.path.getsize(os.path.join(MAG_TINY, f)) for f in os.listdir(MAG_TINY)
                    if f.endswith(".csv") and f != "seeds.csv")
    # Every table once at least; an edge set and its reversed twin read one table twice.
    assert needed >= resources.BASE_BYTES + resources.GROWTH["csv"] * read_once
    assert needed <= resources.BASE_BYTES + 2 * resources.GROWTH["csv"] * read_once


def test_memory_needed_grows_with_the_tables(tmp_path):
    small = tmp_path / "small"
    shutil.copytree(MAG_TINY, small)
    before = resources.memory_needed(*loaded_and_plan(str(small)))
    cites = small / "cites.csv"
    size_before = os.path.getsize(cites)
    lines = cites.read_text().splitlines()
    cites.write_text("\n".join(lines + lines[1:] * 9) + "\n")  # ten times the rows
    after = resources.memory_needed(*loaded_and_plan(str(small)))
    grown = os.path.getsize(cites) - size_before
    assert after - before == pytest.approx(resources.GROWTH["csv"] * grown, abs=8)


def test_available_memory_sees_the_limit_of_the_processes_own_cgroup():
    """A child group's limit (cgroup v1 shows it only under the group's own path, not at
    the hierarchy's root): what a capped job or build may use is at most its cap."""
    import subprocess
    import sys

    from pipelines.bench.memory_cap import MemoryCap, unavailable

    if unavailable():
        pytest.skip(unavailable())
    with MemoryCap(300 << 20) as group:
        run = subprocess.run(group.wrap([sys.executable, "-c",
                                         "from sampler.job.resources import available_memory;"
                                         "print(available_memory())"]),
                             capture_output=True, text=True, cwd=REPO_ROOT)
    assert run.returncode == 0, run.stderr
    assert 0 < int(run.stdout) <= 300 << 20
