"""Which Beam runner a job runs on, its options, and running it.

Without `--runner`, Beam's FnApiRunner runs the job in-process, chosen
explicitly: Beam 2.77's DirectRunner first tries to download and start Prism,
which fails without network after a delay. Any `--runner` on the command line wins.
"""
from __future__ import annotations

import re
import traceback

import apache_beam as beam
from apache_beam.options.pipeline_options import (DirectOptions, PipelineOptions,
                                                  StandardOptions, TypeOptions)
from apache_beam.runners.portability.fn_api_runner import FnApiRunner

from unigraph.errors import SamplerError, one_line


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


# Errors of ours, and environment errors, as a worker process reports them: Beam wraps a
# DoFn's exception in its own, with the worker's traceback as text.
_WORKER_ERROR = re.compile(
    r"^\s*(?:[\w.]+\.)?(?P<kind>SamplerError|SchemaError|SpecError|TableError|GraphTensorError"
    r"|SamplesError|PermissionError|FileNotFoundError|IsADirectoryError|NotADirectoryError"
    r"|OSError): (?P<message>.+)$", re.M)
_STEP_SUFFIX = re.compile(r" \[while running '[^']*'\]$")


def run_pipeline(pipeline: beam.Pipeline) -> None:
    """Runs a pipeline to the end. A bad-input or environment error raised in a worker
    reaches the caller as one SamplerError line (not Beam's wrapped traceback); any other
    failure, a bug, keeps its traceback."""
    try:
        pipeline.run().wait_until_finish()
    except SamplerError as e:
        raise SamplerError(_STEP_SUFFIX.sub("", str(e))) from None
    except OSError as e:
        raise SamplerError(_STEP_SUFFIX.sub("", one_line(e))) from None
    except Exception as e:
        message = worker_error(e)
        if message is None:
            raise
        raise SamplerError(message) from None


def worker_error(error: BaseException) -> str | None:
    """The one-line message of the last SamplerError or OSError in `error`'s text."""
    text = "\n".join(traceback.format_exception(error))
    matches = list(_WORKER_ERROR.finditer(text))
    if not matches:
        return None
    return _STEP_SUFFIX.sub("", matches[-1]["message"].strip())
