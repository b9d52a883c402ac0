"""Tables held in memory (TableSource) read exactly as the same table in a Parquet file:
the same ids, features, weights and RowIds, messages naming `memory:<table>`."""
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from unigraph.columnar.table_source import TableSource
from unigraph.errors import TableError
from unigraph.schema import LoadedSchema, parse_schema_text
from unigraph.tables import read_set, row_location, table_locations
from unigraph.tables.columns import set_bytes, set_columns
from unigraph.tables.layout import table_layout
from unigraph.tables.read import read_memory

from tests.unigraph import graphs

SCHEMA = """
node_sets { key: "item" value {
  features { key: "v" value { dtype: DT_FLOAT shape { dim { size: 2 } } } }
  metadata { filename: "item" } } }
edge_sets { key: "link" value { source: "item" target: "item"
  features { key: "tags" value { dtype: DT_INT64 shape { dim { size: -1 } } } }
  metadata { filename: "link" } } }
"""


def tables():
    items = pa.table({"#id": pa.array(["i1", "i2", "i3", "i4", "i5"]),
                      "v": pa.FixedSizeListArray.from_arrays(
                          pa.array(np.arange(10, dtype=np.float32)), 2)})
    links = pa.table({"#source": pa.array([1, 2, 3], pa.int64()),
                      "#target": pa.array([2, 3, 1], pa.int64()),
                      "#weight": pa.array([0.5, 1.0, 2.0]),
                      "tags": pa.array([[1], [2, 3], []], pa.list_(pa.int64()))})
    return items, links


def memory_graph(parts=1):
    items, links = tables()
    split = [items.slice(i, 2) for i in range(0, 5, 2)] if parts > 1 else [items]
    memory = {"item": TableSource.streamed("item", items.schema, lambda: split),
              "link": TableSource.of_table("link", links)}
    return LoadedSchema(parse_schema_text(SCHEMA, "(test)"), "(test)", ".", memory=memory)


@pytest.mark.parametrize("parts", [1, 3])
def test_a_table_in_memory_reads_as_its_parquet_file(tmp_path, parts):
    loaded = memory_graph(parts)
    items, links = tables()
    pq.write_table(items, tmp_path / "item.parquet", row_group_size=2)
    pq.write_table(links, tmp_path / "link.parquet")
    on_disk = LoadedSchema(parse_schema_text(SCHEMA.replace('"item" }', '"item.parquet" }')
                                             .replace('"link" }', '"link.parquet" }'), "x"),
                           str(tmp_path / "graph_schema.pbtxt"), str(tmp_path))
    for kind, name in (("nodes", "item"), ("edges", "link")):
        graphs.assert_same_batch(graphs.merged(read_set(loaded, kind, name, batch_rows=2)),
                                 graphs.merged(read_set(on_disk, kind, name)))
    assert set_columns(loaded, "edges", "link") == ["#source", "#target", "#weight", "tags"]
    assert set_bytes(loaded, "edges", "link") == links.nbytes


def test_a_table_without_rows_gives_one_empty_batch():
    items, _ = tables()
    source = TableSource.of_table("item", items.slice(0, 0))
    loaded = memory_graph()
    batch, = read_memory(table_layout(loaded, "nodes", "item"), source)
    assert len(batch) == 0 and batch.features["v"].shape == (0, 2)


def test_messages_name_the_table_in_memory():
    loaded = memory_graph()
    locations = table_locations(loaded, "nodes", "item")
    assert locations == ["memory:item"]
    assert row_location(locations, 3) == "memory:item row 3"
    bad = pa.table({"#id": pa.array(["i1"]), "w": pa.array([1.0])})
    with pytest.raises(TableError, match="memory:item: node set .item.: missing "
                                         "feature column 'v'"):
        list(read_memory(table_layout(loaded, "nodes", "item"),
                         TableSource.of_table("item", bad)))
