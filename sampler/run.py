"""Runs a checked sampling job end to end, without ever losing the user's data.

1. Preflight (job/preflight.py): the output may not touch the inputs, and there must
   be seeds. Nothing is written before these pass.
2. `output.commit.begin`: the output folder is locked, proven writable, and a staging
   folder inside it receives everything the run writes.
3. An engine samples and writes the shards into the staging folder: the in-memory
   engine (sampler/memory/) where the graph fits in this machine's memory, else the
   Beam pipeline (sampler/beam/); both write the same bytes. The driver adds the
   schema and the report.
4. `output.commit.commit` moves them into place. Any failure, Ctrl-C or kill before
   that leaves the previous output as it was (`abort` drops the staging folder).

Features (sampler.features, docs/features.md): what the run's feature spec needs from
the graph (vocabularies, statistics) is computed once, from the loaded graph (memory
engine) or the tables (Beam), and written to features/ with the records, committed
with them.
"""
from __future__ import annotations

import errno
import json
import logging
import time
from typing import Callable

from sampler.core.stats import RunStats
from sampler.core.long_rows import CHUNK_EDGES
from sampler.features.encoder import FEATURES_FOLDER, FeatureEncoder
from sampler.features.fit import needs_fitting
from sampler.features.spec import FeatureSpec, resolve
from sampler.features.spec_text import SPEC_FILE as FEATURE_SPEC_FILE
from sampler.job.job import SamplingJob, choose_node_buckets, epoch_seed
from sampler.job.sizing import numbering_keys, output_shards
from sampler.job.preflight import (check_bigquery_seeds, check_output_location,
                                   check_seed_set_has_nodes, check_seeds, input_paths)
from sampler.job.progress import SeedBar, beam_progress, end_beam_progress
from sampler.job.resources import available_memory, cores, memory_needed
from sampler.memory.engine import run_in_memory
from sampler.output.commit import abort, begin, commit
from sampler.output.files import REPORT_FILE, SCHEMA_FILE, parse_output, write_text
from sampler.output.report import format_report
from sampler.output.schema import sampled_schema, schema_text
from sampler.plan.plan import Plan, pairs_table_layout
from sampler.plan.timing import describe_time_plan, time_plan
from unigraph.storage import bigquery, paths
from unigraph.errors import SamplerError, one_line, printable
from unigraph.columnar.batches import describe_row
from unigraph.schema import LoadedSchema, bigquery_source, table_files
from unigraph.tables import seed_files

STATS_FILE = ".run_stats.json"  # the Beam engine's merged counts, in the staging folder
_FULL = (errno.ENOSPC, errno.EDQUOT)  # the output's filesystem is full or over quota
MEMORY_SHARE = 0.7  # the in-memory engine is the default when its estimate fits in this


class NothingSampled(SamplerError):
    """The run worked, but no seed was found in the graph: no output was written."""

    def __init__(self, message: str, report: dict):
        super().__init__(message)
        self.report = report


def choose_engine(requested: str, beam_args: list[str], loaded: LoadedSchema,
                  plan: Plan) -> tuple[str, str]:
    """(engine, why): `requested` unless it is "auto"; then memory when no Beam option is
    given and the graph fits in the memory available, else beam."""
    if loaded.store is not None and (requested == "beam" or beam_args):
        raise SamplerError(f"graph store {loaded.store.folder}: only the memory engine reads a "
                           f"store (it maps its arrays); give the tables' schema to run on Beam"
                           + (f" (Beam options were given: {beam_args[0]} ...)" if beam_args
                              else ""))
    if loaded.store is not None and requested == "auto":
        return "memory", "a graph store, mapped"
    if requested == "memory" and beam_args:
        raise SamplerError(f"--engine memory runs without Beam, so Beam pipeline options "
                           f"({beam_args[0]} ...) do not apply; use --engine beam")
    if requested != "auto":
        return requested, "--engine " + requested
    if beam_args:
        return "beam", f"Beam pipeline options were given ({beam_args[0]} ...)"
    needed, available = memory_needed(loaded, plan), available_memory()
    gb = 1 << 30
    if available is None or needed <= MEMORY_SHARE * available:
        room = f", {available / gb:.1f} GB available" if available else ""
        return "memory", f"the graph needs about {needed / gb:.1f} GB in memory{room}"
    return "beam", (f"the graph needs about {needed / gb:.1f} GB in memory, more than "
                    f"{MEMORY_SHARE:.0%} of the {available / gb:.1f} GB available")


