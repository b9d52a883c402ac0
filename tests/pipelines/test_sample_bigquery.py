"""`sample` on a graph in BigQuery (a real emulator) writes the bytes it writes from Parquet.

One small heterogeneous graph (two node sets; string, integer, float, vector and
ragged features; weighted edge sets, one read reversed; no parallel edges) is
written as Parquet and loaded into the emulator from the same Arrow tables. The
BigQuery copy names its tables by `table_spec` and by `sql`, and the seeds come
from a file or from a BigQuery table; every run must write the Parquet run's
shards byte for byte. Also: the dry run lists BigQuery tables with row and stream
counts, and a bad BigQuery table stops `sample` with one line.
"""
import glob
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines import sample
from tests.bigquery_emulator import PROJECT, load_table
from tests.pipelines.sampled_output import read_records, read_report

DATASET = "sample_tests"

SCHEMA = """
node_sets { key: "paper" value {
  features { key: "title" value { dtype: DT_STRING } }
  features { key: "year" value { dtype: DT_INT64 } }
  features { key: "emb" value { dtype: DT_FLOAT shape { dim { size: 4 } } } }
  features { key: "kw" value { dtype: DT_INT32 shape { dim { size: -1 } } } }
  metadata { PAPER } } }
node_sets { key: "author" value {
  features { key: "name" value { dtype: DT_STRING } }
  features { key: "h" value { dtype: DT_DOUBLE } }
  metadata { AUTHOR } } }
edge_sets { key: "cites" value { source: "paper" target: "paper"
  features { key: "why" value { dtype: DT_STRING } }
  metadata { CITES } } }
edge_sets { key: "writes" value { source: "author" target: "paper"
  metadata { WRITES } } }
edge_sets { key: "written_by" value { source: "paper" target: "author"
  metadata { WRITES extra { key: "edge_type" value: "reversed" } } } }
"""

SPEC = """
seed_op { op_name: "seed" node_set_name: "paper" }
sampling_ops { op_name: "cited" input_op_names: "seed" edge_set_name: "cites"
               sample_size: 3 strategy: RANDOM_WEIGHTED }
sampling_ops { op_name: "authors" input_op_names: ["seed", "cited"] edge_set_name: "written_by"
               sample_size: 2 strategy: RANDOM_UNIFORM }
sampling_ops { op_name: "their_papers" input_op_names: "authors" edge_set_name: "writes"
               sample_size: 2 strategy: TOP_K }
"""

FILES = {"PAPER": 'filename: "paper.parquet"', "AUTHOR": 'filename: "author.parquet"',
         "CITES": 'filename: "cites.parquet"', "WRITES": 'filename: "writes.parquet"'}
BIGQUERY = {
    "PAPER": f'bigquery {{ table_spec {{ project: "{PROJECT}" dataset: "{DATASET}" '
             f'table: "paper" }} }}',
    "AUTHOR": f'bigquery {{ sql: "SELECT h, name, id FROM `{PROJECT}.{DATASET}.author`" }}',
    "CITES": f'bigquery {{ table_spec {{ dataset: "{DATASET}" table: "cites" }} '
             f'read_method: DIRECT_READ }}',
    "WRITES": f'bigquery {{ sql: "SELECT * FROM {DATASET}.writes WHERE weight > -1" }}',
}


