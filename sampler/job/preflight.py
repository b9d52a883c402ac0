"""Checks a run must pass before anything is written: where the output may go, and
whether there are seeds at all. Each failure is one line naming the paths involved.
"""
from __future__ import annotations

from sampler.output.files import OutputSpec
from sampler.plan.plan import Plan, edge_sets_to_read
from unigraph.storage import paths
from unigraph.errors import SamplerError
from unigraph.schema import LoadedSchema, bigquery_source, has_table, table_files
from unigraph.tables import (TableLayout, WorkUnit, read_pair_set, read_seed_set, read_unit,
                             seeds_layout, table_layout)


def input_paths(loaded: LoadedSchema, plan: Plan, spec_path: str,
                seeds: list[str]) -> list[tuple[str, str]]:
    """(what, path) of everything the run reads: schema, spec, seeds and every table file
    (BigQuery tables are no paths)."""
    found = [("the graph schema", loaded.path), ("the sampling spec", spec_path)]
    found += [("the seeds", path) for path in seeds]
    if loaded.store is not None:  # its folder (the schema's) holds everything it reads
        return found
    tables = [("nodes", name) for name in plan.node_sets()
              if has_table(loaded.schema.node_sets[name].metadata)]
    tables += [("edges", name) for name in edge_sets_to_read(plan, loaded.schema)]
    for kind, name in tables:
        if bigquery_source(loaded, kind, name) is None:
            found += [(f"{kind[:-1]} set '{name}'", p) for p in table_files(loaded, kind, name)]
    return found


def check_output_location(output: str, final: OutputSpec, loaded: LoadedSchema,
                          inputs: list[tuple[str, str]]) -> None:
    """The output folder must not be, lie inside or contain the graph's folder (where its
    schema is, and where its tables are read from), nor contain any input file."""
    folder = final.folder
    # The schema's folder wins the name when the tables are in it too.
    graph_folders = {paths.absolute(loaded.folder): "the graph's data folder",
                     paths.absolute(paths.dirname(loaded.path)): "the graph's folder"}
    for graph_folder, what in graph_folders.items():
        if paths.is_within(folder, graph_folder) or paths.is_within(graph_folder, folder):
            relation = ("is" if paths.absolute(folder) == graph_folder else
                        "lies inside" if paths.is_within(folder, graph_folder) else "contains")
            raise SamplerError(f"--output {output}: its folder {folder} {relation} {what} "
                               f"{graph_folder}; write the output somewhere else")
    for what, path in inputs:
        if paths.is_within(path, folder):
            raise SamplerError(f"--output {output}: its folder {folder} holds an input file, "
                               f"{what}: {path}; write the output somewhere else")


def check_seeds(files: list[str], *, what: str, layout: TableLayout | None = None) -> None:
    """At least one seed row in `files` (read until the first row is found). An empty
    file is an error of its own (TableError from the reader, naming the file). `layout`:
    the seeds' (default) or a pairs table's (link seeds), whose columns are checked too."""
    for index, path in enumerate(files):
        if next(iter(read_unit(layout or seeds_layout(), WorkUnit(path, index),
                               batch_rows=1)), None):
            return
    raise SamplerError(f"{what}: no seed rows ({len(files)} file(s) with a header or "
                       f"nothing but blank lines); there is nothing to sample")


def check_bigquery_seeds(uri: str, *, what: str, layout: TableLayout | None = None) -> None:
    """At least one seed row in a BigQuery seeds table (its session, up to the first row)."""
    batches = (read_seed_set(uri, batch_rows=1) if layout is None
               else read_pair_set(layout, uri, batch_rows=1))
    try:
        if next(iter(batches), None) is not None:
            return
    finally:
        batches.close()
    raise SamplerError(f"{what}: no seed rows in the table; there is nothing to sample")


def check_seed_set_has_nodes(loaded: LoadedSchema, plan: Plan) -> None:
    """Without --seeds every node of the seed set is a seed: its table needs a row."""
    name = plan.seed_set
    metadata = loaded.schema.node_sets[name].metadata
    if not has_table(metadata):
        # Its nodes are the ids its edges name: it has none if no edge set names it.
        if not any(name in (e.source, e.target) for e in loaded.schema.edge_sets.values()):
            raise SamplerError(f"node set '{name}' (the seed op's) has no table and no edge "
                               f"set names it, so it has no nodes and there are no seeds")
        return
    if loaded.store is not None:
        if loaded.store.manifest["nodes"][name]["table_rows"] == 0:
            raise SamplerError(f"node set '{name}' (the seed op's) had no rows in its table "
                               f"when the store was prepared, so there are no seeds; give "
                               f"--seeds")
        return
    if not metadata.filename:
        # A BigQuery table (or query, which would run twice) is counted when it is read.
        return
    layout = table_layout(loaded, "nodes", name)
    for index, path in enumerate(table_files(loaded, "nodes", name)):
        if next(iter(read_unit(layout, WorkUnit(path, index), batch_rows=1)), None):
            return
    raise SamplerError(f"node set '{name}' (the seed op's) has no rows in its table, so "
                       f"there are no seeds; give --seeds or fill the table")
