"""Building a SamplingSpec in Python, written out in the text format `sample` reads.

    builder = SamplingSpecBuilder(schema, default_strategy="RANDOM_UNIFORM")
    seed = builder.seed("paper")
    cited = seed.sample(8, "cites", strategy="LATEST_K")
    authors = builder.join([seed, cited]).sample(4, "written")
    papers = authors.sample(4, "writes")
    cited_by_them = papers.sample(2, "cites")          # "cites" again, one hop further
    builder.write("spec.pbtxt")                        # or builder.build(), .to_text()

Like TF-GNN's SamplingSpecBuilder, a step is the set of nodes some ops reached;
`sample` adds an op from there and returns its step; `join` merges steps that reach
one node set (the op then takes the per-sample union of their nodes). Unlike it, op
names never collide: an op is named "<input>-><edge set>" (the inputs' names joined
by "+"), and a name already taken gets a "#2", "#3" ... suffix, so one edge set can be
sampled at several hops (tensorflow/gnn#827) or twice from the same step. `op_name=`
names an op explicitly; a name given twice is an error at once.

With a schema (a GraphSchema, a LoadedSchema, or the path of graph_schema.pbtxt) every
call is checked as it is made: the node set and edge set exist, an edge set starts
where its step ends, joined steps reach one node set. With a LoadedSchema, `build`
also runs the plan's checks (sampler.plan.plan.build_plan), tables included.
"""
from __future__ import annotations

from typing import Sequence

from google.protobuf import text_format

from sampler.plan import sampling_spec_pb2 as ss
from sampler.plan.plan import build_plan
from unigraph.protos import graph_schema_pb2 as gs
from unigraph.errors import SpecError
from unigraph.schema import LoadedSchema, load_schema


def _strategy_value(strategy) -> int:
    if isinstance(strategy, str):
        if strategy not in ss.SamplingStrategy.keys():
            raise SpecError(f"SamplingSpecBuilder: unknown strategy '{strategy}' (known: "
                            f"{', '.join(ss.SamplingStrategy.keys())})")
        return ss.SamplingStrategy.Value(strategy)
    if strategy not in ss.SamplingStrategy.values():
        raise SpecError(f"SamplingSpecBuilder: unknown strategy {strategy!r}")
    return int(strategy)


class Step:
    """The nodes some ops reached, per sample: where the next `sample` starts."""

    def __init__(self, builder: "SamplingSpecBuilder", op_names: tuple[str, ...],
                 node_set: str | None):
        self.builder, self.op_names, self.node_set = builder, op_names, node_set

    def sample(self, sample_size: int, edge_set: str, *, strategy=None,
               op_name: str | None = None) -> "Step":
        """An op taking up to `sample_size` edges of `edge_set` from every node of this step."""
        return self.builder._add_op(self, sample_size, edge_set, strategy, op_name)

    def join(self, others: Sequence["Step"]) -> "Step":
        """This step and `others` as one: the union of their nodes (one node set)."""
        return self.builder.join([self, *others])

    def build(self) -> ss.SamplingSpec:
        return self.builder.build()

    def __repr__(self) -> str:
        return f"Step({'+'.join(self.op_names)} -> {self.node_set or '?'})"


