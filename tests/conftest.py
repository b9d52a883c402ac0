"""Test-wide setup.

TF-GNN 1.0.3 imports only with tf-keras and TF_USE_LEGACY_KERAS=1 set before
TensorFlow is first imported, so it is set here, before any test module loads.
"""
import os
import sys

import pytest

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTDATA = os.path.join(REPO_ROOT, "tests", "testdata")
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)


@pytest.fixture(scope="session")
def bigquery_server(tmp_path_factory):
    """A bqemulator server for this test session (tests/bigquery_emulator.py)."""
    from tests.bigquery_emulator import Emulator

    emulator = Emulator(str(tmp_path_factory.mktemp("bqemulator") / "server.log"))
    try:
        yield emulator
    finally:
        emulator.stop()


@pytest.fixture
def bigquery(bigquery_server):
    """The emulator, with this test's environment pointed at it."""
    with bigquery_server.environment():
        yield bigquery_server
