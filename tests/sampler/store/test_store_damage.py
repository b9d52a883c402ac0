"""A damaged or crafted graph store gives one line naming the file (issue 36, item 3), and
`unigraph-convert --format store` replaces only what is a store (item 2).

Each case changes one file of a copy of the demo graph's store and runs `sample` on it
(the cheap checks every open makes) or the full verification (`unigraph-convert
--verify`, `sample --verify-store`)."""
import json
import os
import shutil

import numpy as np
import pytest

from pipelines import convert, sample
from tests.sampler.store.test_store_refusals import (  # noqa: F401  (fixtures)
    EXAMPLE, SPEC, edit_manifest, prepared, store)
from unigraph.store_manifest import MANIFEST_NAME

CITES = "edges/001-cites"  # sampled RANDOM_UNIFORM by SPEC
WRITES = "edges/003-writes"  # sampled RANDOM_WEIGHTED: its weights are read
PAPER = "nodes/003-paper"


def sample_on(store, tmp_path, capsys, *flags):
    code = sample.main(["--graph", store, "--spec", SPEC, "--output", str(tmp_path / "out"),
                        "--quiet", "--engine", "memory", "--workers", "1", *flags])
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len(err.splitlines()) <= 1, err
    return code, err


def verify(store, capsys):
    code = convert.main(["--verify", store])
    out, err = capsys.readouterr()
    return code, err.strip()


def rewrite(store, relative, change):
    """The array changed in place: same dtype and shape, so the same size (only what a
    check of its values can find)."""
    path = os.path.join(store, relative)
    array = np.load(path)
    change(array)
    np.save(path, array)


@pytest.mark.parametrize("relative, change, expect", [
    # Issue 36: an out-of-range code gave an IndexError traceback.
    (f"{CITES}/canonical/target_codes.npy", lambda a: a.__setitem__(3, 10 ** 6),
     "target codes: code 1000000 is out of range"),
    (f"{CITES}/canonical/target_codes.npy", lambda a: a.__setitem__(0, -1),
     "code -1 is out of range"),
    (f"{CITES}/sources.npy", lambda a: a.__setitem__(-1, 10 ** 6), "sources: code"),
    (f"{CITES}/sources.npy", lambda a: a.__setitem__(1, a[0]), "not strictly increasing"),
    (f"{CITES}/target_ids.npy", lambda a: a.__setitem__(0, 99), "targets"),
    (f"{CITES}/row_splits.npy", lambda a: a.__setitem__(2, a[3] + 1), "row splits: decrease"),
    (f"{CITES}/row_splits.npy", lambda a: a.__setitem__(-1, a[-1] - 1), "0 to 120 expected"),
    (f"{WRITES}/canonical/weights.npy", lambda a: a.__setitem__(5, np.nan),
     "weights: nan is not a finite number"),
    (f"{WRITES}/canonical/weights.npy", lambda a: a.__setitem__(5, np.inf),
     "weights: inf is not a finite number"),
    (f"{PAPER}/table_codes.npy", lambda a: a.__setitem__(0, 40), "table codes: code 40"),
    (f"{PAPER}/names.npy", lambda a: a.__setitem__(0, b"zzz"), "not sorted and distinct"),
])
def test_damaged_arrays_are_one_line_naming_the_file(store, tmp_path, capsys, relative,
                                                     change, expect):
    rewrite(store, relative, change)
    code, err = sample_on(store, tmp_path, capsys)
    assert code == 2 and f"damaged: {relative}" in err and expect in err, err
    assert not (tmp_path / "out").exists() or not os.listdir(tmp_path / "out")
    code, err = verify(store, capsys)  # found by the full check too (checksums aside)
    assert code == 2 and relative in err


