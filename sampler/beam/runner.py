"""Which Beam runner a job runs on, and its options.

Without `--runner`, Beam's FnApiRunner runs the job in-process, chosen
explicitly: Beam 2.77's DirectRunner first tries to download and start Prism,
which fails without network after a delay. Any `--runner` on the command line wins.
"""
from __future__ import annotations

import apache_beam as beam
from apache_beam.options.pipeline_options import (DirectOptions, PipelineOptions,
                                                  StandardOptions, TypeOptions)
from apache_beam.runners.portability.fn_api_runner import FnApiRunner


def make_pipeline(beam_args: list[str]) -> beam.Pipeline:
    options = PipelineOptions(beam_args)
    if not any(a.lstrip("-").startswith(("pipeline_type_check", "no_pipeline_type_check"))
               for a in beam_args):
        # Our elements are batches of numpy arrays, pickled; Beam's static type checks find
        # nothing to check here and cost about a second per run (construction and run).
        options.view_as(TypeOptions).pipeline_type_check = False
    if options.view_as(StandardOptions).runner:
        return beam.Pipeline(options=options)
    direct = options.view_as(DirectOptions)
    if not any(a.startswith("--direct_num_workers") for a in beam_args):
        direct.direct_num_workers = 1
    return beam.Pipeline(runner=FnApiRunner(), options=options)
