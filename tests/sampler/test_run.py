"""sampler.run.choose_engine: which engine a run gets, and why (the run's first line)."""
import pytest

from sampler import run
from sampler.run import MEMORY_SHARE, choose_engine
from tests.sampler.job.test_resources import MAG_TINY, loaded_and_plan
from unigraph.errors import SamplerError

GB = 1 << 30


@pytest.fixture
def mag_tiny():
    return loaded_and_plan(MAG_TINY)


def with_memory(monkeypatch, *, needed, available):
    monkeypatch.setattr(run, "memory_needed", lambda loaded, plan: needed)
    monkeypatch.setattr(run, "available_memory", lambda: available)


def test_memory_when_the_graph_fits(mag_tiny, monkeypatch):
    with_memory(monkeypatch, needed=2 * GB, available=10 * GB)
    engine, why = choose_engine("auto", [], *mag_tiny)
    assert engine == "memory"
    assert why == "the graph needs about 2.0 GB in memory, 10.0 GB available"


def test_beam_when_the_estimate_exceeds_the_share_of_available_memory(mag_tiny, monkeypatch):
    with_memory(monkeypatch, needed=int(MEMORY_SHARE * 10 * GB) + 1, available=10 * GB)
    engine, why = choose_engine("auto", [], *mag_tiny)
    assert engine == "beam"
    assert "more than 70% of the 10.0 GB available" in why


def test_memory_when_available_memory_is_unknown(mag_tiny, monkeypatch):
    with_memory(monkeypatch, needed=100 * GB, available=None)
    assert choose_engine("auto", [], *mag_tiny)[0] == "memory"


def test_beam_options_choose_beam(mag_tiny, monkeypatch):
    with_memory(monkeypatch, needed=1, available=10 * GB)
    assert choose_engine("auto", ["--runner", "DirectRunner"], *mag_tiny) == (
        "beam", "Beam pipeline options were given (--runner ...)")


@pytest.mark.parametrize("engine", ["memory", "beam"])
def test_an_explicit_engine_is_kept(engine, mag_tiny, monkeypatch):
    with_memory(monkeypatch, needed=100 * GB, available=1 * GB)
    assert choose_engine(engine, [], *mag_tiny) == (engine, "--engine " + engine)


def test_memory_engine_refuses_beam_options(mag_tiny):
    with pytest.raises(SamplerError, match=r"^--engine memory runs without Beam, so Beam "
                       r"pipeline options \(--direct_num_workers=2 \.\.\.\) do not apply"):
        choose_engine("memory", ["--direct_num_workers=2"], *mag_tiny)