def graph_tables(seed=11):
    """The graph as Arrow tables with BigQuery-friendly column names."""
    rng = np.random.default_rng(seed)
    papers, authors = 40, 15
    paper_ids = [f"p{i:02d}" for i in range(papers)]
    author_ids = [f"a{i:02d}" for i in range(authors)]
    counts = rng.integers(0, 4, size=papers)
    paper = pa.table({
        "id": paper_ids,
        "title": pa.array([f"Paper {i}: {'x' * (i % 5)}".encode() for i in range(papers)],
                          pa.binary()),
        "year": pa.array(rng.integers(1990, 2024, size=papers), pa.int64()),
        "emb": pa.array(list(rng.normal(size=(papers, 4)).astype(np.float32)),
                        pa.list_(pa.float32())),
        "kw": pa.array([list(rng.integers(0, 50, size=c)) for c in counts],
                       pa.list_(pa.int64())),
    })
    author = pa.table({"id": author_ids, "name": [f"Author {i}" for i in range(authors)],
                       "h": pa.array(rng.random(authors) * 10, pa.float64())})

    def edges(sources, targets, count):
        pairs = sorted({(sources[int(rng.integers(len(sources)))],
                         targets[int(rng.integers(len(targets)))]) for _ in range(count)})
        return [s for s, _ in pairs], [t for _, t in pairs]

    s, t = edges(paper_ids, paper_ids, 150)
    cites = pa.table({"source": s, "target": t,
                      "weight": pa.array(rng.random(len(s)) + 0.1, pa.float64()),
                      "why": [f"r{i % 3}" for i in range(len(s))]})
    s, t = edges(author_ids, paper_ids, 60)
    writes = pa.table({"source": s, "target": t,
                       "weight": pa.array(rng.integers(1, 4, size=len(s)), pa.int64())})
    seeds = pa.table({"id": ["p03", "p17", "p03", "p39", "nope", "p00"]})
    return {"paper": paper, "author": author, "cites": cites, "writes": writes, "seeds": seeds}


def write_schema(folder, metadata):
    os.makedirs(folder, exist_ok=True)
    text = SCHEMA
    for key, value in metadata.items():
        text = text.replace(key, value)
    with open(os.path.join(folder, "graph_schema.pbtxt"), "w") as f:
        f.write(text)
    with open(os.path.join(folder, "spec.pbtxt"), "w") as f:
        f.write(SPEC)
    return folder


@pytest.fixture(scope="module")
def graph(bigquery_server, tmp_path_factory):
    """{"parquet": folder, "bigquery": folder}: the same graph and seeds in both."""
    root = tmp_path_factory.mktemp("graph")
    tables = graph_tables()
    parquet = write_schema(str(root / "parquet"), FILES)
    for name, table in tables.items():
        pq.write_table(table, os.path.join(parquet, f"{name}.parquet"), row_group_size=16)
    client = bigquery_server.client()
    client.create_dataset(DATASET, exists_ok=True)
    for name, table in tables.items():
        load_table(client, f"{PROJECT}.{DATASET}.{name}", table)
    return {"parquet": parquet, "bigquery": write_schema(str(root / "bigquery"), BIGQUERY)}


def run(folder, out, *extra):
    code = sample.main(["--graph", folder, "--spec", os.path.join(folder, "spec.pbtxt"),
                        "--output", f"{out}/", "--quiet", "--seed", "5", *extra])
    assert code == 0
    return str(out)


def shard_bytes(out):
    files = sorted(glob.glob(os.path.join(out, "samples-*-of-*.tfrecord")))
    result = {}
    for path in files + [os.path.join(out, "graph_schema.pbtxt")]:
        with open(path, "rb") as f:
            result[os.path.basename(path)] = f.read()
    return result


@pytest.fixture(scope="module")
def parquet_out(graph, tmp_path_factory):
    out = tmp_path_factory.mktemp("out") / "parquet"
    return run(graph["parquet"], out, "--seeds", os.path.join(graph["parquet"], "seeds.parquet"),
               "--engine", "beam")


@pytest.mark.parametrize("engine", ["memory", "beam"])
def test_bigquery_tables_and_queries_sample_like_parquet(graph, parquet_out, bigquery, tmp_path,
                                                         engine):
    out = run(graph["bigquery"], tmp_path / "bq", "--seeds",
              os.path.join(graph["parquet"], "seeds.parquet"), "--engine", engine)
    expected = shard_bytes(parquet_out)
    assert len(read_records(parquet_out)) == 5  # "nope" is missing
    assert shard_bytes(out) == expected
    report = read_report(out)
    assert report["seeds_read"] == 6 and report["missing_seed_ids"] == ["nope"]


