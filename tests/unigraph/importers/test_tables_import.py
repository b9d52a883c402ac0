"""Plain tables without a schema: the schema guessed from names and values, any guess
corrected by hints, the tables read by the project's readers and written canonically."""
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from pipelines import sample
from unigraph.errors import SamplerError
from unigraph.importers import write_graph
from unigraph.importers.infer import Hints
from unigraph.importers.review import review
from unigraph.importers.tables import from_tables, guess_tables
from unigraph.protos import graph_schema_pb2 as gs
from unigraph.schema import feature_shape, load_schema
from unigraph.tables import read_seed_set, read_set

from tests.unigraph import graphs


def write_shop(folder):
    """users (ids, an int, a CSV vector, labels, a split), items, purchases with a time,
    follows between users with generic end names."""
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(0)
    with open(os.path.join(folder, "users.csv"), "w") as f:
        f.write("user_id,age,embedding,label,split\n")
        for i in range(40):
            vector = " ".join(str(v) for v in (rng.integers(0, 100, 3) / 4))
            f.write(f"u{i},{20 + i},{vector},{i % 3},{('train', 'valid', 'test')[i % 3]}\n")
    with open(os.path.join(folder, "items.csv"), "w") as f:
        f.write("item_id,price,category\n")
        for i in range(10):
            f.write(f"i{i},{i * 1.5},c{i % 2}\n")
    with open(os.path.join(folder, "purchases.csv"), "w") as f:
        f.write("user_id,item_id,ts,quantity\n")
        for i in range(60):
            f.write(f"u{rng.integers(40)},i{rng.integers(10)},{1700000000 + i},{i % 4}\n")
    with open(os.path.join(folder, "follows.csv"), "w") as f:
        f.write("src,dst\n")
        for i in range(50):
            f.write(f"u{rng.integers(40)},u{rng.integers(40)}\n")
    return folder


def test_the_guess_for_a_folder_of_csv_tables(tmp_path):
    guess = guess_tables(write_shop(str(tmp_path / "shop")))
    assert {t: (n.set_name, n.id_column) for t, n in guess.nodes.items()} == {
        "items": ("items", "item_id"), "users": ("users", "user_id")}
    ends = {e.set_name: ((e.source.column, e.source.node_set), (e.target.column, e.target.node_set))
            for e in guess.edges}
    assert ends == {"purchases": (("user_id", "users"), ("item_id", "items")),
                    "follows": (("src", "users"), ("dst", "users"))}
    users = guess.features["users"]
    assert (users["embedding"].dtype, users["embedding"].shape) == (gs.DT_FLOAT, (3,))
    assert (users["age"].dtype, users["age"].shape) == (gs.DT_INT64, ())
    assert "split" not in users and guess.split == ("users", "split")
    assert guess.label == ("users", "label") and guess.seed_set == "users"
    assert guess.timestamps == {"purchases": "ts"}
    text = "\n".join(review(guess))
    assert "node set 'users', id column 'user_id'" in text
    assert "edge set 'follows' from 'src' (users: by values (100% are its ids))" in text


def test_the_written_graph_holds_the_tables_and_samples(tmp_path):
    folder = write_shop(str(tmp_path / "shop"))
    out = tmp_path / "graph"
    write_graph(from_tables(folder, guess_tables(folder)), str(out), "parquet")
    loaded = load_schema(str(out))
    assert any(kv.key == "timestamp_column" and kv.value == "ts"
               for kv in loaded.schema.edge_sets["purchases"].metadata.extra)
    users = graphs.merged(read_set(loaded, "nodes", "users"))
    assert users.ids[:3].tolist() == [b"u0", b"u1", b"u2"]
    assert users.features["embedding"].shape == (40, 3)
    assert "rev_purchases" in loaded.schema.edge_sets
    train = np.concatenate([b.ids for b in read_seed_set(str(out / "seeds-train.parquet"))])
    assert train.tolist() == [f"u{i}".encode() for i in range(0, 40, 3)]
    assert sample.main(["--graph", str(out), "--spec", str(out / "sampling_spec.pbtxt"),
                        "--seeds", str(out / "seeds-valid.parquet"), "--output",
                        f"{tmp_path / 'samples'}/", "--quiet"]) == 0


