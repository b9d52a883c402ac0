"""Test-wide setup.

TF-GNN 1.0.3 imports only with tf-keras and TF_USE_LEGACY_KERAS=1 set before
TensorFlow is first imported, so it is set here, before any test module loads.
Hypothesis runs without per-example deadlines (see below).
"""
import os
import signal
import sys

import pytest
from hypothesis import settings

# Hypothesis's per-example deadline (200 ms) measures the machine's load, not the code:
# on a shared 2-core machine a fast test missed it. Example counts stay the default;
# tests that need fewer or more say so with their own @settings.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")

os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def default_sigint() -> None:
    """A child's preexec_fn: Ctrl-C's SIGINT at its default, as a command started from a
    terminal has it. A suite started in the background of a script (`make test &`)
    inherits SIGINT ignored, Python then installs no handler, and a test that interrupts
    its child would find the child running on."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
TESTDATA = os.path.join(REPO_ROOT, "tests", "testdata")
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)


@pytest.fixture(scope="session")
def sampled_outputs(tmp_path_factory):
    """`sample` outputs of the small graphs, each made on first use, once per test
    process (read-only: copy one before changing it). demo and demo_seed7:
    examples/mag_tiny with two --seed values; topk: tests/testdata/topk (a missing,
    a duplicated and an edgeless seed); mixed: tests/testdata/unigraph/mixed (every
    kind of feature); link: examples/link_tiny's pairs with two negatives each."""
    from tests.pipelines.sampled_output import MIXED_SPEC, run_sample

    tmp = tmp_path_factory.mktemp("sampled_outputs")
    demo = os.path.join(REPO_ROOT, "examples", "mag_tiny")
    topk = os.path.join(TESTDATA, "topk")
    link = os.path.join(REPO_ROOT, "examples", "link_tiny")
    (tmp / "mixed_spec.pbtxt").write_text(MIXED_SPEC)
    demo_args = (demo, os.path.join(demo, "sampling_spec.pbtxt"),
                 "--seeds", os.path.join(demo, "seeds.csv"))
    recipes = {
        "demo": demo_args,
        "demo_seed7": demo_args + ("--seed", "7"),
        "topk": (topk, os.path.join(topk, "sampling_spec.pbtxt"),
                 "--seeds", os.path.join(topk, "seeds.csv")),
        "mixed": (os.path.join(TESTDATA, "unigraph", "mixed"), tmp / "mixed_spec.pbtxt"),
        "link": (link, os.path.join(link, "sampling_spec.pbtxt"),
                 "--seeds", os.path.join(link, "pairs.csv"), "--negatives", "2"),
    }

    class Outputs(dict):
        def __missing__(self, name):
            self[name] = run_sample(tmp / name, *recipes[name])
            return self[name]
    return Outputs()


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


@pytest.fixture(autouse=True)
def _one_memory_worker_unless_asked(monkeypatch):
    """`sample` in a test process runs the memory engine with one worker unless the test
    passes --workers. A test process may have run a Beam pipeline before (its gRPC and
    Arrow threads), and a fork of such a process can deadlock in the child (seen: a
    worker of test_sample_safety hung on a futex after Beam tests ran in its process).
    Worker counts are tested explicitly (--workers, or `sample` in a fresh process)."""
    import sampler.run
    monkeypatch.setattr(sampler.run, "cores", lambda: 1)
