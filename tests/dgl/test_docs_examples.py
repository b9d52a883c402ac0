"""The guide's DGL examples (blocks marked `<!-- test: run dgl -->`), run in DGL's
virtualenv: the project's own virtualenv has no DGL, so tests/docs leaves them out."""
import glob
import os
import re
import subprocess
import sys

import pytest

pytest.importorskip("dgl")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNNABLE = re.compile(r"<!-- test: run dgl -->\n```python\n(.*?)\n```", re.S)


def examples():
    found = []
    for path in sorted(glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True)):
        with open(path) as f:
            for i, code in enumerate(RUNNABLE.findall(f.read())):
                found.append(pytest.param(code, id=f"{os.path.relpath(path, ROOT)}#{i + 1}"))
    return found


def test_there_is_a_dgl_example():
    assert examples()


@pytest.mark.parametrize("code", examples())
def test_dgl_example(code, tmp_path):
    os.symlink(os.path.join(ROOT, "examples"), tmp_path / "examples")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, env=dict(os.environ, PYTHONPATH=ROOT))
    assert done.returncode == 0, f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