def test_parquet_types_shards_and_folders(tmp_path):
    """Integer ids, a number column that is no reference, Parquet timestamps (read as
    their integer), fixed and ragged lists, sharded files and a folder of parts."""
    folder = tmp_path / "tables"
    (folder / "events").mkdir(parents=True)
    ids = np.arange(100, dtype=np.int64)
    people = pa.table({"id": ids, "age": (ids % 60 + 18),
                       "vec": pa.FixedSizeListArray.from_arrays(
                           pa.array(np.ones(200, np.float32)), 2),
                       "tags": pa.array([[1, 2, 3][: i % 3] for i in range(100)]),
                       "joined": pa.array(ids * 1000, pa.timestamp("ms"))})
    pq.write_table(people.slice(0, 50), folder / "people-00000-of-00002.parquet")
    pq.write_table(people.slice(50), folder / "people-00001-of-00002.parquet")
    for part in range(2):
        pq.write_table(pa.table({"person_id": ids[part::2], "other_person_id": ids[::-1][part::2],
                                 "weight": np.full(50, 0.5)}),
                       folder / "events" / f"part-{part}.parquet")
    guess = guess_tables(str(folder))
    assert guess.profiles["people"].files[-1].endswith("people-00001-of-00002.parquet")
    people_features = guess.features["people"]
    assert {n: (c.dtype, c.shape) for n, c in people_features.items()} == {
        "age": (gs.DT_INT64, ()), "vec": (gs.DT_FLOAT, (2,)), "tags": (gs.DT_INT64, (-1,)),
        "joined": (gs.DT_INT64, ())}
    assert guess.timestamps == {"people": "joined"}
    assert not any(e.from_node_table for e in guess.edges)  # `age` is no person id
    events, = [e for e in guess.edges if e.table == "events"]
    assert (events.source.node_set, events.target.node_set) == ("people", "people")
    write_graph(from_tables(str(folder), guess), str(tmp_path / "out"))
    loaded = load_schema(str(tmp_path / "out"))
    people_batch = graphs.merged(read_set(loaded, "nodes", "people"))
    np.testing.assert_array_equal(people_batch.features["joined"], ids * 1000)
    assert feature_shape(loaded.schema.node_sets["people"].features["tags"]) == (-1,)
    edges = graphs.merged(read_set(loaded, "edges", "events"))
    assert len(edges) == 100 and (edges.weights == 0.5).all()


def test_tfrecord_tables(tmp_path):
    folder = tmp_path / "records"
    folder.mkdir()
    graphs.write_records(str(folder / "nodes.tfrecord"), [
        graphs.example(**{"#id": [f"n{i}".encode()], "score": [float(i)], "emb": [1.0, 2.0]})
        for i in range(5)])
    graphs.write_records(str(folder / "links.tfrecord"), [
        graphs.example(**{"#source": [f"n{i}".encode()], "#target": [f"n{(i + 1) % 5}".encode()]})
        for i in range(5)])
    guess = guess_tables(str(folder))
    assert guess.nodes["nodes"].id_column == "#id"
    assert {n: (c.dtype, c.shape) for n, c in guess.features["nodes"].items()} == {
        "score": (gs.DT_FLOAT, ()), "emb": (gs.DT_FLOAT, (2,))}
    write_graph(from_tables(str(folder), guess), str(tmp_path / "out"), "csv")
    loaded = load_schema(str(tmp_path / "out"))
    assert len(graphs.merged(read_set(loaded, "edges", "links"))) == 5


def test_a_node_table_referring_to_another_is_also_an_edge_set(tmp_path):
    folder = tmp_path / "orders"
    folder.mkdir()
    (folder / "customers.csv").write_text("customer_id,name\n" +
                                          "".join(f"c{i},n{i}\n" for i in range(5)))
    (folder / "orders.csv").write_text("order_id,customer_id,amount\n" +
                                       "".join(f"o{i},c{i % 5},{i}.5\n" for i in range(9)))
    guess = guess_tables(str(folder))
    edge, = guess.edges
    assert (edge.set_name, edge.source.column, edge.target.column) == (
        "orders_customer", "order_id", "customer_id")
    assert "customer_id" not in guess.features["orders"]
    write_graph(from_tables(str(folder), guess), str(tmp_path / "out"))
    loaded = load_schema(str(tmp_path / "out"))
    links = graphs.merged(read_set(loaded, "edges", "orders_customer"))
    assert links.sources[:2].tolist() == [b"o0", b"o1"] and links.targets[1] == b"c1"


def test_hints_correct_every_guess(tmp_path):
    folder = write_shop(str(tmp_path / "shop"))
    (tmp_path / "shop" / "places.csv").write_text("code,size\nx,1\ny,2\n")
    hints = Hints(nodes={"places": "code"},
                  edges={"follows": (("src", "people"), ("dst", "people"))},
                  names={"users": "people"}, skip={"items.category", "purchases"},
                  dtypes={"users.age": gs.DT_DOUBLE}, label="users.age",
                  split="users.split", seed_set="people")
    guess = guess_tables(folder, hints)
    assert guess.nodes["places"].id_column == "code"
    assert guess.nodes["users"].set_name == "people"
    assert "category" not in guess.features["items"]
    assert all(e.table != "purchases" for e in guess.edges)
    assert guess.features["users"]["age"].dtype == gs.DT_DOUBLE
    assert guess.seed_set == "people" and guess.label == ("users", "age")
    with pytest.raises(SamplerError, match="no table 'nowhere'"):
        guess_tables(folder, Hints(nodes={"nowhere": "id"}))
    with pytest.raises(SamplerError, match="has no column 'nope'"):
        guess_tables(folder, Hints(nodes={"items": "nope"}))


def test_edges_between_nodes_of_no_table(tmp_path):
    folder = tmp_path / "edges_only"
    folder.mkdir()
    (folder / "links.csv").write_text("source,target,w\n" +
                                      "".join(f"a{i},a{i + 1},{i}\n" for i in range(6)))
    guess = guess_tables(str(folder))
    assert guess.tableless == {"nodes": "ids named by 'links.source'"}
    graph = from_tables(str(folder), guess)
    assert not graph.schema.node_sets["nodes"].metadata.filename
    assert graph.seed_set is None  # no node table to seed from: no spec