@pytest.mark.parametrize("engine", ["memory", "beam"])
def test_bigquery_seeds_table_samples_like_a_seeds_file(graph, parquet_out, bigquery, tmp_path,
                                                        engine):
    out = run(graph["bigquery"], tmp_path / "bq", "--seeds",
              f"bq://{PROJECT}.{DATASET}.seeds", "--engine", engine)
    assert shard_bytes(out) == shard_bytes(parquet_out)


@pytest.mark.parametrize("engine", ["memory", "beam"])
def test_temporary_tables_are_dropped(graph, bigquery, tmp_path, engine):
    client = bigquery.client()
    run(graph["bigquery"], tmp_path / "bq", "--seeds", f"bq://{DATASET}.seeds",
        "--engine", engine)
    temporary = [t.table_id for t in client.list_tables(f"{PROJECT}.graph_sampler_tmp_us")]
    assert temporary == []


def test_dry_run_lists_bigquery_tables_with_rows_and_streams(graph, bigquery, capsys):
    folder = graph["bigquery"]
    assert sample.main(["--graph", folder, "--spec", os.path.join(folder, "spec.pbtxt"),
                        "--seeds", f"bq://{PROJECT}.{DATASET}.seeds", "--dry-run"]) == 0
    out = capsys.readouterr().out
    tables = graph_tables()
    assert (f"node set 'paper': BigQuery table {PROJECT}.{DATASET}.paper: "
            f"{tables['paper'].num_rows} rows, 1 read stream(s)") in out
    assert (f"edge set 'cites': BigQuery table {DATASET}.cites: "
            f"{tables['cites'].num_rows} rows, 1 read stream(s)") in out
    assert ("node set 'author': BigQuery sql of node set 'author': valid query") in out
    assert f"seeds: BigQuery table {PROJECT}.{DATASET}.seeds: 6 rows, 1 read stream(s)" in out


