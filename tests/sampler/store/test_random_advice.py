"""A store larger than the memory a job may use is mapped for random reads (issue 40):
each page a hop touches is read alone, not the device's read-ahead window around it.
The kernel shows the advice as the `rr` flag of the mapping (/proc/self/smaps)."""
import mmap
import os

import pytest

from pipelines import convert
from sampler import api
from sampler.store import mapped

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "mag_tiny")
pytestmark = pytest.mark.skipif(not (hasattr(mmap, "MADV_RANDOM")
                                     and os.path.exists("/proc/self/smaps")),
                                reason="needs madvise and /proc/self/smaps (Linux)")


@pytest.fixture
def store(tmp_path):  # a store of each test's own: another test's graph may stay mapped
    folder = str(tmp_path / "store")
    convert.prepare(EXAMPLE, folder, log=lambda line: None)
    return folder


def advice_of_mappings(folder):
    """{file: whether its mapping reads at random} for this process's mappings of
    the files under `folder`."""
    flags, path = {}, None
    with open("/proc/self/smaps") as f:
        for line in f:
            fields = line.split()
            if "-" in fields[0] and len(fields[0]) > 8 and fields[0][0] in "0123456789abcdef":
                path = fields[5] if len(fields) > 5 else None
            elif line.startswith("VmFlags:") and path and path.startswith(folder + os.sep):
                flags[os.path.relpath(path, folder)] = "rr" in fields[1:]
    return flags


@pytest.mark.parametrize("available,random", [(0, True), (1 << 50, False)])
def test_a_store_larger_than_memory_is_read_at_random(store, monkeypatch, available, random):
    monkeypatch.setattr(mapped, "available_memory", lambda: available)
    graph = api.load_graph(store, os.path.join(EXAMPLE, "sampling_spec.pbtxt"))
    advice = advice_of_mappings(os.path.realpath(store))
    assert advice and set(advice.values()) == {random}, advice
    assert any(name.endswith("canonical/target_codes.npy") for name in advice)
    # The same subgraphs either way (the advice changes no byte).
    assert len(graph.sample([b"p01"])) == 1
    del graph
