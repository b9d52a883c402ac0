"""Beam transforms that read a unigraph: thin wiring around unigraph.tables.

    graph = pipeline | ReadUnigraph(loaded)            # {set name: PCollection of batches}
    seeds = pipeline | ReadSeeds("seeds.csv")          # PCollection of SeedBatch
    _ = graph | CheckUnigraph(loaded)                  # fails on duplicate ids, dangling edges

Each table becomes work units (a CSV/TFRecord/text file, or one Parquet row
group), spread over workers by Reshuffle and read by the pure readers into
batches of at most `batch_rows` rows, so Beam handles a few large elements
instead of one per row or cell. File lists are expanded when the transform is
constructed, so a missing file or a glob matching nothing fails before the
pipeline runs; Parquet files are split into row groups on the workers, so the
launcher reads no footers. Stage labels are stable:
`ReadUnigraph/Nodes/<set>/Read`, `ReadUnigraph/Edges/<set>/Read`, ...
"""
from __future__ import annotations

import apache_beam as beam

from unigraph import checks
from unigraph.errors import SchemaError
from unigraph.schema import LoadedSchema, set_names, table_files
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


class ReadUnigraph(beam.PTransform):
    """{set name: PCollection of batches} for every node set with a table and every edge set.

    Node sets without a table have no entry: their nodes are the ids their
    edges name. A name used by both a node set and an edge set is refused.
    """

    def __init__(self, loaded: LoadedSchema, *, batch_rows: int = DEFAULT_BATCH_ROWS):
        super().__init__()
        clash = sorted(set(loaded.schema.node_sets) & set(loaded.schema.edge_sets))
        if clash:
            raise SchemaError(f"graph schema {loaded.path}: '{clash[0]}' names both a node set "
                              f"and an edge set; ReadUnigraph keys its output by set name")
        self._loaded, self._batch_rows = loaded, batch_rows
        # Expand every file list now: missing tables fail before the pipeline runs.
        self._sets = [(kind, name, table_layout(loaded, kind, name),
                       table_files(loaded, kind, name)) for kind, name in set_names(loaded.schema)]

    def expand(self, pbegin):
        return {name: pbegin | f"{kind.capitalize()}/{name}" >> _ReadFiles(
                    layout, files, self._batch_rows)
                for kind, name, layout, files in self._sets}


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


class _Summary(beam.CombineFn):
    """checks.Summary of many per-bucket summaries."""

    def create_accumulator(self):
        return [], 0

    def add_input(self, accumulator, summary):
        return checks.merge_summaries([accumulator, summary])

    def merge_accumulators(self, accumulators):
        return checks.merge_summaries(accumulators)

    def extract_output(self, accumulator):
        return accumulator


def _fail_on_problems(summary, files):
    error = checks.failure(summary, files)
    if error is not None:
        raise error
    return summary


class CheckUnigraph(beam.PTransform):
    """Duplicate node ids and dangling edges across all files of ReadUnigraph's output.

    Input: the dict ReadUnigraph returns. Output: a PCollection with one
    checks.Summary (the smallest problems and their count). With `fail` (the
    default) a problem fails the pipeline with a one-line TableError naming the
    set, the id and its file and line/record/row; see unigraph.checks.
    """

    def __init__(self, loaded: LoadedSchema, *, buckets: int = checks.DEFAULT_BUCKETS,
                 fail: bool = True):
        super().__init__()
        self._loaded, self._buckets, self._fail = loaded, buckets, fail
        self._files = {name: table_files(loaded, kind, name)
                       for kind, name in set_names(loaded.schema)}

    def expand(self, graph):
        schema, buckets = self._loaded.schema, self._buckets
        pipeline = next(iter(graph.values())).pipeline
        node_buckets, summaries = {}, []
        for name, node_set in sorted(schema.node_sets.items()):
            if name not in graph or not node_set.metadata.filename:
                continue
            node_buckets[name] = graph[name] | f"Nodes/{name}/Bucket" >> beam.FlatMap(
                lambda batch: checks.split_by_bucket(batch.ids, batch.rows, buckets))
            summaries.append(
                node_buckets[name]
                | f"Nodes/{name}/Group" >> beam.GroupByKey()
                | f"Nodes/{name}/Duplicates" >> beam.Map(
                    lambda kv, name=name: checks.summarise(
                        checks.duplicate_problems(name, *checks.concat_parts(kv[1])))))
        for name, edge_set in sorted(schema.edge_sets.items()):
            if name not in graph:
                continue
            for end, node_set in (("source", edge_set.source), ("target", edge_set.target)):
                if node_set not in node_buckets:
                    continue  # a node set without a table has every id its edges name
                label = f"Edges/{name}/{end.capitalize()}"
                ends = graph[name] | f"{label}/Bucket" >> beam.FlatMap(
                    lambda batch, end=end: checks.split_by_bucket(
                        batch.sources if end == "source" else batch.targets, batch.rows,
                        buckets))
                summaries.append(
                    {"ends": ends, "nodes": node_buckets[node_set]}
                    | f"{label}/Join" >> beam.CoGroupByKey()
                    | f"{label}/Dangling" >> beam.Map(
                        lambda kv, name=name, end=end, node_set=node_set: checks.summarise(
                            checks.dangling_problems(
                                name, end, node_set, *checks.concat_parts(kv[1]["ends"]),
                                checks.concat_parts(kv[1]["nodes"])[0]))))
        if not summaries:
            return pipeline | "NothingToCheck" >> beam.Create([([], 0)])
        summary = (summaries | "AllSummaries" >> beam.Flatten()
                   | "Summarise" >> beam.CombineGlobally(_Summary()))
        if self._fail:
            summary = summary | "FailOnProblems" >> beam.Map(_fail_on_problems, self._files)
        return summary
