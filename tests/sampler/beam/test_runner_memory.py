"""The in-process runner's process reuses freed memory instead of faulting in fresh pages."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

_PROBE = """
import resource, sys
from sampler.beam.runner import reuse_freed_memory
applied = reuse_freed_memory() if sys.argv[1] == "reuse" else False
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
block = b"\x01" * (200 << 20)  # a stage's data, as the runner copies it (written)
del block
before = faults()
for _ in range(5):
    block = b"\x01" * (200 << 20)
    del block
print(applied, faults() - before)
"""


def _faults(mode: str, env: dict | None = None) -> tuple[str, int]:
    done = subprocess.run([sys.executable, "-c", _PROBE, mode], capture_output=True, text=True,
                          timeout=120, check=True, env=env)
    applied, faults = done.stdout.split()
    return applied, int(faults)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc: Linux only")
def test_freed_blocks_are_reused_without_page_faults():
    applied, reused = _faults("reuse")
    if applied != "True":
        pytest.skip("not glibc: mallopt is not there to call")
    _, fresh = _faults("default")
    # 5 x 200 MB: about 256,000 pages faulted in afresh by default, none when reused.
    assert fresh > 100_000
    assert reused < 2_000


def test_a_users_malloc_tunables_win():
    env = {**os.environ, "GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1000000"}
    applied, _ = _faults("reuse", env)
    assert applied == "False"
