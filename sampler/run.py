"""Runs a checked sampling job on a Beam runner and writes the report and schema.

The default local runner is Beam's FnApiRunner, chosen explicitly: Beam 2.77's
DirectRunner first tries to download and start Prism, which fails here without
network after a delay. Any `--runner` given on the command line wins.
"""
from __future__ import annotations

import json
import logging
import os
import time

from sampler.output.files import (REPORT_FILE, SCHEMA_FILE, parse_output, prepare_folder,
                                  write_text)
from sampler.output.schema import sampled_schema, schema_text
from sampler.job.progress import enable_console
from sampler.output.report import format_report
from sampler.plan.spec import Plan
from unigraph import paths
from unigraph.errors import SamplerError
from unigraph.schema import LoadedSchema, table_files

DEFAULT_SHARDS = 4
MIN_NODE_BUCKETS, MAX_NODE_BUCKETS = 4, 4096
BYTES_PER_NODE_BUCKET = 32 << 20  # edge table bytes per bucket: heavy, bounded elements


def choose_node_buckets(loaded: LoadedSchema, plan: Plan) -> int:
    """More buckets for bigger graphs, so each join element stays a few tens of MB."""
    total = 0
    for name in plan.edge_sets():
        for path in table_files(loaded, "edges", name):
            if not paths.is_remote(path):
                total += os.path.getsize(path)
            else:
                from apache_beam.io.filesystems import FileSystems

                total += FileSystems.match([path])[0].metadata_list[0].size_in_bytes
    return max(MIN_NODE_BUCKETS, min(MAX_NODE_BUCKETS, total // BYTES_PER_NODE_BUCKET))


def make_pipeline(beam_args: list[str]):
    import apache_beam as beam
    from apache_beam.options.pipeline_options import (DirectOptions, PipelineOptions,
                                                      StandardOptions, TypeOptions)

    options = PipelineOptions(beam_args)
    if not any(a.lstrip("-").startswith(("pipeline_type_check", "no_pipeline_type_check"))
               for a in beam_args):
        # Our elements are batches of numpy arrays, pickled; Beam's static type checks find
        # nothing to check here and cost about a second per run (construction and run).
        options.view_as(TypeOptions).pipeline_type_check = False
    if options.view_as(StandardOptions).runner:
        return beam.Pipeline(options=options)
    from apache_beam.runners.portability.fn_api_runner import FnApiRunner

    direct = options.view_as(DirectOptions)
    if not any(a.startswith("--direct_num_workers") for a in beam_args):
        direct.direct_num_workers = 1
    return beam.Pipeline(runner=FnApiRunner(), options=options)


def run_sampling(loaded: LoadedSchema, plan: Plan, *, seeds: str | None, output: str, seed: int,
                 node_buckets: int | None, beam_args: list[str], verbose: bool = True) -> dict:
    from sampler.beam.pipeline import SampleSubgraphs, SamplingJob

    started = time.time()
    spec = parse_output(output)
    if seeds and not paths.exists(seeds):
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
    _delete(stats_path)
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


def _delete(path: str) -> None:
    if paths.is_remote(path):
        from apache_beam.io.filesystems import FileSystems

        FileSystems.delete([path])
    else:
        os.remove(path)
