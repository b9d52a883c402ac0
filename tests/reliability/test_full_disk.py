"""A full disk: the output folder on a small tmpfs that fills in the middle of a run.

The test mounts a 1 MB tmpfs (root only; skipped with the reason otherwise), writes a
previous output, then fills the filesystem to leave less room than the new output
needs: none at all, half of it, or all but the last few pages (the run fails while
writing its schema and report). `sample` (two forked workers) must exit 2
with one line naming the output folder and saying the disk is full, keep the previous
output byte for byte, and leave its staging folder to be removed by the next run,
which succeeds once there is room. `unigraph-convert` onto the full disk leaves no
partial graph. About 20 s.
"""
import os
import shutil
import subprocess
import sys
import uuid

import pytest

from sampler.output import ownership
from tests.conftest import REPO_ROOT
from tests.fuzz.harness import run_command
from tests.pipelines.test_sample_safety import DEMO, DEMO_SPEC, tree
from tests.unigraph import graphs

PAGE = 4096


def _pages(folder) -> int:
    return sum(-(-os.path.getsize(os.path.join(d, f)) // PAGE)
               for d, _, files in os.walk(folder) for f in files)


@pytest.fixture
def small_disk(tmp_path):
    """A 1 MB tmpfs mounted for this test."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small filesystem needs root")
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _free(folder) -> int:
    stat = os.statvfs(folder)
    return stat.f_bavail * stat.f_frsize


def _fill(folder, leave: int) -> str:
    """A file that leaves `leave` bytes free on folder's filesystem."""
    path = os.path.join(folder, f"filler-{uuid.uuid4().hex[:6]}")
    size = max(0, _free(folder) - leave)
    with open(path, "wb") as f:
        f.write(b"\0" * size)
    return path


def _sample(out, seed):
    """`sample` in this process (two forked workers), output captured."""
    outcome = run_command("sample", ["--graph", DEMO, "--spec", DEMO_SPEC, "--output",
                                     str(out), "--quiet", "--workers", "2",
                                     "--seed", str(seed)], timeout=300)
    assert outcome.crash is None, outcome.crash
    return subprocess.CompletedProcess([], outcome.code, outcome.stdout, outcome.stderr)


@pytest.fixture(scope="module")
def new_output(tmp_path_factory):
    """The output the full-disk runs try to write (seed 2), made where there is room."""
    out = tmp_path_factory.mktemp("room") / "out"
    assert _sample(out, 2).returncode == 0
    return out


@pytest.mark.parametrize("room", ["none", "half", "all but the end"])
def test_sample_on_a_full_disk(small_disk, new_output, room):
    out = small_disk / "out"
    assert _sample(out, 1).returncode == 0  # the previous output
    previous = tree(out)
    needed = _pages(new_output) * PAGE
    leave = {"none": 0, "half": needed // 2, "all but the end": needed - 2 * PAGE}[room]
    filler = _fill(small_disk, leave)
    failed = _sample(out, 2)
    assert failed.returncode == 2, failed.stderr
    lines = failed.stderr.strip().splitlines()
    assert len(lines) == 1, failed.stderr
    assert lines[0].startswith(f"sample: error: --output {out}") and \
        "No space left on device" in lines[0], lines[0]
    kept = {k: v for k, v in tree(out).items() if not k.startswith(ownership.STAGING_PREFIX)}
    assert kept == previous  # byte for byte
    os.remove(filler)  # room again: the next run cleans up and writes the new output
    rerun = _sample(out, 2)
    assert rerun.returncode == 0, rerun.stderr
    assert tree(out) == tree(new_output)  # no staging, no lock, no temporary file


def test_convert_on_a_full_disk_leaves_no_partial_graph(small_disk, tmp_path):
    source = tmp_path / "graph"
    source.mkdir()
    graphs.write_csv_graph(str(source))
    with open(source / "item.csv", "a") as f:  # a table larger than the room left
        for i in range(4000):
            f.write(f"x{i},name {i},{i},0.5,1 2 3,1 2,a b\n")
    _fill(small_disk, 16 * PAGE)
    out = small_disk / "converted"
    done = subprocess.run([sys.executable, "-m", "pipelines.convert", "--graph", str(source),
                           "--output", str(out), "--format", "csv"],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "No space left on device" in lines[0], done.stderr
    assert str(out) in lines[0]
    assert not out.exists()
    shutil.rmtree(source)
