"""Malformed OGB folders: one line naming the file (and line, or array and row), exit
status 2, and nothing partial left in the output folder, which keeps what it held."""
import gzip
import io
import os
import pickle
import zipfile

import numpy as np
import pytest

from pipelines import import_graph
from pipelines.bench import ogb_layout

from tests.unigraph.importers.ogb_fixtures import mag_like


def run(capsys, source, output):
    code = import_graph.main([str(source), "--output", str(output)])
    captured = capsys.readouterr()
    return code, captured.err


def snapshot(folder):
    if not os.path.exists(folder):
        return None
    found = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            path = os.path.join(root, name)
            found[os.path.relpath(path, folder)] = (open(path, "rb").read()
                                                    if os.path.isfile(path) else None)
    return found


def assert_refused(capsys, source, output, *expected):
    before = snapshot(output)
    code, err = run(capsys, source, output)
    assert code == 2
    assert err.startswith("unigraph-import: error: ") and err.count("\n") == 1, err
    for text in expected:
        assert text in err, err
    assert snapshot(output) == before  # nothing partial, nothing lost


@pytest.fixture
def mag(tmp_path):
    return mag_like(tmp_path / "dataset")


@pytest.fixture(params=["absent", "holding a previous graph"])
def output(request, tmp_path, capsys):
    out = tmp_path / "out"
    if request.param != "absent":
        previous = mag_like(tmp_path / "previous")
        assert run(capsys, previous.folder, out)[0] == 0
        (out / "notes.txt").write_text("the user's own file")
    return out


def raw(mag, *parts):
    return os.path.join(mag.folder, "raw", *parts)


def test_a_missing_num_node_dict(capsys, mag, output):
    os.remove(raw(mag, "num-node-dict.csv.gz"))
    assert_refused(capsys, mag.folder, output, "raw/num-node-dict.csv.gz: no such file")


def test_an_edge_naming_node_a_billion_of_a_small_set(capsys, mag, output):
    path = raw(mag, "relations", "paper___cites___paper", "edge.csv.gz")
    edges = mag.relations[("paper", "cites", "paper")].copy()
    edges[7] = [3, 10 ** 9]
    ogb_layout.write_numbers(path, edges)
    assert_refused(capsys, mag.folder, output, f"{path}: line 8: target 1000000000 is not a "
                                               f"node of 'paper', which has 20 nodes")


def test_a_split_index_out_of_range(capsys, mag, output):
    path = os.path.join(mag.folder, "split", "time", "paper", "valid.csv.gz")
    ogb_layout.write_numbers(path, np.array([12, 13, 20]))
    assert_refused(capsys, mag.folder, output, f"{path}: line 3: node 20 is out of range")


def test_a_truncated_gzip_file(capsys, mag, output):
    path = raw(mag, "node-feat", "paper", "node-feat.csv.gz")
    data = open(path, "rb").read()
    with open(path, "wb") as f:
        f.write(data[:len(data) // 2])
    assert_refused(capsys, mag.folder, output, path)


def test_a_feature_file_shorter_than_the_node_count(capsys, mag, output):
    path = raw(mag, "node-feat", "paper", "node-feat.csv.gz")
    ogb_layout.write_numbers(path, mag.feat[:17])
    assert_refused(capsys, mag.folder, output, f"{path}: 17 rows, but node set 'paper'")


def test_a_row_of_the_wrong_width(capsys, mag, output):
    path = raw(mag, "relations", "author___writes___paper", "edge.csv.gz")
    with gzip.open(path, "wt") as f:
        f.write("0,1\n2,3,4\n")
    assert_refused(capsys, mag.folder, output, path)


def test_a_declared_count_is_checked_not_allocated(capsys, mag, output):
    """10**12 papers declared with 20 rows of features: the files are checked against the
    count; nothing is sized by it. Past 2**40 a count is not a count."""
    ogb_layout.write_header_table(raw(mag, "num-node-dict.csv.gz"),
                                  {"paper": [10 ** 12], "author": [12], "institution": [3]})
    assert_refused(capsys, mag.folder, output, "node-label.csv.gz: 20 rows, but node set 'paper'")
    ogb_layout.write_header_table(raw(mag, "num-node-dict.csv.gz"),
                                  {"paper": [2 ** 41], "author": [12], "institution": [3]})
    assert_refused(capsys, mag.folder, output, "num-node-dict.csv.gz: count 2199023255552 is not")


def _npz_with_header(path, arrays, lying):
    """An .npz whose member `lying` declares a shape far larger than the bytes it holds."""
    with zipfile.ZipFile(path, "w") as archive:
        for name, array in arrays.items():
            buffer = io.BytesIO()
            if name == lying:
                np.lib.format.write_array_header_1_0(
                    buffer, {"descr": "<i8", "fortran_order": False, "shape": (2, 10 ** 12)})
                buffer.write(np.asarray(array, "<i8").tobytes())
            else:
                np.lib.format.write_array(buffer, np.asarray(array))
            archive.writestr(name + ".npy", buffer.getvalue())


def test_an_npz_array_larger_than_its_bytes(capsys, tmp_path, output):
    folder = tmp_path / "ogbn_papers"
    (folder / "raw").mkdir(parents=True)
    path = folder / "raw" / "data.npz"
    _npz_with_header(path, {"edge_index": np.zeros((2, 3)), "num_nodes_list": np.array([4]),
                            "num_edges_list": np.array([10 ** 12])}, "edge_index")
    assert_refused(capsys, folder, output, f"{path}: array 'edge_index' declares shape "
                                           f"[2, 1000000000000]")


class _Runs:
    def __reduce__(self):
        return (os.system, ("touch ran-from-a-split-file",))


def test_a_split_file_is_data_never_code(capsys, tmp_path, output, monkeypatch):
    pytest.importorskip("torch", reason="link splits are .pt files")
    monkeypatch.chdir(tmp_path)
    folder = str(tmp_path / "ogbl_ddi")
    ogb_layout.write_homogeneous(folder, num_nodes=4, edges=np.array([[0, 1], [2, 3]]))
    path = os.path.join(folder, "split", "target", "train.pt")
    os.makedirs(os.path.dirname(path))
    with open(path, "wb") as f:
        pickle.dump({"edge": _Runs()}, f)
    assert_refused(capsys, folder, output, path)
    assert not (tmp_path / "ran-from-a-split-file").exists()


def test_a_link_split_naming_a_node_out_of_range(capsys, tmp_path, output):
    pytest.importorskip("torch", reason="link splits are .pt files")
    folder = str(tmp_path / "ogbl_ddi")
    ogb_layout.write_homogeneous(folder, num_nodes=4, edges=np.array([[0, 1], [2, 3]]))
    path = ogb_layout.write_link_split(folder, "target", "valid",
                                       {"edge": np.array([[0, 1]]),
                                        "edge_neg": np.array([[0, 2], [1, 99]])})
    assert_refused(capsys, folder, output, f"{path}: 'edge_neg' row 1: node 99 is out of range")


def test_the_output_inside_the_source_is_refused(capsys, mag):
    assert_refused(capsys, mag.folder, os.path.join(mag.folder, "unigraph"),
                   "is or lies inside SOURCE")
