"""Importing Apache Beam without the connectors this project never uses.

`import apache_beam` runs `apache_beam.io`'s package file, which imports every
connector Beam ships: BigQuery, Pub/Sub and Cloud Storage clients (with their
credential and HTTP stacks), MongoDB's driver, and pandas where it is installed; and
`apache_beam.runners` imports Dataflow's API client. That is about 3 CPU-s per process, a fifth of a scale-0.01 job and the largest
fixed cost of the Beam engine (docs/engines.md, "Where the Beam engine's time
goes"). Beam itself treats each of them as optional: it imports them inside
`try: ... except ImportError`, and a base install of this project lacks pandas.

`import_beam()` imports Beam with OPTIONAL reported missing for the length of that
one import, so Beam skips them exactly as it does where they are not installed,
then removes its finder: a later `import pandas` or
`import apache_beam.io.gcp.gcsio` (the Dataflow runner staging to gs://, this
project's gs:// credentials) imports them as usual, and Beam's file systems
register themselves when their module is imported. What stays off in the
process: the names `apache_beam.io.ReadFromBigQuery`, `...WriteToPubSub` etc.
(import them from their modules), Beam's MongoDB connector, Beam's pandas batch
types (`apache_beam.dataframe` imports pandas itself), and the Dataflow runner's
API client until `with_dataflow_client()` (sampler.beam.runner calls it for
Dataflow jobs). If Beam was
imported before, nothing changes. SAMPLER_BEAM_FULL_IMPORT=1 imports all of it.
"""
from __future__ import annotations

import importlib.abc
import logging
import os
import sys

# runners/dataflow/dataflow_runner.py, as `dataflow_api` (None when missing); it reads
# job states with it, so a process that runs Dataflow jobs gets it back
# (with_dataflow_client).
DATAFLOW_CLIENT = "google.cloud.dataflow"
# Each is imported by Beam only inside a try/except ImportError (Beam 2.77):
# apache_beam/io/__init__.py (the BigQuery, Pub/Sub, GCS, cross-language block, cut at
# its first line), io/filesystems.py (GCS, S3, Azure file systems), io/mongodbio.py
# (pymongo and its bson), typehints/__init__.py (pandas), and DATAFLOW_CLIENT.
OPTIONAL = ("apache_beam.io.gcp.bigquery", "apache_beam.io.gcp.gcsfilesystem",
            "apache_beam.io.aws.s3filesystem", "apache_beam.io.azure.blobstoragefilesystem",
            "pymongo", "bson", "pandas", DATAFLOW_CLIENT)
# mongodbio logs a warning when its driver is missing; not news to anyone here.
_QUIET = ("apache_beam.io.mongodbio",)


class _Absent(importlib.abc.MetaPathFinder):
    """Reports the named modules (and their submodules) as not installed."""

    def __init__(self, names: tuple[str, ...]):
        self.names = names

    def find_spec(self, fullname, path, target=None):
        if any(fullname == n or fullname.startswith(n + ".") for n in self.names):
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return None


def import_beam():
    """The apache_beam module, imported without OPTIONAL if this process has not
    imported it yet (module docstring)."""
    if "apache_beam" in sys.modules or os.environ.get("SAMPLER_BEAM_FULL_IMPORT") == "1":
        import apache_beam
        return apache_beam
    finder = _Absent(OPTIONAL)
    loggers = [logging.getLogger(name) for name in _QUIET]
    disabled = [logger.disabled for logger in loggers]
    sys.meta_path.insert(0, finder)
    for logger in loggers:
        logger.disabled = True
    try:
        import apache_beam
    finally:
        sys.meta_path.remove(finder)
        for logger, was in zip(loggers, disabled):
            logger.disabled = was
    return apache_beam


def with_dataflow_client() -> None:
    """Gives Beam's Dataflow runner the Dataflow API client import_beam left out (it
    reads job states with it). Idempotent; nothing to do after a full import."""
    from apache_beam.runners.dataflow import dataflow_runner

    if dataflow_runner.dataflow_api is None:
        from google.cloud import dataflow

        dataflow_runner.dataflow_api = dataflow
