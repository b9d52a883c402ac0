"""unigraph-import and unigraph-check need no extra: OGB folders, plain tables and the
check run on the base install; only an OGB link dataset's `.pt` splits need PyTorch,
and without it that is one line naming the [torch] extra."""
import os

import numpy as np
import pytest

from pipelines.bench import ogb_layout
from tests.conftest import REPO_ROOT
from tests.test_extras import _run_without_extras

EXAMPLES = os.path.join(REPO_ROOT, "examples")


@pytest.mark.parametrize("source", ["ogbn_tiny", "shop_tables"])
def test_importing_and_checking_need_no_extra(tmp_path, source):
    code, heavy, stderr = _run_without_extras(
        "pipelines.import_graph", os.path.join(EXAMPLES, source), "--output", tmp_path / "g",
        cwd=str(tmp_path))
    assert code == 0, stderr[-2000:]
    assert heavy == []
    code, heavy, stderr = _run_without_extras("pipelines.graph_check", tmp_path / "g",
                                              cwd=str(tmp_path))
    assert code == 0 and heavy == [], stderr[-2000:]


def test_link_splits_without_torch_are_one_line(tmp_path):
    pytest.importorskip("torch", reason="the .pt split is written with torch")
    folder = str(tmp_path / "ogbl_ddi")
    ogb_layout.write_homogeneous(folder, num_nodes=4, edges=np.array([[0, 1], [2, 3]]))
    ogb_layout.write_link_split(folder, "target", "train", {"edge": np.array([[0, 1]])})
    code, heavy, stderr = _run_without_extras("pipelines.import_graph", folder, "--output",
                                              tmp_path / "g", cwd=str(tmp_path))
    assert code == 2 and heavy == []
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'graph-sampler[torch]'" in lines[0], stderr
    assert not (tmp_path / "g").exists()
