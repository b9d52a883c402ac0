"""Reading unigraph tables (CSV, TFRecord, Parquet, BigQuery; seeds also .txt) into
columnar batches.

Modules, in the order data flows:
  layout.py  what the schema asks of a table (TableLayout, FeatureSpec)
  csv.py, tfrecord.py, parquet.py, text.py   one format each: file -> Arrow columns
             (TFRecord: numpy values and byte spans, via examples.py)
  examples.py  tf.train.Example records of a chunk -> per-column values, all at once
  bigquery.py  a BigQuery table: read session, Arrow batches per read stream
  decode.py  Arrow columns -> numpy ids, weights, features (Ragged for ragged dims)
  build.py   column resolution and the NodeBatch/EdgeBatch/SeedBatch itself
  read.py    the pure entry points below

Error policy: bad input never passes silently. The first problem in a file
raises a one-line TableError naming the file, where in it (CSV: 1-based line,
header = line 1; TFRecord: 0-based record index; Parquet: 0-based row), and the
value found. That covers a CSV row with the wrong number of columns, a value
that does not parse as the declared dtype (and NaN/inf weights), a vector of
the wrong length, a missing id/source/target or feature column, an empty file,
an empty id or one ending in a NUL byte. A glob that matches nothing fails in
unigraph.storage.paths. Problems that span files are found where the sampler joins the
tables: a duplicate node id stops the run (sampler.core.node_table, naming both
rows by `row_location`); an edge naming an id absent from its node set's table
is dropped and counted in the run report.
Columns the schema does not mention are ignored.
"""
from unigraph.tables.layout import (DEFAULT_BATCH_ROWS, FeatureSpec, TableLayout,
                                    is_reversed, pairs_layout, seeds_layout, table_layout)
from unigraph.tables.read import (WorkUnit, close_bigquery, open_bigquery, read_bigquery,
                                  read_pair_set, read_seed_set, read_seeds, read_set, read_table, read_unit,
                                  row_location, seed_files, seeds_source, split_file,
                                  table_locations)

__all__ = ["DEFAULT_BATCH_ROWS", "FeatureSpec", "TableLayout", "WorkUnit", "close_bigquery",
           "is_reversed", "open_bigquery", "pairs_layout", "read_bigquery", "read_pair_set",
           "read_seed_set", "read_seeds",
           "read_set", "read_table", "read_unit", "row_location", "seed_files", "seeds_source",
           "split_file", "table_layout", "table_locations"]