def run_sampling(loaded: LoadedSchema, plan: Plan, *, spec_path: str, seeds: str | None,
                 output: str, seed: int, node_buckets: int | None, beam_args: list[str],
                 epoch: int = 0,
                 chunk_edges: int = CHUNK_EDGES,
                 engine: str = "auto", workers: int | None = None, overwrite: bool = False,
                 verbose: bool = True, say: Callable[[str], None] = print,
                 features: FeatureSpec | None = None, features_given: bool = False) -> dict:
    """Samples, writes and commits; returns the report. SamplerError (one line) for every
    problem of input or environment; NothingSampled if no seed was found. `epoch` > 0
    draws that epoch's subgraphs (job.epoch_seed), as sampler.api does. `features`: the
    feature spec whose fitted form goes to features/ (None: none), written when the
    user gave it (`features_given`) or it needs anything from the graph."""
    started = time.time()
    draws_seed = epoch_seed(seed, epoch)
    engine, why = choose_engine(engine, beam_args, loaded, plan)
    say(f"engine: {engine} ({why})")
    final = parse_output(output)
    seeds_in_bigquery = bool(seeds) and bigquery.is_uri(seeds)
    seeds_list = seed_files(seeds) if seeds and not seeds_in_bigquery else []
    inputs = input_paths(loaded, plan, spec_path, seeds_list)
    if features_given and features is not None and features.source:
        inputs.append(("the feature spec", features.source))
    check_output_location(output, final, loaded, inputs)
    layout = pairs_table_layout(plan, loaded.schema) if plan.link else None
    if plan.link and not seeds:
        raise SamplerError(f"the spec seeds with pairs (symmetric_link_seed_op '{plan.seed_op}'): "
                           f"give --seeds, a table with source and target columns")
    if seeds_in_bigquery:
        check_bigquery_seeds(seeds, what=f"--seeds {seeds}", layout=layout)
    elif seeds:
        check_seeds(seeds_list, what=f"--seeds {seeds}", layout=layout)
    else:
        check_seed_set_has_nodes(loaded, plan)
    timing = time_plan(loaded, plan, seeds)
    if timing is not None and verbose:
        say(describe_time_plan(timing))
    # Shards of about 200 MB for the output this job should write (job/sizing.py).
    num_shards = final.num_shards or output_shards(loaded, plan, seeds_list)
    buckets = node_buckets or choose_node_buckets(loaded, plan)
    if engine == "beam" and _beam_dry_run(beam_args):
        return _build_only(SamplingJob(loaded=loaded, plan=plan, seeds_path=seeds,
                                       output=final, num_shards=num_shards,
                                       node_buckets=buckets, seed=draws_seed,
                                       stats_path=final.beside(STATS_FILE), time=timing,
                                       chunk_edges=chunk_edges,
                                       numbering_keys=numbering_keys(
                                           loaded, plan, seeds_list, buckets)),
                           beam_args, say)
    staging = begin(final, overwrite=overwrite, log=say if verbose else lambda m: None)
    try:
        stats_path = paths.join(staging.folder, STATS_FILE)
        job = SamplingJob(loaded=loaded, plan=plan, seeds_path=seeds, output=staging.staged,
                          num_shards=num_shards, node_buckets=buckets, seed=draws_seed,
                          stats_path=stats_path, time=timing, chunk_edges=chunk_edges,
                          numbering_keys=(numbering_keys(loaded, plan, seeds_list, buckets)
                                          if engine == "beam" else 0))
        output_schema = sampled_schema(loaded.schema, plan, job.seed_timestamp_dtype)
        resolved = (resolve(features, output_schema, strict=False) if features is not None
                    else None)
        write_features = resolved is not None and (features_given or needs_fitting(resolved))
        fitted: list[FeatureEncoder] = []

        def fit_loaded(graph) -> None:
            if write_features:
                fitted.append(FeatureEncoder.fit_loaded(resolved, graph.node_tables,
                                                        graph.adjacency, features))

        if engine == "memory":
            stats, graph_bytes = _run_memory(job, workers or cores(), verbose, say, fit_loaded)
            stats = stats.as_dict()
        else:
            if verbose:
                say(f"sampling {len(plan.ops)} op(s) into {num_shards} shard(s) with "
                    f"{buckets} node buckets; progress follows")
            shuffled = _run_beam(job, beam_args, verbose)[1]
            with paths.open_binary(stats_path) as f:
                stats = json.loads(f.read().decode("utf-8"))
            paths.delete(stats_path)
            if write_features:  # the sets that need it read once more, here
                fitted.append(FeatureEncoder.from_tables(loaded, resolved, features))
        report = _in_plan_order(stats, plan)
        report["dangling_edge_examples"] = _name_rows(report["dangling_edge_examples"],
                                                      loaded)
        shard_names = final.shard_names(num_shards)
        if timing is not None:
            report["time"] = {
                "seed_cutoff_column": timing.seed_column.name if timing.has_cutoffs else None,
                "time_type": timing.dtype,
                "time_ordered_edge_sets": list(timing.ordered_edge_sets)}
            if plan.negatives and timing.has_cutoffs:  # whose node times gate negatives
                report["time"]["negative_target_times"] = timing.negative_target_set
        report.update({"output_shards": shard_names, "output_schema": SCHEMA_FILE,
                       "seed": seed, "epoch": epoch, "engine": engine,
                       "wall_time_s": round(time.time() - started, 3)})
        if engine == "beam":
            report["node_buckets"] = buckets
            if shuffled is not None:  # what its GroupByKeys moved (unigraph.beam.shuffle)
                report["shuffled"] = shuffled
        else:
            report["graph_in_memory_mb"] = round(graph_bytes / 1e6, 1)
        if not report["seeds_read"]:
            raise SamplerError("the seeds table(s) held no seed rows; nothing to sample")
        if not report["subgraphs_written"] and plan.link:
            raise NothingSampled(
                f"none of the {report.get('pairs_read', 0)} pairs has both endpoints in node "
                f"set '{plan.seed_set}' (first missing: "
                f"{', '.join(report['missing_seed_ids'][:3])}); nothing written", report)
        if not report["subgraphs_written"]:
            raise NothingSampled(
                f"none of the {report['seeds_read']} seeds is a node of node set "
                f"'{plan.seed_set}' (first missing: "
                f"{', '.join(report['missing_seed_ids'][:3])}); nothing written", report)
        feature_files = []
        if fitted:
            feature_files = [f"{FEATURES_FOLDER}/{name}" for name in
                             fitted[0].save(paths.join(staging.folder, FEATURES_FOLDER))]
            report["feature_files"] = feature_files
        write_text(staging.staged.beside(SCHEMA_FILE), schema_text(output_schema))
        write_text(staging.staged.beside(REPORT_FILE), json.dumps(report, indent=2))
        commit(staging, shard_names, feature_files)
    except OSError as e:
        abort(staging)
        if e.errno in _FULL:
            raise SamplerError(f"--output {final.folder}: no room for the output "
                               f"({one_line(e)}); the previous output is kept") from None
        raise
    except BaseException:
        abort(staging)
        raise
    if verbose:
        say(printable(format_report(report), keep="\n"))
        say(f"output: {num_shards} shard(s) {final.shard_path(0, num_shards)} ...")
        say(f"schema: {final.beside(SCHEMA_FILE)}")
        if report.get("feature_files"):
            say(f"features: {final.beside(FEATURES_FOLDER + '/' + FEATURE_SPEC_FILE)} "
                f"({_vocabularies(len(report['feature_files']) - 1)})")
    say(f"report: {final.beside(REPORT_FILE)}")
    return report


