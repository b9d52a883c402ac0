"""Runs a checked sampling job: prepares the output, runs an engine, writes the
schema and the report beside the records.

This is the driver every engine shares; the engine (today the Beam pipeline,
sampler/beam/) only moves data between the pure core's steps.
"""
from __future__ import annotations

import json
import logging
import time

from sampler.job.job import DEFAULT_SHARDS, SamplingJob, choose_node_buckets
from sampler.job.progress import enable_console
from sampler.output.files import (REPORT_FILE, SCHEMA_FILE, parse_output, prepare_folder,
                                  write_text)
from sampler.output.report import format_report
from sampler.output.schema import sampled_schema, schema_text
from sampler.plan.plan import Plan
from unigraph import bigquery, paths
from unigraph.errors import SamplerError
from unigraph.schema import LoadedSchema


def run_sampling(loaded: LoadedSchema, plan: Plan, *, seeds: str | None, output: str, seed: int,
                 node_buckets: int | None, beam_args: list[str], verbose: bool = True) -> dict:
    from sampler.beam.pipeline import SampleSubgraphs  # Beam loads only when it runs
    from sampler.beam.runner import make_pipeline

    started = time.time()
    spec = parse_output(output)
    if seeds and not bigquery.is_uri(seeds) and not paths.exists(seeds):
        raise SamplerError(f"--seeds {seeds}: no such file")
    stale = prepare_folder(spec)
    stats_path = spec.beside(f".{REPORT_FILE}.partial")
    job = SamplingJob(loaded=loaded, plan=plan, seeds_path=seeds, output=spec,
                      num_shards=spec.num_shards or DEFAULT_SHARDS,
                      node_buckets=node_buckets or choose_node_buckets(loaded, plan), seed=seed,
                      stats_path=stats_path)
    logging.getLogger("apache_beam").setLevel(logging.WARNING)
    # A bad-input error raised in a DoFn reaches the user as one line (the CLI prints the
    # SamplerError); Beam would log its traceback first. Other errors still propagate
    # with their traceback.
    logging.getLogger("apache_beam.runners.common").setLevel(logging.CRITICAL)
    enable_console(verbose)
    if verbose:
        print(f"sampling {len(plan.ops)} op(s) into {job.num_shards} shard(s) with "
              f"{job.node_buckets} node buckets; progress follows", flush=True)
    pipeline = make_pipeline(beam_args)
    _ = pipeline | "Sample" >> SampleSubgraphs(job)
    result = pipeline.run()
    result.wait_until_finish()
    with paths.open_binary(stats_path) as f:
        report = json.loads(f.read().decode("utf-8"))
    paths.delete(stats_path)
    write_text(spec.beside(SCHEMA_FILE), schema_text(sampled_schema(loaded.schema, plan)))
    report.update({
        "output_shards": [spec.shard_path(i, job.num_shards) for i in range(job.num_shards)],
        "output_schema": spec.beside(SCHEMA_FILE),
        "seed": seed, "node_buckets": job.node_buckets,
        "stale_shards_deleted": len(stale),
        "wall_time_s": round(time.time() - started, 3),
    })
    report_path = spec.beside(REPORT_FILE)
    write_text(report_path, json.dumps(report, indent=2))
    if verbose:
        print(format_report(report))
        print(f"output: {job.num_shards} shard(s) {spec.shard_glob()}")
        print(f"schema: {spec.beside(SCHEMA_FILE)}")
    print(f"report: {report_path}")
    return report
