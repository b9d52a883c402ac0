"""A graph store is whole or refused, in one line: incomplete, damaged, of another format
version, for another schema or job, remote, or being built (issue 24, item 4)."""
import json
import os
import shutil

import pytest

from pipelines import convert, sample
from sampler.store import edges
from sampler.store.mapped import verify_store
from unigraph.errors import SamplerError, SchemaError
from unigraph.schema import load_schema
from unigraph.store_manifest import MANIFEST_NAME, STAGING_MARK, read_store

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "mag_tiny")
SPEC = os.path.join(EXAMPLE, "sampling_spec.pbtxt")


@pytest.fixture(scope="module")
def prepared(tmp_path_factory):
    store = str(tmp_path_factory.mktemp("s") / "store")
    convert.prepare(EXAMPLE, store, log=lambda line: None)
    return store


@pytest.fixture
def store(prepared, tmp_path):
    copy = str(tmp_path / "store")
    shutil.copytree(prepared, copy)
    return copy


def sample_on(store, tmp_path, capsys, *flags):
    code = sample.main(["--graph", store, "--spec", SPEC, "--output", str(tmp_path / "out"),
                        "--quiet", "--engine", "memory", *flags])
    err = capsys.readouterr().err.strip()
    return code, err


def edit_manifest(store, change):
    path = os.path.join(store, MANIFEST_NAME)
    with open(path) as f:
        manifest = json.load(f)
    change(manifest)
    with open(path, "w") as f:
        json.dump(manifest, f)


def test_a_whole_store_samples(store, tmp_path, capsys):
    assert sample_on(store, tmp_path, capsys) == (0, "")
    verify_store(store, read_store(store)[1].manifest)


def test_a_missing_file_is_refused(store, tmp_path, capsys):
    manifest = read_store(store)[1].manifest
    victim = sorted(f for f in manifest["files"] if "/canonical/" in f)[0]
    os.remove(os.path.join(store, victim))
    code, err = sample_on(store, tmp_path, capsys)
    assert code == 2 and len(err.splitlines()) == 1
    assert f"incomplete: {victim} is missing" in err


def test_a_truncated_file_is_refused(store, tmp_path, capsys):
    manifest = read_store(store)[1].manifest
    victim = sorted(manifest["files"])[0]
    with open(os.path.join(store, victim), "r+b") as f:
        f.truncate(manifest["files"][victim]["bytes"] - 1)
    code, err = sample_on(store, tmp_path, capsys)
    assert code == 2 and "damaged" in err and victim in err and len(err.splitlines()) == 1


def test_a_changed_byte_fails_verification(store):
    manifest = read_store(store)[1].manifest
    victim = max(manifest["files"], key=lambda f: manifest["files"][f]["bytes"])
    with open(os.path.join(store, victim), "r+b") as f:
        f.seek(-1, os.SEEK_END)
        last = f.read(1)
        f.seek(-1, os.SEEK_END)
        f.write(bytes([last[0] ^ 1]))
    with pytest.raises(SamplerError, match="does not match its checksum"):
        verify_store(store, manifest)


def test_another_format_version_is_refused(store, tmp_path, capsys):
    edit_manifest(store, lambda m: m.update(format_version=m["format_version"] + 1))
    code, err = sample_on(store, tmp_path, capsys)
    assert code == 2 and "store format version 2, this sampler reads version 1" in err


def test_a_build_in_progress_is_no_store(store, tmp_path, capsys):
    os.remove(os.path.join(store, MANIFEST_NAME))
    with open(os.path.join(store, STAGING_MARK), "w") as f:
        json.dump({"building": store, "pid": 1, "host": "h"}, f)  # as the builder marks it
    code, err = sample_on(store, tmp_path, capsys)
    assert code == 2 and "incomplete" in err and "interrupted or is still running" in err


def test_another_schema_is_refused(store, tmp_path, capsys):
    # --timestamp-column changes the schema the job uses: the store was not built for it.
    code, err = sample_on(store, tmp_path, capsys, "--timestamp-column", "when")
    assert code == 2 and "prepared for another schema" in err and len(err.splitlines()) == 1


def test_another_chunk_edges_is_refused(store, tmp_path, capsys):
    code, err = sample_on(store, tmp_path, capsys, "--chunk-edges", "5")
    assert code == 2
    assert "--chunk-edges 1048576 and the job asks for 5" in err


def test_beam_is_refused(store, tmp_path, capsys):
    code = sample.main(["--graph", store, "--spec", SPEC, "--output", str(tmp_path / "out"),
                        "--quiet", "--engine", "beam"])
    assert code == 2 and "only the memory engine reads a store" in capsys.readouterr().err


def test_remote_stores_are_refused_in_one_line():
    with pytest.raises(SchemaError, match="copy the folder to a local disk"):
        read_store("gs://bucket/store")


def test_an_interrupted_build_leaves_nothing(tmp_path, monkeypatch):
    target = tmp_path / "store"

    def fail(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(edges, "build_adjacency", fail)  # mid-way through the buckets
    with pytest.raises(KeyboardInterrupt):
        convert.prepare(EXAMPLE, str(target), log=lambda line: None)
    assert os.listdir(tmp_path) == []


def test_a_store_is_replaced_whole_and_other_folders_are_kept(prepared, tmp_path):
    target = tmp_path / "store"
    shutil.copytree(prepared, target)
    convert.prepare(EXAMPLE, str(target), chunk_edges=3, log=lambda line: None)
    assert read_store(str(target))[1].manifest["options"]["chunk_edges"] == 3
    assert sorted(os.listdir(tmp_path)) == ["store"]
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(SamplerError, match="exists and is not a graph store"):
        convert.prepare(EXAMPLE, str(other), log=lambda line: None)
    assert (other / "notes.txt").read_text() == "mine"


def test_the_store_answers_planning_from_its_manifest(store):
    """Planning and sizing never touch a table: the example's tables may be gone."""
    loaded = load_schema(store)
    assert loaded.store is not None and loaded.folder == os.path.abspath(store)
    from sampler.job.sizing import output_shards
    from sampler.plan.plan import build_plan
    from sampler.plan.spec import load_spec
    plan = build_plan(load_spec(SPEC), loaded, source=SPEC)
    original = load_schema(EXAMPLE)
    assert output_shards(loaded, plan, []) == output_shards(
        original, build_plan(load_spec(SPEC), original, source=SPEC), [])


def test_convert_cli_writes_a_store(tmp_path, capsys):
    assert convert.main(["--graph", EXAMPLE, "--output", str(tmp_path / "s"),
                         "--format", "store"]) == 0
    assert "graph store" in capsys.readouterr().out
    assert convert.main(["--graph", EXAMPLE, "--output", str(tmp_path / "t"),
                         "--format", "csv", "--chunk-edges", "4"]) == 2
    assert "are for --format store" in capsys.readouterr().err
