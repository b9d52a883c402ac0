"""The base install samples without TensorFlow, PyTorch, matplotlib or pandas, and a
command that needs a missing extra says in one line which one to install.

The commands run in subprocesses where importing those libraries fails as it would
where they are not installed (a meta-path finder raises ModuleNotFoundError for
them), so this runs in the suite's one virtualenv. `make test` also installs the
base alone into a fresh virtualenv and samples the demo there (Makefile,
`check-base`), which is the real thing.
"""
import ast
import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT

HEAVY = ("tensorflow", "tensorflow_gnn", "tf_keras", "keras", "torch", "torch_geometric",
         "matplotlib", "pandas")
DEMO = os.path.join(REPO_ROOT, "examples", "mag_tiny")

# Runs a command's main() where the heavy libraries cannot be imported; prints the
# exit code and which heavy modules got imported all the same (none may).
_WITHOUT_EXTRAS = """
import importlib.abc, json, sys
HEAVY = {heavy!r}
class _NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in HEAVY:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
sys.meta_path.insert(0, _NotInstalled())
module = importlib.import_module(sys.argv[1])
try:
    code = module.main(sys.argv[2:])
except SystemExit as e:
    code = e.code
print(json.dumps({{"code": code, "heavy": sorted(m for m in sys.modules
                                                if m.split(".")[0] in HEAVY)}}))
"""


def _run_without_extras(module: str, *args: str, cwd: str):
    run = subprocess.run(
        [sys.executable, "-c", _WITHOUT_EXTRAS.format(heavy=HEAVY), module, *map(str, args)],
        capture_output=True, text=True, cwd=cwd, timeout=600,
        env=dict(os.environ, PYTHONPATH=REPO_ROOT))
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    return result["code"], result["heavy"], run.stderr


