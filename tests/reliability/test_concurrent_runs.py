"""Two runs into one output folder: the second is refused in one line, never interleaved;
a killed run's lock is taken over (sampler/output/lock.py).

Real processes: `sample` subprocesses racing for one folder, a lock held by this test
process (a run in progress), a lock holder killed with SIGKILL; and gs:// on the GCS
emulator. About 15 s.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import time

import pytest

from sampler.output import commit, lock
from sampler.output.files import parse_output
from tests.conftest import REPO_ROOT
from tests.gcs_emulator import BUCKET, gcs  # noqa: F401  (a fixture)
from tests.pipelines.test_sample_safety import DEMO, DEMO_SPEC, tree
from unigraph.errors import SamplerError

ARGS = ["--graph", DEMO, "--spec", DEMO_SPEC, "--quiet", "--workers", "1"]


def _sample(out, *extra):
    return subprocess.Popen([sys.executable, "-m", "pipelines.sample", *ARGS, "--output",
                             str(out), *extra], cwd=REPO_ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("clean") / "out"
    process = _sample(out)
    assert process.wait(120) == 0, process.communicate()
    return tree(out)


def test_a_run_in_progress_refuses_a_second_in_one_line(tmp_path, clean_run):
    out = tmp_path / "out"
    held = commit.begin(parse_output(str(out)))   # this process: a run in progress
    try:
        second = _sample(out)
        _, err = second.communicate(timeout=120)
        assert second.returncode == 2
        lines = err.strip().splitlines()
        assert len(lines) == 1 and "another `sample` run (pid " in lines[0], err
        assert f"on {socket.gethostname()}" in lines[0] and str(out) in lines[0]
        assert sorted(os.listdir(out)) == sorted([lock.LOCK_FILE, os.path.basename(
            held.folder)])  # nothing of the refused run
    finally:
        commit.abort(held)
    assert os.listdir(out) == []


def test_racing_runs_never_interleave(tmp_path, clean_run):
    """Four runs started at once: each one either wins the folder or is refused in one
    line; the folder ends as one clean run's bytes, no staging or lock left."""
    out = tmp_path / "out"
    runs = [_sample(out) for _ in range(4)]
    results = [(p.wait(180), p.communicate()[1]) for p in runs]
    assert any(code == 0 for code, _ in results)
    for code, err in results:
        if code != 0:
            assert code == 2 and len(err.strip().splitlines()) == 1, err
            assert "another `sample` run" in err, err
    assert tree(out) == clean_run


def test_the_lock_of_a_killed_holder_is_taken_over(tmp_path, clean_run):
    """A process that took the lock is killed (SIGKILL: nothing can clean up); its lock
    file stays, naming it, and the next run takes over and writes the clean bytes."""
    out = tmp_path / "out"
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from sampler.output import lock; "
         "lock.acquire(sys.argv[1], 'held'); print('locked', flush=True); time.sleep(600)",
         str(out)], cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True,
        start_new_session=True)
    os.makedirs(out)
    try:
        assert holder.stdout.readline().strip() == "locked"
        refused = _sample(out)
        assert refused.wait(120) == 2  # alive: refused
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait()
        assert json.loads((out / lock.LOCK_FILE).read_text())["pid"] == holder.pid
        rerun = _sample(out)
        assert rerun.wait(120) == 0, rerun.communicate()
        assert tree(out) == clean_run
    finally:
        if holder.poll() is None:
            os.killpg(holder.pid, signal.SIGKILL)


def test_gcs_lock(gcs):  # noqa: F811
    """gs://: a live holder on this host is refused, a dead one taken over, another
    host's never guessed."""
    folder = f"gs://{BUCKET}/locked"
    spec = parse_output(folder)
    held = commit.begin(spec)
    with pytest.raises(SamplerError, match=r"another `sample` run \(pid \d+ on "):
        commit.begin(spec)
    commit.abort(held)
    assert not gcs.blob(f"locked/{lock.LOCK_FILE}").exists()
    dead = {"pid": 2 ** 22 + 4321, "host": socket.gethostname(), "started": "then"}
    gcs.blob(f"locked/{lock.LOCK_FILE}").upload_from_string(json.dumps(dead))
    messages = []
    commit.abort(commit.begin(spec, log=messages.append))
    assert any("ended without cleaning up" in m for m in messages)
    other = {"pid": 7, "host": "elsewhere", "started": "then"}
    gcs.blob(f"locked/{lock.LOCK_FILE}").upload_from_string(json.dumps(other))
    with pytest.raises(SamplerError, match=rf"on elsewhere .*gcloud storage rm {folder}/"):
        commit.begin(spec)
    started = time.monotonic()
    gcs.blob(f"locked/{lock.LOCK_FILE}").delete()
    commit.abort(commit.begin(spec))
    assert time.monotonic() - started < 30
