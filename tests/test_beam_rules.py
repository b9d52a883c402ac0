"""Beam constructs every runner translates, and only those (docs/architecture.md,
"Beam rules").

Beam's released DaskRunner sends every output of a multi-output DoFn
(`with_outputs`, `TaggedOutput`) to every consumer, and computes a side input
(CombineGlobally's default value is one) inside the task that reads it. So the
project's Beam code has neither: a stage with several kinds of results yields
(tag, payload) pairs split by `sampler.beam.tagged.split_tagged`, and a merge of
everything is a keyed combine on one constant key. Two checks: the source of every
module, and the pipeline the sampler actually builds.
"""
import ast
import os

from apache_beam.pipeline import PipelineVisitor
from apache_beam.transforms.core import CombineGlobally

from sampler.beam.pipeline import SampleSubgraphs
from sampler.job.job import SamplingJob
from sampler.output.files import parse_output
from sampler.plan.plan import build_plan
from sampler.plan.spec import load_spec
from tests.conftest import REPO_ROOT, TESTDATA
from tests.sampler.beam.tiny import test_pipeline
from tests.test_imports import project_modules
from unigraph.schema import load_schema

FORBIDDEN = {
    "with_outputs": "a multi-output DoFn; yield (tag, payload) and use split_tagged",
    "TaggedOutput": "a multi-output DoFn; yield (tag, payload) and use split_tagged",
    "CombineGlobally": "a global combine (its default value is a side input); "
                       "combine per key on one constant int key",
    "AsSingleton": "a side input", "AsIter": "a side input", "AsList": "a side input",
    "AsDict": "a side input", "AsMultiMap": "a side input",
}


def _names(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            yield node.attr, node.lineno
        elif isinstance(node, ast.Name):
            yield node.id, node.lineno
        elif isinstance(node, ast.alias):
            yield node.name.rsplit(".", 1)[-1], node.lineno


def forbidden_uses(source: str, path: str) -> list[str]:
    return [f"{path}:{line}: {name} ({FORBIDDEN[name]})"
            for name, line in _names(ast.parse(source, path)) if name in FORBIDDEN]


def test_the_check_finds_what_it_looks_for():
    source = ("import apache_beam as beam\nfrom apache_beam.pvalue import AsSingleton\n"
              "x = p | beam.ParDo(f).with_outputs('a', main='b')\n"
              "y = p | beam.CombineGlobally(sum)\n")
    assert [u.split(":")[1] + ":" + u.split(": ")[1].split(" ")[0]
            for u in forbidden_uses(source, "m.py")] == ["2:AsSingleton", "3:with_outputs",
                                                          "4:CombineGlobally"]


GROUPINGS = {"GroupByKey", "CoGroupByKey"}
SHUFFLE_MODULE = os.path.join("unigraph", "beam", "shuffle.py")


def beam_groupings(source: str, path: str) -> list[str]:
    """Beam's own GroupByKey or CoGroupByKey named in `source` (as `beam.X` or imported
    from apache_beam), which would shuffle without being counted."""
    found = []
    for node in ast.walk(ast.parse(source, path)):
        if (isinstance(node, ast.Attribute) and node.attr in GROUPINGS
                and isinstance(node.value, ast.Name) and node.value.id == "beam"):
            found.append(f"{path}:{node.lineno}: beam.{node.attr}")
        elif (isinstance(node, ast.ImportFrom) and (node.module or "").startswith("apache_beam")
              and any(alias.name in GROUPINGS for alias in node.names)):
            found.append(f"{path}:{node.lineno}: {node.module} import")
    return found


def test_every_grouping_counts_what_it_shuffles():
    """Beam code groups through unigraph.beam.shuffle, so the report's `shuffled` bytes
    (what a Dataflow job is billed for moving) miss no GroupByKey."""
    assert sorted(beam_groupings("import apache_beam as beam\nx = p | beam.GroupByKey()\n"
                                 "from apache_beam.transforms.util import CoGroupByKey\n", "m.py")) \
        == ["m.py:2: beam.GroupByKey", "m.py:3: apache_beam.transforms.util import"]
    uses = []
    for path in sorted(project_modules().values()):
        relative = os.path.relpath(path, REPO_ROOT)
        if relative != SHUFFLE_MODULE:
            with open(path, encoding="utf-8") as f:
                uses += beam_groupings(f.read(), relative)
    assert not uses, "\n".join(uses)


def test_no_module_uses_a_construct_some_runner_mistranslates():
    uses = []
    for path in sorted(project_modules().values()):
        with open(path, encoding="utf-8") as f:
            uses += forbidden_uses(f.read(), os.path.relpath(path, REPO_ROOT))
    assert not uses, "\n".join(uses)


class _Steps(PipelineVisitor):
    def __init__(self):
        self.problems = []

    def visit_transform(self, node):
        label = node.full_label
        if len(node.outputs) > 1:
            self.problems.append(f"{label}: {len(node.outputs)} outputs")
        if node.side_inputs:
            self.problems.append(f"{label}: side inputs")

    def enter_composite_transform(self, node):
        if isinstance(node.transform, CombineGlobally):
            self.problems.append(f"{node.full_label}: CombineGlobally")
        if node.side_inputs:
            self.problems.append(f"{node.full_label}: side inputs")


def test_the_sampling_pipeline_has_one_output_per_step_and_no_side_input(tmp_path):
    topk = os.path.join(TESTDATA, "topk")
    loaded = load_schema(topk)
    spec_path = os.path.join(topk, "sampling_spec.pbtxt")
    plan = build_plan(load_spec(spec_path), loaded, source=spec_path)
    job = SamplingJob(loaded, plan, os.path.join(topk, "seeds.csv"),
                      parse_output(f"{tmp_path}/out/"), num_shards=2, node_buckets=3, seed=1,
                      stats_path=str(tmp_path / "stats.json"))
    p = test_pipeline()
    _ = p | "Sample" >> SampleSubgraphs(job)
    steps = _Steps()
    p.visit(steps)
    assert not steps.problems, steps.problems
