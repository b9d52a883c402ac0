"""numpy's sorts on AMD Zen 4: the AVX2 code, not the AVX-512 one.

numpy sorts integers with x86-simd-sort, and picks its AVX-512 code wherever the CPU has
AVX-512. On AMD Zen 4 (x86 family 25 with AVX-512) that code is several times slower
than numpy's own AVX2 code, because the compress-to-memory instruction its partition
step uses on every vector is microcoded there (numpy/numpy#32690 and the issues it
cites; Zen 5, family 26, fixed it). Measured here on a Zen 4 EPYC, numpy 2.4: 250,000
int64 sorted in 15.3 ms with AVX-512 and 4.8 ms with AVX2; sorting was a third of a
batch's CPU (sampler.core.arrays), and `benchmark --api --latency` measures a batch
with either sort (docs/performance.md). So the sampler asks numpy for its AVX2 code on
those CPUs.

numpy reads its CPU features once, when it is first imported, from the environment
variable NPY_DISABLE_CPU_FEATURES; `prefer_avx2_sort()` (run by `import sampler`, which
every command and `sampler.api` import before numpy) sets it only when all of these
hold, and otherwise changes nothing:
  - numpy is not imported yet (a notebook that imported numpy first keeps its numpy;
    `sort_hint()` says what to set, and sampler.api logs it);
  - the user set neither NPY_DISABLE_CPU_FEATURES nor NPY_ENABLE_CPU_FEATURES;
  - SAMPLER_NUMPY_AVX512 is not "1" (the way to keep AVX-512 on a Zen 4);
  - the CPU is a Zen 4: /proc/cpuinfo says AuthenticAMD, cpu family 25, avx512f.
The variable is inherited by the worker processes a run starts. Results do not depend
on it: numpy's sorts give the same values either way, and every argsort the sampler
relies on for order is stable or ties are broken by an explicit key.
"""
from __future__ import annotations

import os
import sys
from importlib import metadata
from typing import Mapping, Optional

OPT_OUT = "SAMPLER_NUMPY_AVX512"
NUMPY_VARIABLES = ("NPY_DISABLE_CPU_FEATURES", "NPY_ENABLE_CPU_FEATURES")
ZEN4_FAMILY = 25
# The names numpy dispatches its AVX-512 code under: grouped as X86_V4 from numpy 2.4,
# one name per feature before. Naming one numpy does not dispatch only warns.
AVX512_TARGETS_SINCE_2_4 = "X86_V4 AVX512_ICL AVX512_SPR"
AVX512_TARGETS_BEFORE = ("AVX512F AVX512CD AVX512_KNL AVX512_KNM AVX512_SKX AVX512_CLX "
                         "AVX512_CNL AVX512_ICL AVX512_SPR")


def is_zen4(cpuinfo: str) -> bool:
    """Whether /proc/cpuinfo's text describes an AMD Zen 4 (family 25 with AVX-512)."""
    fields = {}
    for line in cpuinfo.splitlines():
        if not line.strip():
            break  # the first processor's block is enough: every core is alike
        name, _, value = line.partition(":")
        fields[name.strip()] = value.strip()
    return (fields.get("vendor_id") == "AuthenticAMD"
            and fields.get("cpu family") == str(ZEN4_FAMILY)
            and "avx512f" in fields.get("flags", "").split())


def avx512_targets(version: str) -> str:
    """The value of NPY_DISABLE_CPU_FEATURES that turns off numpy's AVX-512 code, for
    numpy `version`."""
    major, minor = (int(part) for part in version.split(".")[:2])
    return AVX512_TARGETS_SINCE_2_4 if (major, minor) >= (2, 4) else AVX512_TARGETS_BEFORE


def setting(cpuinfo: str, version: str, environ: Mapping[str, str],
            numpy_imported: bool) -> Optional[str]:
    """What NPY_DISABLE_CPU_FEATURES should be set to, or None to leave numpy alone
    (`version`: numpy's, `numpy_imported`: whether it is imported already)."""
    if numpy_imported or environ.get(OPT_OUT) == "1":
        return None
    if any(name in environ for name in NUMPY_VARIABLES) or not is_zen4(cpuinfo):
        return None
    return avx512_targets(version)


def read_cpuinfo() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return f.read(16384)  # the first processor's block
    except OSError:
        return ""  # not Linux: nothing known, nothing set


def numpy_version() -> str:
    try:
        return metadata.version("numpy")
    except metadata.PackageNotFoundError:
        return "0.0"


def prefer_avx2_sort() -> None:
    """Sets NPY_DISABLE_CPU_FEATURES for a Zen 4 before numpy is imported (see above)."""
    value = setting(read_cpuinfo(), numpy_version(), os.environ, "numpy" in sys.modules)
    if value is not None:
        os.environ["NPY_DISABLE_CPU_FEATURES"] = value


def applies_here() -> bool:
    """Whether this machine is one whose numpy sorts faster without AVX-512."""
    return is_zen4(read_cpuinfo())


def sort_hint() -> Optional[str]:
    """One line for a process whose numpy was imported before the sampler on a Zen 4
    with AVX-512 on; None otherwise."""
    # What prefer_avx2_sort would have set, had numpy not been imported first.
    value = setting(read_cpuinfo(), numpy_version(), os.environ, numpy_imported=False)
    if value is None:
        return None
    return (f"numpy sorts slowly with AVX-512 on this AMD Zen 4 and was imported before the "
            f"sampler: start Python with NPY_DISABLE_CPU_FEATURES="
            f"'{value}' for sampling about a quarter faster "
            f"(or set {OPT_OUT}=1 to keep AVX-512 and silence this)")
