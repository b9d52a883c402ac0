"""Beam transforms that read a unigraph: thin wiring around unigraph.tables.

    papers = pipeline | ReadNodeSet(loaded, "paper")     # PCollection of NodeBatch
    cites = pipeline | ReadEdgeSet(loaded, "cites")      # PCollection of EdgeBatch
    seeds = pipeline | ReadSeeds("seeds.csv")            # PCollection of SeedBatch
    pairs = pipeline | ReadPairs(layout, "pairs.csv")    # PCollection of PairBatch

Each table becomes work units (a CSV/TFRecord/text file, one Parquet row
group, or one BigQuery read stream), spread over workers (shuffle.Spread) and read
by the pure readers into batches of at most `batch_rows` rows, so Beam handles a
few large elements instead of one per row or cell. File lists are expanded when
the transform is constructed, so a missing file or a glob matching nothing fails
before the pipeline runs; Parquet files are split into row groups on the
workers, so the launcher reads no footers. A BigQuery table gets its one read
session when the transform is applied (a `sql` source runs into its temporary
table then), so a missing table or column fails before the pipeline runs too;
the temporary table is dropped by a last step that waits for every stream to be
read. Problems that span files (a duplicate node id, an edge naming an absent
node) are found where the sampler joins the tables.
"""
from __future__ import annotations

import apache_beam as beam

from unigraph.storage import bigquery
from unigraph.beam.coder import use_element_coder
from unigraph.beam.shuffle import Spread
from unigraph.schema import LoadedSchema, bigquery_source, table_files
from unigraph.tables import (DEFAULT_BATCH_ROWS, TableLayout, close_bigquery, open_bigquery,
                             read_unit, seed_files, seeds_layout, seeds_source, split_file,
                             table_layout)
from unigraph.tables.layout import TimeColumn
from unigraph.beam.steps import DoFn, FlatMap, Map


use_element_coder()  # batches cross workers as raw arrays, not pickles (beam_coder.py)


class _ReadUnits(DoFn):
    def __init__(self, layout: TableLayout, batch_rows: int):
        self._layout, self._batch_rows = layout, batch_rows

    def process(self, unit):
        yield from read_unit(self._layout, unit, self._batch_rows)


class _ReadFiles(beam.PTransform):
    """Files of one table -> batches; spread over the workers (unigraph.beam.shuffle.Spread,
    a lighter Reshuffle) as files, then as work units."""

    def __init__(self, layout: TableLayout, files: list[str], batch_rows: int):
        super().__init__()
        self._layout, self._files, self._batch_rows = layout, list(files), batch_rows

    def expand(self, pbegin):
        # Our own spread, always: Create adds a Reshuffle only for more than one element,
        # and the job's steps must not depend on how many files there are.
        files = (pbegin | "Files" >> beam.Create(list(enumerate(self._files)), reshuffle=False)
                 | "SpreadFiles" >> Spread())
        return (files
                | "Split" >> FlatMap(lambda indexed: split_file(indexed[1], indexed[0]))
                | "SpreadUnits" >> Spread()
                | "Read" >> beam.ParDo(_ReadUnits(self._layout, self._batch_rows)))


def _drop_temporary_table(opened):
    close_bigquery(opened)


class _ReadBigQuery(beam.PTransform):
    """A BigQuery table -> batches: one read session, its streams spread over the workers."""

    def __init__(self, layout: TableLayout, source: bigquery.Source, batch_rows: int):
        super().__init__()
        self._layout, self._source, self._batch_rows = layout, source, batch_rows

    def expand(self, pbegin):
        opened, units = open_bigquery(self._layout, self._source)
        streams = (pbegin | "Streams" >> beam.Create(units, reshuffle=False)
                   | "SpreadStreams" >> Spread())
        batches = streams | "Read" >> beam.ParDo(_ReadUnits(self._layout, self._batch_rows))
        if opened.temporary:
            # The sum on one key is ready only once every stream has been read (the
            # Create's zero makes it exist when there is no batch). A keyed combine, not
            # CombineGlobally and a side input: see docs/architecture.md, "Beam rules".
            rows_read = batches | "Cleanup/Rows" >> Map(lambda batch: (0, len(batch)))
            nothing = pbegin | "Cleanup/Zero" >> beam.Create([(0, 0)])
            _ = ((rows_read, nothing) | "Cleanup/Gather" >> beam.Flatten()
                 | "Cleanup/Sum" >> beam.CombinePerKey(sum)
                 | "Cleanup/Drop" >> Map(lambda _, table=opened:
                                              _drop_temporary_table(table)))
        return batches


def _read_table(loaded: LoadedSchema, kind: str, set_name: str, batch_rows: int,
                timestamp: TimeColumn | None = None):
    layout = table_layout(loaded, kind, set_name, timestamp)
    source = bigquery_source(loaded, kind, set_name)
    if source is not None:
        return _ReadBigQuery(layout, source, batch_rows)
    return _ReadFiles(layout, table_files(loaded, kind, set_name), batch_rows)


class ReadNodeSet(beam.PTransform):
    """PCollection of NodeBatch for one node set that has a table (with `timestamp`,
    its timestamp column too)."""

    def __init__(self, loaded: LoadedSchema, set_name: str, *,
                 batch_rows: int = DEFAULT_BATCH_ROWS, timestamp: TimeColumn | None = None):
        super().__init__()
        self._read = _read_table(loaded, "nodes", set_name, batch_rows, timestamp)

    def expand(self, pbegin):
        return pbegin | self._read


class ReadEdgeSet(beam.PTransform):
    """PCollection of EdgeBatch for one edge set, oriented per the schema (with
    `timestamp`, its timestamp column too)."""

    def __init__(self, loaded: LoadedSchema, set_name: str, *,
                 batch_rows: int = DEFAULT_BATCH_ROWS, timestamp: TimeColumn | None = None):
        super().__init__()
        self._read = _read_table(loaded, "edges", set_name, batch_rows, timestamp)

    def expand(self, pbegin):
        return pbegin | self._read


class ReadSeeds(beam.PTransform):
    """PCollection of SeedBatch from a seeds table (id column), a .txt file (one id a
    line), or a BigQuery table `bq://project.dataset.table` (an `id` column).

    `pattern` may be sharded (`name@N`) or a glob; relative names resolve
    against `base_dir`.
    """

    def __init__(self, pattern: str, *, base_dir: str = ".",
                 batch_rows: int = DEFAULT_BATCH_ROWS, timestamp: TimeColumn | None = None):
        super().__init__()
        source = seeds_source(pattern)
        layout = seeds_layout(timestamp)
        self._read = (_ReadBigQuery(layout, source, batch_rows) if source is not None
                      else _ReadFiles(layout, seed_files(pattern, base_dir), batch_rows))

    def expand(self, pbegin):
        return pbegin | self._read


class ReadPairs(beam.PTransform):
    """PCollection of PairBatch from a pairs table (link seeds: `source`, `target` and
    the `_readout` features of `layout`, from tables.pairs_layout): files (`name@N`,
    globs, relative to `base_dir`) or a BigQuery table `bq://project.dataset.table`."""

    def __init__(self, layout: TableLayout, pattern: str, *, base_dir: str = ".",
                 batch_rows: int = DEFAULT_BATCH_ROWS):
        super().__init__()
        source = seeds_source(pattern)
        self._read = (_ReadBigQuery(layout, source, batch_rows) if source is not None
                      else _ReadFiles(layout, seed_files(pattern, base_dir), batch_rows))

    def expand(self, pbegin):
        return pbegin | self._read
