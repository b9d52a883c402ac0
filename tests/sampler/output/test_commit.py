"""sampler.output.commit: the lock, leftovers of killed runs, and the commit itself."""
import json
import os
import signal
import socket

import pytest

from sampler.output import commit
from sampler.output.files import REPORT_FILE, SCHEMA_FILE, parse_output, write_text
from unigraph.errors import SamplerError


def stage_run(spec, shards, content):
    staging = commit.begin(spec)
    for name in spec.shard_names(shards):
        write_text(staging.staged.beside(name), content)
    write_text(staging.staged.beside(SCHEMA_FILE), "schema")
    write_text(staging.staged.beside(REPORT_FILE), json.dumps(
        {"output_shards": spec.shard_names(shards), "subgraphs_written": shards}))
    return staging


def test_commit_replaces_the_previous_output_and_cleans_up(tmp_path):
    spec = parse_output(f"{tmp_path}/p@3")
    commit.commit(stage_run(spec, 3, "old"), spec.shard_names(3))
    smaller = parse_output(f"{tmp_path}/p@2")
    staging = stage_run(smaller, 2, "new")
    # Until the commit, the previous output is all there is to see.
    assert sorted(os.listdir(tmp_path)) == sorted(
        spec.shard_names(3) + [SCHEMA_FILE, REPORT_FILE, commit.LOCK_FILE,
                               os.path.basename(staging.folder)])
    commit.commit(staging, smaller.shard_names(2))
    assert sorted(os.listdir(tmp_path)) == sorted(smaller.shard_names(2) +
                                                  [SCHEMA_FILE, REPORT_FILE])
    assert (tmp_path / "p-00000-of-00002.tfrecord").read_text() == "new"


def test_commit_drops_statistics_of_the_previous_output(tmp_path):
    spec = parse_output(f"{tmp_path}/")
    commit.commit(stage_run(spec, 1, "old"), spec.shard_names(1))
    (tmp_path / "stats").mkdir()
    (tmp_path / "stats" / "stats.json").write_text('{"quantile_method": "exact"}')
    commit.commit(stage_run(spec, 1, "new"), spec.shard_names(1))
    assert not (tmp_path / "stats").exists()


def test_extra_files_in_subfolders_are_committed_and_replaced(tmp_path):
    spec = parse_output(f"{tmp_path}/out/")
    staging = stage_run(spec, 1, "old")
    extra = ["features/a/x.txt", "features/spec.pbtxt"]
    for name in extra:
        write_text(os.path.join(staging.folder, name), "old " + name)
    report = {"output_shards": spec.shard_names(1), "subgraphs_written": 1,
              "feature_files": extra}
    write_text(staging.staged.beside(REPORT_FILE), json.dumps(report))
    (tmp_path / "victim.txt").write_text("a file outside the output")
    commit.commit(staging, spec.shard_names(1), extra)
    assert (tmp_path / "out" / "features" / "a" / "x.txt").read_text() == "old features/a/x.txt"
    staging = stage_run(spec, 1, "new")
    write_text(os.path.join(staging.folder, "features/spec.pbtxt"), "new")
    # The report changed after the run began (begin refuses one that lists such names).
    report["feature_files"] = extra + ["../victim.txt"]
    (tmp_path / "out" / REPORT_FILE).write_text(json.dumps(report))
    commit.commit(staging, spec.shard_names(1), ["features/spec.pbtxt"])
    assert not (tmp_path / "out" / "features" / "a" / "x.txt").exists()
    assert (tmp_path / "out" / "features" / "spec.pbtxt").read_text() == "new"
    # A report is data: a name it lists outside the folder is never deleted.
    assert (tmp_path / "victim.txt").exists()


def test_abort_leaves_the_previous_output(tmp_path):
    spec = parse_output(f"{tmp_path}/")
    commit.commit(stage_run(spec, 2, "old"), spec.shard_names(2))
    before = sorted(os.listdir(tmp_path))
    commit.abort(stage_run(spec, 2, "new"))
    assert sorted(os.listdir(tmp_path)) == before
    assert (tmp_path / spec.shard_name(0, 2)).read_text() == "old"