def test_dry_run_without_reaching_bigquery_still_prints_the_plan(graph, capsys, monkeypatch,
                                                                 tmp_path):
    """An emulator that is not there: each table says so; the plan is still printed."""
    from tests.bigquery_emulator import free_port
    address = f"127.0.0.1:{free_port()}"
    monkeypatch.setenv("BIGQUERY_EMULATOR_HOST", address)
    monkeypatch.setenv("BIGQUERY_STORAGE_EMULATOR_HOST", address)
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", PROJECT)
    monkeypatch.setattr("unigraph.storage.bigquery.METADATA_DEADLINE_S", 1.0)
    folder = graph["bigquery"]
    # Unweighted ops: a weighted one would need the edge table's columns to plan.
    spec = tmp_path / "uniform.pbtxt"
    spec.write_text(SPEC.replace("RANDOM_WEIGHTED", "RANDOM_UNIFORM").replace("TOP_K",
                                                                             "RANDOM_UNIFORM"))
    assert sample.main(["--graph", folder, "--spec", str(spec), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "sampling ops, in execution order:" in out
    assert f"BigQuery table {PROJECT}.{DATASET}.paper: not reachable now (" in out


def test_duplicate_node_id_in_bigquery_is_one_line(graph, bigquery, tmp_path, capsys):
    load_table(bigquery.client(), f"{PROJECT}.{DATASET}.twice",
               pa.table({"id": ["p01", "p02", "p01"], "h": [1.0, 2.0, 3.0],
                         "name": ["a", "b", "c"]}))
    folder = write_schema(str(tmp_path / "g"), dict(BIGQUERY, AUTHOR=(
        f'bigquery {{ table_spec {{ dataset: "{DATASET}" table: "twice" }} }}')))
    code = sample.main(["--graph", folder, "--spec", os.path.join(folder, "spec.pbtxt"),
                        "--output", str(tmp_path / "out/"), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err, err
    assert (f"node set 'author': duplicate node id 'p01' in BigQuery table {DATASET}.twice "
            f"(the row whose content hashes to ") in err


def test_convert_exports_a_bigquery_graph_to_files(graph, parquet_out, bigquery, tmp_path):
    from pipelines import convert
    files = str(tmp_path / "files")
    assert convert.main(["--graph", graph["bigquery"], "--output", files,
                         "--format", "parquet"]) == 0
    with open(os.path.join(files, "graph_schema.pbtxt")) as f:
        text = f.read()
    assert "bigquery" not in text and 'filename: "paper.parquet"' in text
    assert text.count('filename: "writes.parquet"') == 2  # written_by shares the query's table
    with open(os.path.join(graph["bigquery"], "spec.pbtxt")) as f:
        (tmp_path / "files" / "spec.pbtxt").write_text(f.read())
    out = run(files, tmp_path / "out", "--seeds", os.path.join(graph["parquet"], "seeds.parquet"))
    assert shard_bytes(out) == shard_bytes(parquet_out)


def test_every_node_of_a_bigquery_seed_set_seeds_like_parquet(graph, bigquery, tmp_path):
    """Without --seeds every node of the seed set is a seed: numbered by content, too."""
    parquet = run(graph["parquet"], tmp_path / "parquet")
    assert len(read_records(parquet)) == 40
    assert shard_bytes(run(graph["bigquery"], tmp_path / "bq")) == shard_bytes(parquet)


def test_bigquery_seeds_with_cutoffs_sample_like_a_file(graph, bigquery_server, bigquery,
                                                        tmp_path):
    """A BigQuery seeds table with a `timestamp` column gives cut-offs, as a file does
    (here over the papers' `year` as node timestamps: --timestamp-column year)."""
    seeds = pa.table({"id": ["p03", "p17", "p03", "p39", "p00"],
                      "timestamp": pa.array([2000, 2020, 1995, 2024, 1980], pa.int64())})
    pq.write_table(seeds, str(tmp_path / "timed.parquet"))
    load_table(bigquery_server.client(), f"{PROJECT}.{DATASET}.timed_seeds", seeds)
    one = ("--timestamp-column", "year", "--engine", "memory", "--workers", "1")  # no fork
    files = run(graph["parquet"], tmp_path / "files", "--seeds", str(tmp_path / "timed.parquet"),
                *one)
    bq = run(graph["bigquery"], tmp_path / "bq", "--seeds",
             f"bq://{PROJECT}.{DATASET}.timed_seeds", *one)
    assert shard_bytes(bq) == shard_bytes(files)
    assert b"seed_timestamp" in shard_bytes(bq)["graph_schema.pbtxt"]


LINK_READOUT = """
node_sets { key: "_readout" value { features { key: "label" value { dtype: DT_INT64 } } } }
edge_sets { key: "_readout/source" value { source: "paper" target: "_readout" } }
edge_sets { key: "_readout/target" value { source: "paper" target: "_readout" } }
"""


def test_bigquery_pairs_with_cutoffs_sample_like_a_file(graph, bigquery_server, bigquery,
                                                        tmp_path):
    """Link seeds: a BigQuery pairs table with a `timestamp` column gives each pair its
    cut-off, as a file does (papers' `year` as node times; negatives must exist then)."""
    import shutil

    pairs = pa.table({"source": ["p03", "p17", "p03", "p39", "p00", "p03"],
                      "target": ["p17", "p03", "p17", "p00", "p00", "p21"],
                      "label": pa.array([1, 1, 1, 0, 1, 1], pa.int64()),
                      "timestamp": pa.array([2000, 2020, 2010, 2024, 1980, 2015], pa.int64())})
    pq.write_table(pairs, str(tmp_path / "pairs.parquet"))
    load_table(bigquery_server.client(), f"{PROJECT}.{DATASET}.timed_pairs", pairs)
    folders = {}
    for kind in ("parquet", "bigquery"):
        folders[kind] = str(tmp_path / kind)
        shutil.copytree(graph[kind], folders[kind])
        with open(os.path.join(folders[kind], "graph_schema.pbtxt"), "a") as f:
            f.write(LINK_READOUT)
        with open(os.path.join(folders[kind], "spec.pbtxt"), "w") as f:
            f.write(SPEC.replace('seed_op { op_name: "seed" node_set_name: "paper" }',
                                 'symmetric_link_seed_op { op_name: "seed" }'))
    one = ("--timestamp-column", "year", "--engine", "memory", "--workers", "1",  # no fork
           "--negatives", "2")
    files = run(folders["parquet"], tmp_path / "files", "--seeds",
                str(tmp_path / "pairs.parquet"), *one)
    bq = run(folders["bigquery"], tmp_path / "bq", "--seeds",
             f"bq://{PROJECT}.{DATASET}.timed_pairs", *one)
    assert shard_bytes(bq) == shard_bytes(files)
    assert b"seed_timestamp" in shard_bytes(bq)["graph_schema.pbtxt"]
    report = read_report(bq)
    assert report["subgraphs_written"] == 6 + report["negatives"] and report["negatives"] > 0


@pytest.mark.parametrize("flags", [("--bigquery-project", PROJECT, "--engine", "memory"),
                                   ("--project", PROJECT)])  # Beam's: the Beam engine runs
def test_the_command_lines_project_is_the_billing_project(graph, parquet_out, bigquery,
                                                          tmp_path, monkeypatch, flags):
    """Without GOOGLE_CLOUD_PROJECT (and no credentials' project on an emulator), the
    queries and read sessions bill to --bigquery-project or Beam's --project."""
    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT")
    out = run(graph["bigquery"], tmp_path / "bq", "--seeds",
              os.path.join(graph["parquet"], "seeds.parquet"), *flags)
    assert shard_bytes(out) == shard_bytes(parquet_out)


def test_no_billing_project_is_one_line_naming_the_flags(graph, bigquery, tmp_path,
                                                         monkeypatch, capsys):
    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT")
    folder = graph["bigquery"]
    code = sample.main(["--graph", folder, "--spec", os.path.join(folder, "spec.pbtxt"),
                        "--output", f"{tmp_path}/out/", "--quiet", "--engine", "memory"])
    err = capsys.readouterr().err.strip()
    assert code != 0 and "\n" not in err
    assert "--bigquery-project" in err and "GOOGLE_CLOUD_PROJECT" in err
    assert not os.path.exists(tmp_path / "out")


@pytest.mark.parametrize("args, project", [
    ([], None), (["--project", "p1"], "p1"), (["--project=p2", "--region", "r"], "p2"),
    (["--runner", "DataflowRunner", "--project", "p3"], "p3")])
def test_beams_project_is_read_from_the_pipeline_options(args, project):
    assert sample.beam_project(args) == project


def test_the_given_project_comes_before_the_environment(monkeypatch):
    from unigraph.storage import bigquery as bq
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "from-environment")
    with bq.billing_project_given("from-flag"):
        assert bq.billing_project() == "from-flag"
        with bq.billing_project_given(None):   # nothing given inside: the outer stays
            assert bq.billing_project() == "from-flag"
    assert bq.billing_project() == "from-environment"


def test_convert_never_writes_outside_its_folder_for_a_set_named_like_a_path(
        graph, bigquery, tmp_path):
    """Issue 36: a query's set is exported under the set's name, so a name holding '/'
    became an output path (a folder inside it, or, absolute, anywhere)."""
    from pipelines import convert
    named = "/escape/author"
    folder = tmp_path / "g" / "h"
    write_schema(str(folder), BIGQUERY)
    schema = (folder / "graph_schema.pbtxt").read_text().replace('"author"', f'"{named}"')
    (folder / "graph_schema.pbtxt").write_text(schema)
    files = tmp_path / "g" / "files"
    assert convert.main(["--graph", str(folder), "--output", str(files),
                         "--format", "parquet"]) == 0
    assert sorted(os.listdir(tmp_path)) == ["g"]
    assert sorted(os.listdir(tmp_path / "g")) == ["files", "h"]
    written = sorted(os.listdir(files))
    assert "_escape_author.parquet" in written and not any(
        os.path.isdir(files / n) for n in written)