def _run_memory(job: SamplingJob, workers: int, verbose: bool,
                say: Callable[[str], None],
                on_loaded: Callable = lambda graph: None) -> tuple[RunStats, int]:
    """The merged counts and the bytes of the loaded graph's arrays."""
    bar = SeedBar(verbose)
    graph_bytes = 0

    def start(seeds: int, loaded_bytes: int, processes: int) -> None:
        nonlocal graph_bytes
        graph_bytes = loaded_bytes
        if processes < min(workers, job.num_shards):
            say("sampling in this one process: gRPC is loaded here (Beam or the BigQuery "
                "client ran in it), and processes forked after it can hang")
        if verbose:
            say(f"sampling {len(job.plan.ops)} op(s) into {job.num_shards} shard(s) with "
                f"{processes} worker process(es), graph loaded ({loaded_bytes / 1e6:,.0f} MB)")
        bar.start(seeds)

    try:
        return run_in_memory(job, workers=workers, on_start=start, on_loaded=on_loaded,
                             on_progress=bar.advance), graph_bytes
    finally:
        bar.close()


def _beam_dry_run(beam_args: list[str]) -> bool:
    from sampler.beam.runner import is_dry_run

    return is_dry_run(beam_args)


def _build_only(job: SamplingJob, beam_args: list[str], say: Callable[[str], None]) -> dict:
    """Beam's --dry_run: the runner builds the job (Dataflow: the complete job, its code
    staged) and runs nothing. The output folder is never touched, no report is read; the
    job description is written where one line says."""
    from sampler.beam.runner import write_job_description

    result = _run_beam(job, beam_args, verbose=False)[0]
    if getattr(result, "job", None) is None:  # a runner without a job description
        say("dry run: the pipeline was built and not run; nothing written")
        return {"dry_run": True, "job_description": None}
    where, steps, requirements = write_job_description(result, beam_args)
    say(f"dry run: job description ({steps} steps) written to {where}; nothing submitted, "
        f"no output written")
    if requirements is not None:
        say(f"the workers install the staged package and its {len(requirements)} "
            f"requirement(s): {', '.join(requirements)}")
    return {"dry_run": True, "job_description": where, "steps": steps,
            "worker_requirements": requirements}


