"""Shared builders for the GraphTensor tests: small hand-made graphs and a
hypothesis strategy for random (schema, graph) pairs. No tests live here."""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from sampler.graph_tensor import Adjacency, Context, EdgeSet, GraphTensor, NodeSet
from unigraph.protos import graph_schema_pb2 as gs
from unigraph.columnar.ragged import Ragged

# Schema dtypes the random graphs use, with how to draw their values.
DTYPES = [gs.DT_FLOAT, gs.DT_DOUBLE, gs.DT_HALF, gs.DT_INT64, gs.DT_INT32, gs.DT_UINT8,
          gs.DT_INT16, gs.DT_BOOL, gs.DT_STRING]
# Per-item shapes; -1 is ragged.
SHAPES = [(), (1,), (3,), (2, 2), (0,), (-1,), (-1, 2), (2, -1), (-1, -1), (-1, 2, -1)]
# TF-GNN's parser cannot count items of a zero-size fixed shape (it returns one
# item for none), so tests that parse with TF-GNN leave that shape out.
SHAPES_TFGNN_PARSES = [s for s in SHAPES if 0 not in s]


def small_graph() -> GraphTensor:
    """Two papers and an author in one component, with every kind of feature."""
    return GraphTensor.from_pieces(
        context=Context.from_fields(features={"seed_id": np.array([b"p1"], dtype=object)}),
        node_sets={
            "paper": NodeSet.from_fields(sizes=[2], features={
                "feat": np.array([[1.0, 2.0], [3.0, 4.5]], dtype=np.float32),
                "year": np.array([[2019], [2020]], dtype=np.int64),
                "#id": np.array([b"p1", b"p2"], dtype=object),
                "words": Ragged(np.array([7, 8, 9], dtype=np.int64), [2, 1]),
            }),
            "author": NodeSet.from_fields(sizes=[1], features={}),
        },
        edge_sets={
            "writes": EdgeSet.from_fields(
                sizes=[2], adjacency=Adjacency.from_indices(("author", [0, 0]), ("paper", [0, 1])),
                features={"weight": np.array([0.5, 0.25], dtype=np.float32)}),
            "cites": EdgeSet.from_fields(
                sizes=[1], adjacency=Adjacency.from_indices(("paper", [1]), ("paper", [0]))),
        })


def small_schema() -> gs.GraphSchema:
    from google.protobuf import text_format
    return text_format.Parse("""
      context { features { key: "seed_id" value { dtype: DT_STRING } } }
      node_sets { key: "paper" value {
        features { key: "feat" value { dtype: DT_FLOAT shape { dim { size: 2 } } } }
        features { key: "year" value { dtype: DT_INT64 shape { dim { size: 1 } } } }
        features { key: "#id" value { dtype: DT_STRING } }
        features { key: "words" value { dtype: DT_INT64 shape { dim { size: -1 } } } } } }
      node_sets { key: "author" value {} }
      edge_sets { key: "writes" value { source: "author" target: "paper"
        features { key: "weight" value { dtype: DT_FLOAT } } } }
      edge_sets { key: "cites" value { source: "paper" target: "paper" } }
    """, gs.GraphSchema())


