"""sampler.numpy_cpu: numpy's AVX2 sorts on AMD Zen 4, and only there."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from sampler import numpy_cpu
from tests.conftest import REPO_ROOT

ZEN4 = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 17
model name\t: AMD EPYC 9R14
flags\t\t: fpu sse2 avx2 avx512f avx512dq avx512bw avx512vl

processor\t: 1
vendor_id\t: AuthenticAMD
"""
ZEN3 = ZEN4.replace(" avx512f avx512dq avx512bw avx512vl", "")
ZEN5 = ZEN4.replace("cpu family\t: 25", "cpu family\t: 26")
INTEL = ZEN4.replace("AuthenticAMD", "GenuineIntel").replace("cpu family\t: 25",
                                                              "cpu family\t: 6")


@pytest.mark.parametrize("cpuinfo, expected", [
    (ZEN4, True), (ZEN3, False), (ZEN5, False), (INTEL, False), ("", False),
    ("vendor_id: AuthenticAMD\ncpu family: 25\n", False)])
def test_is_zen4(cpuinfo, expected):
    assert numpy_cpu.is_zen4(cpuinfo) is expected


@pytest.mark.parametrize("version, expected", [
    ("2.4.6", numpy_cpu.AVX512_TARGETS_SINCE_2_4), ("3.0.0", numpy_cpu.AVX512_TARGETS_SINCE_2_4),
    ("2.2.6", numpy_cpu.AVX512_TARGETS_BEFORE), ("1.26.4", numpy_cpu.AVX512_TARGETS_BEFORE)])
def test_targets_follow_numpys_names(version, expected):
    assert numpy_cpu.avx512_targets(version) == expected


def test_set_only_on_a_zen4_before_numpy_with_nothing_chosen():
    assert numpy_cpu.setting(ZEN4, "2.4.6", {}, False) == numpy_cpu.AVX512_TARGETS_SINCE_2_4
    assert numpy_cpu.setting(ZEN4, "2.4.6", {}, True) is None          # too late
    assert numpy_cpu.setting(ZEN3, "2.4.6", {}, False) is None
    assert numpy_cpu.setting(ZEN5, "2.4.6", {}, False) is None
    assert numpy_cpu.setting(INTEL, "2.4.6", {}, False) is None
    for chosen in ({"NPY_DISABLE_CPU_FEATURES": ""}, {"NPY_ENABLE_CPU_FEATURES": "AVX2"},
                   {numpy_cpu.OPT_OUT: "1"}):
        assert numpy_cpu.setting(ZEN4, "2.4.6", chosen, False) is None, chosen
    assert numpy_cpu.setting(ZEN4, "2.4.6", {numpy_cpu.OPT_OUT: "0"}, False) is not None


PROBE = """
import json, os, sys
{before}
import sampler
import numpy
try:
    from numpy._core._multiarray_umath import __cpu_features__
except ImportError:  # numpy 1.x
    from numpy.core._multiarray_umath import __cpu_features__
print(json.dumps([os.environ.get("NPY_DISABLE_CPU_FEATURES"), __cpu_features__["AVX512_SKX"]]))
"""


def _probe(before: str = "", **env) -> tuple:
    clean = {k: v for k, v in os.environ.items()
             if k not in (*numpy_cpu.NUMPY_VARIABLES, numpy_cpu.OPT_OUT)}
    done = subprocess.run([sys.executable, "-c", PROBE.format(before=before)], cwd=REPO_ROOT,
                          env={**clean, **env}, capture_output=True, text=True, check=True)
    assert "Warning" not in done.stderr, done.stderr  # numpy knew every name it was given
    return tuple(json.loads(done.stdout))


def test_import_sampler_sets_it_here_exactly_when_the_rule_says():
    """A real interpreter: `import sampler` first, as every command does."""
    expected = numpy_cpu.setting(numpy_cpu.read_cpuinfo(), numpy_cpu.numpy_version(), {}, False)
    value, avx512 = _probe()
    assert value == expected
    if expected is not None:
        assert avx512 is False  # numpy took it: its AVX-512 code is off
    assert _probe(**{numpy_cpu.OPT_OUT: "1"})[0] is None
    assert _probe(before="import numpy")[0] is None  # numpy imported first: left alone


def test_the_hint_names_the_variable_only_where_it_would_help(monkeypatch):
    monkeypatch.delenv("NPY_DISABLE_CPU_FEATURES", raising=False)
    monkeypatch.delenv("NPY_ENABLE_CPU_FEATURES", raising=False)
    monkeypatch.delenv(numpy_cpu.OPT_OUT, raising=False)
    monkeypatch.setattr(numpy_cpu, "read_cpuinfo", lambda: ZEN4)
    assert "NPY_DISABLE_CPU_FEATURES=" in numpy_cpu.sort_hint()
    monkeypatch.setenv(numpy_cpu.OPT_OUT, "1")
    assert numpy_cpu.sort_hint() is None
    monkeypatch.delenv(numpy_cpu.OPT_OUT)
    monkeypatch.setattr(numpy_cpu, "read_cpuinfo", lambda: INTEL)
    assert numpy_cpu.sort_hint() is None


def test_the_commands_write_the_same_bytes_with_either_sort(tmp_path):
    """`sample` as a user runs it (numpy's AVX2 sort on a Zen 4), and again with numpy's
    AVX-512 code kept: byte-identical files. On other CPUs both runs take numpy's own
    choice, and the test checks only that a run is reproducible."""
    from pipelines.bench.benchmark import ensure_graph
    from tests.pipelines.sampled_output import read_records

    folder, manifest = ensure_graph(str(tmp_path / "cache"), scale=0.003, seed=0,
                                    fmt="parquet", shards=1, hub_edges=0, log=lambda *a: None)
    clean = {k: v for k, v in os.environ.items()
             if k not in (*numpy_cpu.NUMPY_VARIABLES, numpy_cpu.OPT_OUT)}
    outputs = []
    for keep_avx512 in (False, True):
        output = tmp_path / f"out-{keep_avx512}"
        env = dict(clean, **({numpy_cpu.OPT_OUT: "1"} if keep_avx512 else {}))
        subprocess.run([sys.executable, "-m", "pipelines.sample", "--graph", folder,
                        "--spec", os.path.join(folder, "sampling_spec.pbtxt"),
                        "--seeds", os.path.join(folder, manifest["seeds"]["all"]),
                        "--output", str(output), "--engine", "memory", "--quiet"],
                       cwd=REPO_ROOT, env=env, check=True)
        outputs.append(read_records(str(output)))
    assert outputs[0] and outputs[0] == outputs[1]
