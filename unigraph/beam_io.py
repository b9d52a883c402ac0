"""Beam transforms that read a unigraph: thin wiring around unigraph.tables.

    papers = pipeline | ReadNodeSet(loaded, "paper")     # PCollection of NodeBatch
    cites = pipeline | ReadEdgeSet(loaded, "cites")      # PCollection of EdgeBatch
    seeds = pipeline | ReadSeeds("seeds.csv")            # PCollection of SeedBatch

Each table becomes work units (a CSV/TFRecord/text file, or one Parquet row
group), spread over workers by Reshuffle and read by the pure readers into
batches of at most `batch_rows` rows, so Beam handles a few large elements
instead of one per row or cell. File lists are expanded when the transform is
constructed, so a missing file or a glob matching nothing fails before the
pipeline runs; Parquet files are split into row groups on the workers, so the
launcher reads no footers. Problems that span files (a duplicate node id, an edge
naming an absent node) are found where the sampler joins the tables.
"""
from __future__ import annotations

import apache_beam as beam

from unigraph.schema import LoadedSchema, table_files
from unigraph.tables import (DEFAULT_BATCH_ROWS, TableLayout, read_unit, seed_files,
                             seeds_layout, split_file, table_layout)


class _ReadUnits(beam.DoFn):
    def __init__(self, layout: TableLayout, batch_rows: int):
        self._layout, self._batch_rows = layout, batch_rows

    def process(self, unit):
        yield from read_unit(self._layout, unit, self._batch_rows)


class _ReadFiles(beam.PTransform):
    """Files of one table -> batches; Reshuffles spread files, then work units."""

    def __init__(self, layout: TableLayout, files: list[str], batch_rows: int):
        super().__init__()
        self._layout, self._files, self._batch_rows = layout, list(files), batch_rows

    def expand(self, pbegin):
        files = pbegin | "Files" >> beam.Create(list(enumerate(self._files)))
        if len(self._files) > 1:  # one file gains nothing from spreading: save the shuffle
            files = files | "SpreadFiles" >> beam.Reshuffle()
        return (files
                | "Split" >> beam.FlatMap(lambda indexed: split_file(indexed[1], indexed[0]))
                | "SpreadUnits" >> beam.Reshuffle()
                | "Read" >> beam.ParDo(_ReadUnits(self._layout, self._batch_rows)))


class ReadNodeSet(beam.PTransform):
    """PCollection of NodeBatch for one node set that has a table."""

    def __init__(self, loaded: LoadedSchema, set_name: str, *,
                 batch_rows: int = DEFAULT_BATCH_ROWS):
        super().__init__()
        self._read = _ReadFiles(table_layout(loaded, "nodes", set_name),
                                table_files(loaded, "nodes", set_name), batch_rows)

    def expand(self, pbegin):
        return pbegin | self._read


class ReadEdgeSet(beam.PTransform):
    """PCollection of EdgeBatch for one edge set, oriented per the schema."""

    def __init__(self, loaded: LoadedSchema, set_name: str, *,
                 batch_rows: int = DEFAULT_BATCH_ROWS):
        super().__init__()
        self._read = _ReadFiles(table_layout(loaded, "edges", set_name),
                                table_files(loaded, "edges", set_name), batch_rows)

    def expand(self, pbegin):
        return pbegin | self._read


class ReadSeeds(beam.PTransform):
    """PCollection of SeedBatch from a seeds table (id column) or .txt file (one id a line).

    `pattern` may be sharded (`name@N`) or a glob; relative names resolve
    against `base_dir`.
    """

    def __init__(self, pattern: str, *, base_dir: str = ".",
                 batch_rows: int = DEFAULT_BATCH_ROWS):
        super().__init__()
        self._read = _ReadFiles(seeds_layout(), seed_files(pattern, base_dir), batch_rows)

    def expand(self, pbegin):
        return pbegin | self._read