def random_values(rng: np.random.Generator, dtype: int, count: int) -> np.ndarray:
    if dtype in (gs.DT_FLOAT, gs.DT_DOUBLE, gs.DT_HALF):
        numpy_dtype = {gs.DT_FLOAT: np.float32, gs.DT_DOUBLE: np.float64,
                       gs.DT_HALF: np.float16}[dtype]
        values = rng.normal(scale=1e3, size=count)
        special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, 1.0 / 3])
        pick = rng.random(count) < 0.2
        values[pick] = rng.choice(special, size=int(pick.sum()))
        return values.astype(numpy_dtype)
    if dtype == gs.DT_INT64:
        # Mix small values (1-byte varints) with extremes (10-byte varints).
        values = rng.integers(-(2 ** 63), 2 ** 63 - 1, size=count, dtype=np.int64)
        small = rng.random(count) < 0.5
        values[small] = rng.integers(0, 300, size=int(small.sum()))
        return values
    if dtype in (gs.DT_INT32, gs.DT_UINT8, gs.DT_INT16):
        numpy_dtype = {gs.DT_INT32: np.int32, gs.DT_UINT8: np.uint8, gs.DT_INT16: np.int16}[dtype]
        info = np.iinfo(numpy_dtype)
        return rng.integers(info.min, info.max, size=count, endpoint=True).astype(numpy_dtype)
    if dtype == gs.DT_BOOL:
        return rng.random(count) < 0.5
    if dtype == gs.DT_STRING:
        out = np.empty(count, dtype=object)
        out[:] = [bytes(rng.integers(0, 256, size=rng.integers(0, 6)).astype(np.uint8))
                  for _ in range(count)]
        return out
    raise AssertionError(dtype)


def random_field(rng: np.random.Generator, dtype: int, shape: tuple, items: int):
    """A feature of `items` items of per-item `shape` (-1 ragged)."""
    ragged_dims = [k for k, size in enumerate(shape, start=1) if size == -1]
    depth = ragged_dims[-1] if ragged_dims else 0
    rows, levels = items, []
    for dimension in range(1, depth + 1):
        size = shape[dimension - 1]
        lengths = (rng.integers(0, 4, size=rows) if size == -1
                   else np.full(rows, size)).astype(np.int64)
        levels.append(lengths)
        rows = int(lengths.sum())
    trailing = shape[depth:]
    values = random_values(rng, dtype, rows * int(np.prod(trailing, dtype=np.int64)))
    field = values.reshape((rows,) + tuple(trailing))
    for lengths in reversed(levels):
        field = Ragged(field, lengths)
    return field


def _add_feature(features_proto, name, dtype, shape):
    feature = features_proto[name]
    feature.dtype = dtype
    for size in shape:
        feature.shape.dim.add().size = size


@st.composite
def schemas_and_graphs(draw, max_components: int = 3, components=None, shapes=tuple(SHAPES)):
    """(GraphSchema, GraphTensor) with random sets, features, dtypes, shapes, sizes."""
    seed = draw(st.integers(0, 2 ** 32 - 1))
    rng = np.random.default_rng(seed)
    num_components = components or draw(st.integers(1, max_components))
    schema = gs.GraphSchema()
    feature_specs = st.lists(st.tuples(st.sampled_from(DTYPES), st.sampled_from(shapes)),
                             max_size=3)

    def features_for(proto_features, items):
        result = {}
        for i, (dtype, shape) in enumerate(draw(feature_specs)):
            name = f"f{i}"
            _add_feature(proto_features, name, dtype, shape)
            result[name] = random_field(rng, dtype, shape, items)
        return result

    context_features = features_for(schema.context.features, num_components)
    node_names = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=3,
                               unique=True))
    node_sets = {}
    for name in node_names:
        sizes = np.array(draw(st.lists(st.integers(0, 4), min_size=num_components,
                                       max_size=num_components)), dtype=np.int64)
        proto = schema.node_sets[name]
        node_sets[name] = NodeSet.from_fields(sizes=sizes,
                                              features=features_for(proto.features, sizes.sum()))
    edge_sets = {}
    for i in range(draw(st.integers(0, 3))):
        name = f"e{i}"
        source, target = draw(st.sampled_from(node_names)), draw(st.sampled_from(node_names))
        source_sizes, target_sizes = node_sets[source].sizes, node_sets[target].sizes
        # Edges only where both ends have nodes in the component.
        possible = (source_sizes > 0) & (target_sizes > 0)
        sizes = np.where(possible, rng.integers(0, 5, size=num_components), 0).astype(np.int64)
        component = np.repeat(np.arange(num_components), sizes)

        def indices(node_sizes):
            starts = np.concatenate([[0], np.cumsum(node_sizes)[:-1]])
            return starts[component] + (rng.random(len(component))
                                        * node_sizes[component]).astype(np.int64)

        proto = schema.edge_sets[name]
        proto.source, proto.target = source, target
        edge_sets[name] = EdgeSet.from_fields(
            sizes=sizes,
            adjacency=Adjacency.from_indices((source, indices(source_sizes)),
                                             (target, indices(target_sizes))),
            features=features_for(proto.features, sizes.sum()))
    graph = GraphTensor.from_pieces(
        context=Context.from_fields(features=context_features,
                                    sizes=np.ones(num_components, np.int64)),
        node_sets=node_sets, edge_sets=edge_sets)
    return schema, graph