def test_weights_no_op_weighs_are_neither_read_nor_checked(store, tmp_path, capsys):
    """A job reads the weights of the edge sets its ops weigh (TOP_K, RANDOM_WEIGHTED)
    only: damage to others' weights does not stop it (on a store larger than memory,
    reading them would evict what the hops read); the full check still finds it."""
    relative = f"{CITES}/canonical/weights.npy"
    rewrite(store, relative, lambda a: a.__setitem__(5, np.nan))
    code, err = sample_on(store, tmp_path, capsys)
    assert code == 0, err
    code, err = verify(store, capsys)
    assert code == 2 and relative in err


def test_a_header_that_disagrees_with_the_manifest(store, tmp_path, capsys):
    relative = f"{CITES}/canonical/target_codes.npy"
    path = os.path.join(store, relative)
    codes = np.load(path)
    np.save(path, codes.astype(np.float32))  # same size, another dtype
    code, err = sample_on(store, tmp_path, capsys)
    assert code == 2 and f"damaged: {relative}: holds <f4[120], its manifest lists " \
                         f"<i4[120]" in err


def test_a_header_numpy_cannot_read(store, tmp_path, capsys):
    relative = f"{CITES}/row_splits.npy"
    with open(os.path.join(store, relative), "r+b") as f:
        f.seek(10)
        f.write(b"{'descr': __import__('os')")
    code, err = sample_on(store, tmp_path, capsys)
    assert code == 2 and f"damaged: {relative}: not a .npy array" in err


def test_a_manifest_consistent_with_a_crafted_dtype(store, tmp_path, capsys):
    """The manifest agrees with the file, the role does not: codes must be integers."""
    relative = f"{CITES}/canonical/target_codes.npy"
    path = os.path.join(store, relative)
    np.save(path, np.load(path).astype(np.float32))
    edit_manifest(store, lambda m: m["files"][relative].update(dtype="<f4"))
    code, err = sample_on(store, tmp_path, capsys)
    assert code == 2 and "target codes: <f4 values, integer codes expected" in err


@pytest.mark.parametrize("change, expect", [
    (lambda m: m["nodes"]["paper"].update(dir="../../elsewhere"),
     "nodes.paper.dir: '../../elsewhere' is not a relative path inside"),
    (lambda m: m["nodes"]["paper"].update(dir="/etc"), "is not a relative path inside"),
    (lambda m: m["files"].update({"../x.npy": {"bytes": 1, "crc32": 0, "dtype": "<i8",
                                                "shape": [0]}}), "files: '../x.npy'"),
    (lambda m: m["edges"]["cites"].update(layouts="canonical"), "edges.cites.layouts"),
    (lambda m: m["nodes"]["paper"].update(table_rows="40"), "nodes.paper"),
    (lambda m: m["nodes"].pop("paper"), "its schema has node set 'paper'"),
    (lambda m: m["edges"]["cites"].update(source="nobody"), "its source 'nobody'"),
    (lambda m: m["options"].update(chunk_edges=None), "options.chunk_edges"),
    (lambda m: m["nodes"]["paper"]["features"]["feat"].update(prefix="../feature0"),
     "no file prefix"),
])
def test_a_crafted_manifest_is_one_line(store, tmp_path, capsys, change, expect):
    edit_manifest(store, change)
    code, err = sample_on(store, tmp_path, capsys)
    assert code == 2 and "malformed manifest" in err and expect in err, err
    assert verify(store, capsys)[0] == 2


def test_a_deeply_nested_manifest_is_one_line(store, tmp_path, capsys):
    with open(os.path.join(store, MANIFEST_NAME), "w") as f:
        f.write('{"format": "unigraph-graph-store", "format_version": 1, "x": '
                + "[" * 100000 + "]" * 100000 + "}")
    code, err = sample_on(store, tmp_path, capsys)
    assert code == 2 and "unreadable: nested too deeply" in err


def test_every_file_a_manifest_names_stays_inside_the_store(store, tmp_path, capsys):
    """A listed file that is a link out of the store is refused, never mapped."""
    relative = f"{CITES}/canonical/weights.npy"
    outside = tmp_path / "outside.npy"
    shutil.move(os.path.join(store, relative), outside)
    os.symlink(outside, os.path.join(store, relative))
    code, err = sample_on(store, tmp_path, capsys)
    assert code == 2 and f"damaged: {relative} leads outside the store's folder" in err