class SamplingSpecBuilder:
    def __init__(self, schema: gs.GraphSchema | LoadedSchema | str | None = None, *,
                 default_strategy="RANDOM_UNIFORM"):
        self.loaded = load_schema(schema) if isinstance(schema, str) else (
            schema if isinstance(schema, LoadedSchema) else None)
        self.schema = self.loaded.schema if self.loaded is not None else schema
        self.default_strategy = _strategy_value(default_strategy)
        self.spec = ss.SamplingSpec()
        self._names: set[str] = set()

    # ---- steps
    def seed(self, node_set: str, op_name: str = "seed") -> Step:
        """The seed op: the sample's start node, of `node_set`."""
        if self.spec.HasField("seed_op"):
            raise SpecError("SamplingSpecBuilder: the spec has a seed op already "
                            f"('{self.spec.seed_op.op_name}')")
        if self.schema is not None and node_set not in self.schema.node_sets:
            raise SpecError(f"SamplingSpecBuilder: node set '{node_set}' does not exist "
                            f"(node sets: {', '.join(sorted(self.schema.node_sets))})")
        self._claim(op_name)
        self.spec.seed_op.op_name = op_name
        self.spec.seed_op.node_set_name = node_set
        return Step(self, (op_name,), node_set)

    def join(self, steps: Sequence[Step]) -> Step:
        """One step from several: the per-sample union of the nodes they reached."""
        steps = list(steps)
        if not steps:
            raise SpecError("SamplingSpecBuilder.join: no steps to join")
        if any(step.builder is not self for step in steps):
            raise SpecError("SamplingSpecBuilder.join: steps of another builder")
        sets = {step.node_set for step in steps}
        if len(sets) > 1:
            raise SpecError(f"SamplingSpecBuilder.join: the steps reach different node sets "
                            f"({', '.join(sorted(str(s) for s in sets))})")
        names = tuple(dict.fromkeys(n for step in steps for n in step.op_names))
        return Step(self, names, steps[0].node_set)

    def _add_op(self, step: Step, sample_size: int, edge_set: str, strategy,
                op_name: str | None) -> Step:
        if isinstance(sample_size, bool) or not isinstance(sample_size, int) or sample_size < 1:
            raise SpecError(f"SamplingSpecBuilder: sample_size must be an int > 0, got "
                            f"{sample_size!r}")
        target = None
        if self.schema is not None:
            if edge_set not in self.schema.edge_sets:
                raise SpecError(f"SamplingSpecBuilder: edge set '{edge_set}' does not exist "
                                f"(edge sets: {', '.join(sorted(self.schema.edge_sets))})")
            source = self.schema.edge_sets[edge_set].source
            if step.node_set is not None and source != step.node_set:
                raise SpecError(f"SamplingSpecBuilder: edge set '{edge_set}' starts at node "
                                f"set '{source}', but {step!r} reaches '{step.node_set}'")
            target = self.schema.edge_sets[edge_set].target
        if op_name is None:
            op_name = self._free_name(f"{'+'.join(step.op_names)}->{edge_set}")
        self._claim(op_name)
        op = self.spec.sampling_ops.add()
        op.op_name = op_name
        op.input_op_names.extend(step.op_names)
        op.edge_set_name = edge_set
        op.sample_size = sample_size
        op.strategy = self.default_strategy if strategy is None else _strategy_value(strategy)
        return Step(self, (op_name,), target)

    # ---- names
    def _free_name(self, name: str) -> str:
        if name not in self._names:
            return name
        n = 2
        while f"{name}#{n}" in self._names:
            n += 1
        return f"{name}#{n}"

    def _claim(self, name: str) -> None:
        if not name:
            raise SpecError("SamplingSpecBuilder: an op name may not be empty")
        if name in self._names:
            raise SpecError(f"SamplingSpecBuilder: op name '{name}' is used twice")
        self._names.add(name)

    # ---- output
    def build(self) -> ss.SamplingSpec:
        """The spec (a copy); checked against the schema's tables with a LoadedSchema."""
        if not self.spec.HasField("seed_op"):
            raise SpecError("SamplingSpecBuilder: no seed op (call seed() first)")
        spec = ss.SamplingSpec()
        spec.CopyFrom(self.spec)
        if self.loaded is not None:
            build_plan(spec, self.loaded, source="built by SamplingSpecBuilder")
        return spec

    def to_text(self) -> str:
        """The spec in the text format (what `sample --spec` reads)."""
        return text_format.MessageToString(self.build())

    def write(self, path: str) -> None:
        with open(path, "w") as f:
            f.write(self.to_text())
