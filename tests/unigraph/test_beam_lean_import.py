"""unigraph.beam imports Beam without its unused connectors, and leaves them importable."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from unigraph.beam.lean_import import OPTIONAL

_PROBE = """
import json, sys
import unigraph.beam
skipped = [m for m in {names!r} if m in sys.modules]
import apache_beam.io.gcp.gcsfilesystem
from apache_beam.io.filesystems import FileSystems
gcs = type(FileSystems.get_filesystem("gs://bucket/x")).__name__
try:
    import pandas
    pandas_later = True
except ImportError:
    pandas_later = None
print(json.dumps({{"loaded": skipped, "gcs": gcs, "pandas_later": pandas_later}}))
"""


def _probe(env_extra: dict) -> tuple[dict, str]:
    env = {k: v for k, v in os.environ.items() if k != "SAMPLER_BEAM_FULL_IMPORT"}
    env.update(env_extra)
    done = subprocess.run([sys.executable, "-c", _PROBE.format(names=OPTIONAL)], env=env,
                          capture_output=True, text=True, timeout=120, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def test_beam_is_imported_without_the_optional_connectors_which_stay_importable():
    result, stderr = _probe({})
    assert result["loaded"] == []
    # Imported afterwards as usual: the GCS file system registers itself on import.
    assert result["gcs"] == "GCSFileSystem"
    try:
        import pandas  # noqa: F401
        assert result["pandas_later"] is True
    except ImportError:
        pass
    assert "bson" not in stderr  # mongodbio's warning about its missing driver is kept quiet


def test_the_full_import_is_one_variable_away():
    pytest.importorskip("pandas")
    result, _ = _probe({"SAMPLER_BEAM_FULL_IMPORT": "1"})
    assert "pandas" in result["loaded"] and "apache_beam.io.gcp.bigquery" in result["loaded"]


def test_the_dataflow_runner_gets_its_api_client_back():
    probe = ("import unigraph.beam\n"
             "from apache_beam.runners.dataflow import dataflow_runner as d\n"
             "left_out = d.dataflow_api is None\n"
             "from unigraph.beam.lean_import import with_dataflow_client\n"
             "with_dataflow_client()\n"
             "print(left_out, d.dataflow_api.JobState.JOB_STATE_DONE.name)\n")
    env = {k: v for k, v in os.environ.items() if k != "SAMPLER_BEAM_FULL_IMPORT"}
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                          text=True, timeout=120, check=True)
    assert done.stdout.split() == ["True", "JOB_STATE_DONE"]
