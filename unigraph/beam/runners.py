"""Which Beam runner a pipeline runs on, where the pipeline's shape depends on it."""
from __future__ import annotations

from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions

DASK_RUNNER = "apache_beam.runners.dask.dask_runner.DaskRunner"


def on_dask(options: PipelineOptions) -> bool:
    """Whether the pipeline runs on Beam's released DaskRunner (sampler.beam.runner names
    it in full). That runner keeps every ParDo's outputs referenced for as long as a
    worker keeps the task, so a step that only re-shapes data costs worker memory there."""
    return options.view_as(StandardOptions).runner == DASK_RUNNER