@pytest.mark.parametrize("interrupted_at", ["lock", "marker", "probe", "survey"])
def test_begin_interrupted_leaves_the_folder_as_it_was(tmp_path, monkeypatch, interrupted_at):
    """Ctrl-C at any step of begin: no staging folder, no lock, the previous output
    untouched (races the command-line tests met). "lock": the signal comes as the lock
    file has just been made, before the code that would release it holds it."""
    from sampler.output import lock as output_lock
    from sampler.output import ownership

    spec = parse_output(f"{tmp_path}/")
    commit.commit(stage_run(spec, 2, "old"), spec.shard_names(2))
    before = {name: (tmp_path / name).read_bytes() for name in os.listdir(tmp_path)}
    calls = {"n": 0}

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    if interrupted_at == "lock":
        acquire = output_lock.acquire

        def acquire_then_signal(*args, **kwargs):
            taken = acquire(*args, **kwargs)
            os.kill(os.getpid(), signal.SIGINT)  # Python raises it at its next chance
            return taken
        monkeypatch.setattr(output_lock, "acquire", acquire_then_signal)
    elif interrupted_at == "marker":
        monkeypatch.setattr(ownership, "_write_new_file", interrupt)
    elif interrupted_at == "probe":
        monkeypatch.setattr(commit, "write_text", interrupt)
    else:
        survey = ownership.survey

        def survey_then_interrupt(folder):  # the second survey comes after staging
            calls["n"] += 1
            if calls["n"] == 2:
                raise KeyboardInterrupt
            return survey(folder)
        monkeypatch.setattr(ownership, "survey", survey_then_interrupt)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a command
    try:
        with pytest.raises(KeyboardInterrupt):
            commit.begin(spec)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert {name: (tmp_path / name).read_bytes() for name in os.listdir(tmp_path)} == before


def test_a_live_run_holds_the_folder(tmp_path):
    held = commit.begin(parse_output(str(tmp_path)))  # a run in progress (flock held)
    with pytest.raises(SamplerError, match=r"another `sample` run \(pid \d+ on .*\) is writing"):
        commit.begin(parse_output(str(tmp_path)))
    assert (tmp_path / commit.LOCK_FILE).exists()  # not ours to remove
    commit.abort(held)
    assert not (tmp_path / commit.LOCK_FILE).exists()
    commit.abort(commit.begin(parse_output(str(tmp_path))))  # free again


def test_a_lock_file_nobody_holds_is_stale_whatever_pid_it_names(tmp_path):
    """After kill -9 the pid may be reused; the flock, not the pid, says who runs."""
    (tmp_path / commit.LOCK_FILE).write_text(json.dumps(
        {"pid": os.getppid(), "host": socket.gethostname(), "started": "then"}))
    messages = []
    commit.abort(commit.begin(parse_output(str(tmp_path)), log=messages.append))
    assert any("ended without cleaning up" in m for m in messages)


def test_a_dead_run_is_cleaned_up_a_foreign_host_is_not_guessed(tmp_path):
    (tmp_path / commit.LOCK_FILE).write_text(json.dumps(
        {"pid": 2**22 + 12345, "host": socket.gethostname(), "started": "then"}))
    left = commit.begin(parse_output(str(tmp_path)))  # a run killed after staging a shard
    write_text(left.staged.beside("x.tfrecord"), "half")
    os.close(left.lock.fd)  # its process ended: the kernel drops the flock
    messages = []
    staging = commit.begin(parse_output(str(tmp_path)), log=messages.append)
    assert not os.path.exists(left.folder)
    assert any("ended without cleaning up" in m for m in messages)
    commit.abort(staging)
    (tmp_path / commit.LOCK_FILE).write_text(json.dumps(
        {"pid": 1, "host": "elsewhere", "started": "then"}))
    with pytest.raises(SamplerError, match=r"on elsewhere .* if it is not running any more, "
                                           r"delete"):
        commit.begin(parse_output(str(tmp_path)))


def test_a_folder_sample_did_not_write_needs_overwrite(tmp_path):
    (tmp_path / "data.csv").write_text("x")
    with pytest.raises(SamplerError, match=r"not empty \(data.csv\)"):
        commit.begin(parse_output(str(tmp_path)))
    assert sorted(os.listdir(tmp_path)) == ["data.csv"]  # the lock was released
    commit.abort(commit.begin(parse_output(str(tmp_path)), overwrite=True))