def test_a_changed_value_is_found_by_the_checksums(store, tmp_path, capsys):
    """A weight changed to another valid weight keeps every cheap rule: the checksums
    (`--verify-store`, `unigraph-convert --verify`) find it."""
    relative = f"{CITES}/canonical/weights.npy"
    rewrite(store, relative, lambda a: a.__setitem__(0, a[0] + 0.5))
    code, err = sample_on(store, tmp_path, capsys, "--verify-store")
    assert code == 2 and f"damaged: {relative} does not match its checksum" in err
    assert not (tmp_path / "out").exists()
    code, err = verify(store, capsys)
    assert code == 2 and f"{relative} does not match its checksum" in err


def test_verify_passes_a_whole_store(store, capsys):
    assert convert.main(["--verify", store]) == 0
    assert "no damage found" in capsys.readouterr().out


def test_a_file_the_layout_does_not_use_is_found_by_verify(store, capsys):
    extra = "nodes/003-paper/extra.npy"
    np.save(os.path.join(store, extra), np.zeros(3))
    edit_manifest(store, lambda m: m["files"].update({extra: {
        "bytes": os.path.getsize(os.path.join(store, extra)), "crc32": 0, "dtype": "<f8",
        "shape": [3]}}))
    code, err = verify(store, capsys)
    assert code == 2 and f"lists {extra}, which no part of the store's layout is" in err


# ---- what `unigraph-convert --format store` may replace -------------------------------------

def test_a_store_json_that_is_no_manifest_makes_no_store(tmp_path, capsys):
    """Issue 36: `--output DIR` replaced DIR whole when it held any file named store.json,
    and the user's other files went with it."""
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "store.json").write_text('{"shop": "open"}')
    (folder / "thesis.docx").write_text("years of work")
    code = convert.main(["--graph", EXAMPLE, "--output", str(folder), "--format", "store"])
    err = capsys.readouterr().err
    assert code == 2 and "exists and is not a graph store" in err
    assert sorted(os.listdir(folder)) == ["store.json", "thesis.docx"]
    assert sorted(os.listdir(tmp_path)) == ["mine"]


def test_a_store_holding_other_files_is_not_replaced(prepared, tmp_path, capsys):
    target = tmp_path / "store"
    shutil.copytree(prepared, target)
    (target / "nodes" / "notes.txt").write_text("mine")
    code = convert.main(["--graph", EXAMPLE, "--output", str(target), "--format", "store"])
    err = capsys.readouterr().err
    assert code == 2 and "holds nodes/notes.txt, which is not part of the graph store" in err
    assert (target / "nodes" / "notes.txt").read_text() == "mine"


def test_a_folder_named_like_the_staging_folder_is_not_ours(prepared, tmp_path, capsys):
    """The build staged into `.<name>.staging-<pid>`, deleting any folder of that name
    first; it now creates a fresh one of its own."""
    (tmp_path / f".store.staging-{os.getpid()}").mkdir()
    (tmp_path / f".store.staging-{os.getpid()}" / "keep.txt").write_text("mine")
    assert convert.main(["--graph", EXAMPLE, "--output", str(tmp_path / "store"),
                         "--format", "store"]) == 0
    assert (tmp_path / f".store.staging-{os.getpid()}" / "keep.txt").read_text() == "mine"
    assert sorted(os.listdir(tmp_path)) == [f".store.staging-{os.getpid()}", "store"]


def test_a_link_as_the_target_is_refused(prepared, tmp_path, capsys):
    shutil.copytree(prepared, tmp_path / "real")
    os.symlink(tmp_path / "real", tmp_path / "store")
    code = convert.main(["--graph", EXAMPLE, "--output", str(tmp_path / "store"),
                         "--format", "store"])
    assert code == 2 and "is a symbolic link" in capsys.readouterr().err
    assert json.loads((tmp_path / "real" / MANIFEST_NAME).read_text())["format_version"] == 1
