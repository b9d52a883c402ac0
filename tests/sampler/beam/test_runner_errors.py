"""run_pipeline turns a Dask worker killed for good (KilledWorker) into one line."""
import types

import pytest

from sampler.beam.runner import killed_worker, run_pipeline
from unigraph.errors import SamplerError

distributed = pytest.importorskip("distributed")


class _Failing:
    """A pipeline whose run raises `error`, as the DaskRunner's wait_until_finish does."""

    def __init__(self, error):
        self.error = error

    def run(self):
        raise self.error


def _killed(task=("apply_dofn_to_bundle-shuffle-join-209dd1", 0, (12,))):
    worker = types.SimpleNamespace(address="tcp://127.0.0.1:45561")
    return distributed.KilledWorker(task, worker, 3)


def test_a_killed_worker_is_one_line_naming_the_task_and_the_memory_limit():
    with pytest.raises(SamplerError) as raised:
        run_pipeline(_Failing(_killed()))
    message = str(raised.value)
    assert "\n" not in message
    assert "apply_dofn_to_bundle-shuffle-join-209dd1" in message
    assert "memory limit" in message and "Memory on Dask" in message


def test_a_string_task_key_is_named_as_is():
    assert "the task read-abc" in killed_worker(_killed("read-abc"))


def test_other_errors_are_left_alone():
    assert killed_worker(ValueError("x")) is None
    with pytest.raises(ValueError):
        run_pipeline(_Failing(ValueError("a bug keeps its traceback")))