def _base_requirements() -> list[str]:
    tree = ast.parse(open(os.path.join(REPO_ROOT, "setup.py"), encoding="utf-8").read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "BASE":
            return [ast.unparse(e) for e in node.value.elts]
    raise AssertionError("setup.py has no BASE list")


def test_the_base_requirements_hold_no_heavy_library():
    names = " ".join(_base_requirements()).lower()
    for heavy in ("tensorflow", "torch", "matplotlib", "pandas", "keras"):
        assert heavy not in names, names


@pytest.fixture(scope="module")
def demo_output(tmp_path_factory):
    out = tmp_path_factory.mktemp("base") / "out"
    for engine in ("memory", "beam"):
        code, heavy, stderr = _run_without_extras(
            "pipelines.sample", "--graph", DEMO, "--spec",
            os.path.join(DEMO, "sampling_spec.pbtxt"), "--seeds",
            os.path.join(DEMO, "seeds.csv"), "--output", out / engine, "--engine", engine,
            cwd=str(out.parent))
        assert code == 0, stderr[-2000:]
        assert heavy == []
    return out


def test_both_engines_sample_without_extras(demo_output):
    shards = sorted(p.name for p in (demo_output / "memory").glob("*.tfrecord"))
    assert shards
    for name in shards:
        assert ((demo_output / "memory" / name).read_bytes()
                == (demo_output / "beam" / name).read_bytes())


@pytest.mark.parametrize("module,args", [
    ("pipelines.sample_check", ()),
    ("pipelines.inspect_output", ("--max-items", "2")),
    ("pipelines.sample_stats", ("--no-html", "--quiet")),
])
def test_the_output_commands_run_without_extras(demo_output, module, args):
    code, heavy, stderr = _run_without_extras(module, demo_output / "memory", *args,
                                              cwd=str(demo_output))
    assert code in (0, None), stderr[-2000:]
    assert heavy == []


@pytest.mark.parametrize("module,args,extra", [
    ("pipelines.sample_stats", ("--quiet",), "stats"),
    ("pipelines.train", ("--label", "labels", "--samples"), "tf"),
])
def test_a_missing_extra_is_one_line_naming_it(demo_output, module, args, extra):
    code, heavy, stderr = _run_without_extras(module, *args, demo_output / "memory",
                                              cwd=str(demo_output))
    assert code == 2
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert f"pip install 'graph-sampler[{extra}]'" in lines[0]
    assert heavy == []


_API_WITHOUT_EXTRAS = _WITHOUT_EXTRAS.split("module = ")[0] + """
from sampler import api
graph = api.load_graph(sys.argv[1], sys.argv[2])
records = graph.sample(["p01", "p02"]).to_examples()
try:
    api.to_tf_dataset(graph)
    missing = None
except api.SamplerError as e:
    missing = str(e)
print(json.dumps({{"records": len(records), "missing": missing,
                  "heavy": sorted(m for m in sys.modules if m.split(".")[0] in HEAVY)}}))
"""


def test_the_python_api_samples_without_extras_and_names_the_tf_extra():
    run = subprocess.run(
        [sys.executable, "-c", _API_WITHOUT_EXTRAS.format(heavy=HEAVY), DEMO,
         os.path.join(DEMO, "sampling_spec.pbtxt")],
        capture_output=True, text=True, timeout=600, env=dict(os.environ, PYTHONPATH=REPO_ROOT))
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["records"] == 2 and result["heavy"] == []
    assert "pip install 'graph-sampler[tf]'" in result["missing"]
    assert "\n" not in result["missing"]


# The torch path where TensorFlow is not installed, as far as Python can tell: every
# finder is wrapped to find nothing of the TF family, so `importlib.util.find_spec`
# answers None as for a missing package (torch probes for TensorFlow that way) and an
# import fails. Records go through SampleDataset and a DataLoader, API subgraphs
# through to_hetero_data. Where torch itself is missing, `import sampler.torch` is one
# line.
TF_FAMILY = ("tensorflow", "tensorflow_gnn", "tf_keras", "keras")
_TORCH_WITHOUT_TF = """
import json, sys
HEAVY = {heavy!r}
class _Hidden:
    def __init__(self, finder):
        self.finder = finder
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in HEAVY:
            return None
        find = getattr(self.finder, "find_spec", None)
        return find(name, path, target) if find else None
    def __getattr__(self, name):
        return getattr(self.finder, name)
sys.meta_path[:] = [_Hidden(finder) for finder in sys.meta_path]
import importlib.util
try:
    import tensorflow
    hidden = False
except ModuleNotFoundError:
    hidden = importlib.util.find_spec("tensorflow") is None
from torch.utils.data import DataLoader
from sampler import api
from sampler.torch import SampleDataset, Vocabulary, to_hetero_data
folder, demo = sys.argv[1], sys.argv[2]
dataset = SampleDataset(folder, vocabulary=Vocabulary.from_samples(folder), batch_size=4)
graphs = sum(data["paper"].batch_size for data in DataLoader(dataset, batch_size=None))
graph = api.load_graph(demo, demo + "/sampling_spec.pbtxt")
data = to_hetero_data(graph.sample(["p01", "p02"]), vocabulary=Vocabulary.from_graph(graph))
print(json.dumps({{"graphs": graphs, "api": data["paper"].batch_size, "hidden": hidden,
                  "heavy": sorted(m for m in sys.modules if m.split(".")[0] in HEAVY)}}))
"""


def test_the_torch_path_runs_without_tensorflow(demo_output):
    pytest.importorskip("torch_geometric")
    run = subprocess.run(
        [sys.executable, "-c", _TORCH_WITHOUT_TF.format(heavy=TF_FAMILY),
         demo_output / "memory", DEMO],
        capture_output=True, text=True, timeout=600, env=dict(os.environ, PYTHONPATH=REPO_ROOT))
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    seeds = len(open(os.path.join(DEMO, "seeds.csv")).read().split()) - 1
    # TensorFlow could not be found, and nothing imported it.
    assert result == {"graphs": seeds, "api": 2, "hidden": True, "heavy": []}


def test_sampler_torch_without_torch_is_one_line():
    script = _WITHOUT_EXTRAS.split("module = ")[0] + """
try:
    import sampler.torch
    message = None
except Exception as e:
    message = f"{{type(e).__name__}}: {{e}}"
print(json.dumps({{"message": message}}))
"""
    run = subprocess.run([sys.executable, "-c", script.format(heavy=HEAVY)],
                         capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, PYTHONPATH=REPO_ROOT))
    message = json.loads(run.stdout.strip().splitlines()[-1])["message"]
    assert message.startswith("MissingExtra: sampler.torch needs torch, which is not installed")
    assert "pip install 'graph-sampler[torch]'" in message and "\n" not in message


def test_sampler_dgl_without_dgl_is_one_line():
    """DGL is no extra of the project (its wheels need their own torch): without it,
    `import sampler.dgl` says in one line what to install and where."""
    script = ("import json\ntry:\n    import sampler.dgl\n    message = None\n"
              "except Exception as e:\n    message = f'{type(e).__name__}: {e}'\n"
              "print(json.dumps({'message': message}))\n")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=600, env=dict(os.environ, PYTHONPATH=REPO_ROOT))
    message = json.loads(run.stdout.strip().splitlines()[-1])["message"]
    if message is None:
        pytest.skip("DGL is installed here")
    assert message.startswith("MissingExtra: sampler.dgl needs dgl, which is not installed")
    assert "pip install dgl==2.1.0 torch==2.2.1" in message and "make dgl" in message
    assert "\n" not in message