def as_written(graph: GraphTensor) -> GraphTensor:
    """What parsing the graph's tf.Example gives back: float64 went through float32."""
    def fix(field):
        if isinstance(field, Ragged):
            return Ragged(fix(field.values), field.row_lengths)
        if field.dtype == np.float64:
            with np.errstate(over="ignore"):
                rounded = field.astype(np.float32).astype(np.float64)
            tiny = np.finfo(np.float32).tiny
            return np.where(np.abs(rounded) < tiny, np.copysign(0.0, rounded), rounded)
        return field

    return graph.replace_features(
        context={n: fix(f) for n, f in graph.context.features.items()},
        node_sets={s: {n: fix(f) for n, f in p.features.items()}
                   for s, p in graph.node_sets.items()},
        edge_sets={s: {n: fix(f) for n, f in p.features.items()}
                   for s, p in graph.edge_sets.items()})


def graph_of_schema(rng: np.random.Generator, schema: gs.GraphSchema, components: int,
                    empty: float = 0.3) -> GraphTensor:
    """A random graph of an existing schema (every declared feature, its dtype and shape):
    `empty` is the chance that a node or edge set has no item in a component, so batches
    of such graphs hold empty sets and edge sets with features but no edges."""
    def features_of(proto_features, items):
        return {name: random_field(rng, feature.dtype, tuple(d.size for d in feature.shape.dim),
                                   items)
                for name, feature in proto_features.items()}

    node_sets = {}
    for name in schema.node_sets:
        sizes = np.where(rng.random(components) < empty, 0,
                         rng.integers(1, 5, size=components)).astype(np.int64)
        node_sets[name] = NodeSet.from_fields(
            sizes=sizes, features=features_of(schema.node_sets[name].features, sizes.sum()))
    edge_sets = {}
    for name, proto in schema.edge_sets.items():
        source_sizes = node_sets[proto.source].sizes
        target_sizes = node_sets[proto.target].sizes
        possible = (source_sizes > 0) & (target_sizes > 0) & (rng.random(components) >= empty)
        sizes = np.where(possible, rng.integers(1, 5, size=components), 0).astype(np.int64)
        component = np.repeat(np.arange(components), sizes)

        def indices(node_sizes):
            starts = np.concatenate([[0], np.cumsum(node_sizes)[:-1]]).astype(np.int64)
            return starts[component] + (rng.random(len(component))
                                        * node_sizes[component]).astype(np.int64)

        edge_sets[name] = EdgeSet.from_fields(
            sizes=sizes, adjacency=Adjacency.from_indices(
                (proto.source, indices(source_sizes)), (proto.target, indices(target_sizes))),
            features=features_of(proto.features, sizes.sum()))
    return GraphTensor.from_pieces(
        context=Context.from_fields(features=features_of(schema.context.features, components),
                                    sizes=np.ones(components, np.int64)),
        node_sets=node_sets, edge_sets=edge_sets)


@st.composite
def batches_of_records(draw, max_records: int = 6, shapes=tuple(SHAPES), components=None):
    """(GraphSchema, [GraphTensor, ...]): several graphs of one random schema, of 1 to 3
    components each (or `components`), to be written as one record each."""
    schema, first = draw(schemas_and_graphs(shapes=shapes, components=components))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    count = draw(st.integers(1, max_records))
    graphs = [first] + [graph_of_schema(rng, schema, components or int(rng.integers(1, 4)))
                        for _ in range(count - 1)]
    return schema, graphs
