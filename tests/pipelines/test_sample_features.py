"""`sample --features`: the features/ folder written with the records (the resolved spec
and its vocabularies), committed and replaced with them, and a spec that does not fit
the graph refused in one line before anything runs."""
import json
import os

from pipelines import sample
from sampler.features import FeatureEncoder, read_feature_spec
from tests.conftest import REPO_ROOT, TESTDATA
from tests.pipelines.sampled_output import MIXED_SPEC

MIXED = os.path.join(TESTDATA, "unigraph", "mixed")
DEMO = os.path.join(REPO_ROOT, "examples", "mag_tiny")
SPEC = """
node_sets { key: "item" value {
  features { key: "words" value { categorical { vocabulary { min_count: 2 } } } }
  features { key: "name"  value { categorical { hashing { num_buckets: 8 } } } }
  features { key: "score" value { numeric { standardize: true } } }
} }
"""


def run(capsys, tmp_path, output, *extra):
    spec = tmp_path / "spec.pbtxt"
    spec.write_text(MIXED_SPEC)
    code = sample.main(["--graph", MIXED, "--spec", str(spec), "--output", f"{output}/",
                        "--quiet", *map(str, extra)])
    out, err = capsys.readouterr()
    return code, out, err


def listed(folder):
    return sorted(os.path.relpath(os.path.join(d, f), folder)
                  for d, _, files in os.walk(folder) for f in files)


def test_a_spec_of_yours_is_resolved_and_written(capsys, tmp_path):
    (tmp_path / "features.pbtxt").write_text(SPEC)
    out = tmp_path / "out"
    code, _, err = run(capsys, tmp_path, out, "--features", tmp_path / "features.pbtxt")
    assert code == 0, err
    assert listed(out / "features") == ["feature_spec.pbtxt", "vocabulary/edges/link/kind.txt",
                                        "vocabulary/edges/linked_by/kind.txt",
                                        "vocabulary/nodes/item/words.txt"]
    # "alpha" and "beta" occur once, "gamma" once: min_count 2 keeps none of them.
    assert (out / "features/vocabulary/nodes/item/words.txt").read_bytes() == b""
    written = read_feature_spec(str(out / "features" / "feature_spec.pbtxt"))
    item = written.node_sets["item"]
    assert item["name"].hash_buckets == 8 and item["words"].min_count == 2
    assert item["score"].standardize and item["score"].mean is not None
    assert item["count"].__class__.__name__ == "Numeric"  # the default, spelled out
    report = json.loads((out / "sample_report.json").read_text())
    assert report["feature_files"][-1] == "features/feature_spec.pbtxt"
    assert FeatureEncoder.load(str(out)).num_embeddings("item", "name") == 8


def test_none_writes_nothing_and_a_rerun_replaces_the_features(capsys, tmp_path):
    out = tmp_path / "out"
    assert run(capsys, tmp_path, out)[0] == 0
    assert "features/vocabulary/nodes/item/name.txt" in listed(out)
    (tmp_path / "features.pbtxt").write_text(SPEC)
    assert run(capsys, tmp_path, out, "--features", tmp_path / "features.pbtxt")[0] == 0
    assert "features/vocabulary/nodes/item/name.txt" not in listed(out)  # now hashed
    assert run(capsys, tmp_path, out, "--features", "none")[0] == 0
    assert not [f for f in listed(out) if f.startswith("features/")]
    assert FeatureEncoder.load(str(out)) is None


def test_the_spec_beside_the_schema_is_used(capsys, tmp_path):
    graph = tmp_path / "graph"
    graph.mkdir()
    for name in os.listdir(MIXED):
        (graph / name).write_bytes(open(os.path.join(MIXED, name), "rb").read())
    (graph / "feature_spec.pbtxt").write_text(SPEC)
    spec = tmp_path / "spec.pbtxt"
    spec.write_text(MIXED_SPEC)
    out = tmp_path / "out"
    assert sample.main(["--graph", str(graph), "--spec", str(spec), "--output", f"{out}/",
                        "--quiet"]) == 0
    assert FeatureEncoder.load(str(out)).num_embeddings("item", "name") == 8


def test_graphs_without_strings_get_no_features_folder(capsys, tmp_path):
    topk = os.path.join(TESTDATA, "topk")
    out = tmp_path / "out"
    assert sample.main(["--graph", topk, "--spec", os.path.join(topk, "sampling_spec.pbtxt"),
                        "--output", f"{out}/", "--quiet"]) == 0
    assert not (out / "features").exists()


def test_a_spec_that_does_not_fit_is_one_line_before_anything_runs(capsys, tmp_path):
    (tmp_path / "features.pbtxt").write_text(
        'node_sets { key: "item" value { features { key: "name" value { numeric {} } } } }')
    out = tmp_path / "out"
    for extra in ((), ("--dry-run",)):
        code, _, err = run(capsys, tmp_path, out, "--features", tmp_path / "features.pbtxt",
                           *extra)
        assert code == 2
        assert err.strip() == ("sample: error: node set 'item' feature 'name': numeric, but "
                               "its dtype is DT_STRING; give it categorical (or ignore)")
        assert not out.exists()


def test_a_vocabulary_file_of_the_output_is_an_input(capsys, tmp_path):
    """Reusing a run's vocabularies into that same folder would write over what it reads."""
    out = tmp_path / "out"
    assert run(capsys, tmp_path, out)[0] == 0
    code, _, err = run(capsys, tmp_path, out, "--features",
                       out / "features" / "feature_spec.pbtxt")
    assert code == 2 and "the feature spec" in err, err
    again = tmp_path / "again"
    assert run(capsys, tmp_path, again, "--features",
               out / "features" / "feature_spec.pbtxt")[0] == 0
    assert (again / "features/vocabulary/nodes/item/words.txt").read_bytes() == \
        (out / "features/vocabulary/nodes/item/words.txt").read_bytes()


def test_the_demo_writes_its_author_names(tmp_path):
    out = tmp_path / "demo"
    assert sample.main(["--graph", DEMO, "--spec", os.path.join(DEMO, "sampling_spec.pbtxt"),
                        "--seeds", os.path.join(DEMO, "seeds.csv"), "--output", f"{out}/",
                        "--quiet"]) == 0
    names = (out / "features/vocabulary/nodes/author/name.txt").read_text().splitlines()
    assert len(names) == len(set(names)) > 10


def test_a_graph_store_gives_the_tables_vocabularies(capsys, tmp_path, sampled_outputs):
    from pipelines import convert

    store = tmp_path / "store"
    assert convert.main(["--graph", MIXED, "--output", str(store), "--format", "store"]) == 0
    spec = tmp_path / "spec.pbtxt"
    spec.write_text(MIXED_SPEC)
    out = tmp_path / "out"
    assert sample.main(["--graph", str(store), "--spec", str(spec), "--output", f"{out}/",
                        "--quiet"]) == 0
    tables = os.path.join(sampled_outputs["mixed"], "features")
    for name in listed(tables):
        assert (out / "features" / name).read_bytes() == \
            open(os.path.join(tables, name), "rb").read(), name