def _run_beam(job: SamplingJob, beam_args: list[str], verbose: bool):
    """(Beam's result, the bytes its GroupByKeys shuffled or None: unigraph.beam.shuffle)."""
    # Beam loads only when this engine runs: a dry run or a refused run never pays for it.
    from sampler.beam.pipeline import SampleSubgraphs
    from sampler.beam.runner import is_dry_run, make_pipeline, run_pipeline
    from unigraph.beam.shuffle import shuffled

    logging.getLogger("apache_beam").setLevel(logging.WARNING)
    # A bad-input error raised in a DoFn reaches the user as one line (run_pipeline turns
    # it into a SamplerError); Beam would log its traceback first. Other errors still
    # propagate with their traceback.
    logging.getLogger("apache_beam.runners.common").setLevel(logging.CRITICAL)
    bar = beam_progress(verbose, job.num_shards)
    try:
        pipeline = make_pipeline(beam_args)
        _ = pipeline | "Sample" >> SampleSubgraphs(job)
        result = run_pipeline(pipeline)
        return result, None if is_dry_run(beam_args) else shuffled(result)
    finally:
        end_beam_progress(bar)


def _name_rows(examples: list, loaded: LoadedSchema) -> list[dict]:
    """Dropped edges with the file and row (0-based, data rows only) they come from."""
    named = []
    for edge_set, source, target, row_id in examples:
        facts = loaded.store.table("edges", edge_set) if loaded.store is not None else None
        table = bigquery_source(loaded, "edges", edge_set) if facts is None else None
        if table is not None or (facts is not None and facts.format == "bigquery"):
            # No row order: the row is known by its content's hash.
            named.append({"edge_set": edge_set, "source": source, "target": target,
                          "file": table.name if table is not None else facts.locations[0],
                          "row": None,
                          "row_hash": f"{int(row_id) & (2**64 - 1):016x}"})
            continue
        file_index, row = describe_row(row_id)
        files = (list(facts.locations) if facts is not None
                 else table_files(loaded, "edges", edge_set))
        named.append({"edge_set": edge_set, "source": source, "target": target,
                      "file": files[file_index] if file_index < len(files) else None,
                      "row": row})
    return named


def _in_plan_order(report: dict, plan: Plan) -> dict:
    """Per-op counts in spec order, whatever order the workers merged them in; induced
    edges for every edge set that gets them, 0 included (an engine reports a count only
    where it found candidates, which differs between engines)."""
    for key in ("edges_sampled_per_op", "draws_per_op", "draws_at_cap_per_op"):
        counts = report.get(key, {})
        report[key] = {op.name: counts.get(op.name, 0) for op in plan.ops}
    if plan.induced_edge_sets:
        counts = report.get("induced_edges", {})
        report["induced_edges"] = {name: counts.get(name, 0)
                                   for name in sorted(plan.induced_edge_sets)}
    return report


def _vocabularies(count: int) -> str:
    return f"{count} vocabular{'y' if count == 1 else 'ies'}"
