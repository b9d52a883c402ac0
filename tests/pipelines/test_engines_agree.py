"""The in-memory engine and the Beam engine write the same bytes (issue 12).

Hypothesis generates small heterogeneous graphs (hubs, isolated nodes, self-loops,
duplicate edges, edges to ids a node table lacks, node sets without a table, every
table format) and specs (DAGs of ops with several inputs, every strategy), some of
them temporal (edge and node `#timestamp` columns with many ties, LATEST_K ops, seeds
and link pairs with a `timestamp` cut-off column), then
`sample` runs once per engine: the shards and the schema must be identical, and the
report's counts too. The examples are derandomized, so CI runs the same ones every
time; HYPOTHESIS_PROFILE=engines-long explores many more.
"""
import json
import os

import numpy as np
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as hs

from pipelines import sample
from tests.pipelines.sampled_output import read_records
from unigraph.columnar.batches import EdgeBatch, NodeBatch, PairBatch, row_ids
from unigraph.schema import load_schema
from unigraph.tables import pairs_layout, table_layout
from unigraph.tables.layout import TimeColumn, seeds_layout
from unigraph.tables.writers import write_table

# Shrinking re-runs both engines many times; the failing example is printed as found.
settings.register_profile("engines", max_examples=10, deadline=None, derandomize=True,
                          phases=(Phase.explicit, Phase.reuse, Phase.generate),
                          suppress_health_check=[HealthCheck.too_slow,
                                                 HealthCheck.function_scoped_fixture])
settings.register_profile("engines-long", max_examples=200, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow,
                                                 HealthCheck.function_scoped_fixture])
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "engines")
if not PROFILE.startswith("engines"):
    PROFILE = "engines"

STRATEGIES = ("RANDOM_UNIFORM", "TOP_K", "RANDOM_WEIGHTED")
FORMATS = ("csv", "parquet", "tfrecord")
# Features a node table may carry: name -> (schema text, values for n nodes).
NODE_FEATURES = {
    "vec": ('dtype: DT_FLOAT shape { dim { size: 2 } }',
            lambda rng, n: rng.normal(size=(n, 2)).astype(np.float32)),
    "count": ("dtype: DT_INT64", lambda rng, n: rng.integers(-5, 100, n)),
    "label": ("dtype: DT_STRING",
              lambda rng, n: np.array([f"l{i}".encode() for i in rng.integers(0, 9, n)],
                                      dtype=object)),
}


@hs.composite
def graphs(draw):
    """(schema text, {set: batch}, spec text, seeds or None, format) of a random graph."""
    rng = np.random.default_rng(draw(hs.integers(0, 2**32 - 1)))
    fmt = draw(hs.sampled_from(FORMATS))
    timed = draw(hs.booleans())
    n_sets = draw(hs.integers(1, 3))
    node_sets = {}
    for s in range(n_sets):
        count = draw(hs.integers(1, 12))
        ids = [f"{'abc'[s]}{i:0{draw(hs.integers(1, 3))}d}".encode() for i in range(count)]
        with_table = draw(hs.booleans()) or s == 0
        ids = np.array(sorted(set(ids)), dtype="S")
        # Node times (few values: many ties) only on some timed node tables.
        times = rng.integers(0, 4, len(ids)) if timed and with_table and draw(
            hs.booleans()) else None
        node_sets[f"n{s}"] = (ids, with_table, times)
    edge_sets = {}
    for e in range(draw(hs.integers(1, 4))):
        source, target = (f"n{draw(hs.integers(0, n_sets - 1))}" for _ in range(2))
        sources, targets = node_sets[source][0], node_sets[target][0]
        m = draw(hs.integers(0, 30))
        src = rng.choice(sources, m)
        if m and draw(hs.booleans()):  # a hub: one node with many edges
            src[: m // 2] = sources[0]
        tgt = rng.choice(targets, m)
        if m and source == target and draw(hs.booleans()):
            tgt[0] = src[0]  # a self-loop
        if m > 1 and draw(hs.booleans()):
            src[-1], tgt[-1] = src[0], tgt[0]  # a duplicate edge
        if m and node_sets[target][1] and draw(hs.booleans()):
            tgt[1 % m] = b"missing"  # an edge to an id its node table lacks
        weights = rng.choice([0.0, -1.0, 0.5, 1.0, 2.0, 7.0], m)
        times = rng.integers(0, 5, m) if timed and draw(hs.booleans()) else None
        edge_sets[f"e{e}"] = (source, target, src, tgt, weights, times)
    # The spec: a DAG whose ops start where their inputs end.
    seed_set = draw(hs.sampled_from(sorted(node_sets)))
    yields = {"seed": seed_set}
    ops = []
    for o in range(draw(hs.integers(1, 4))):
        usable = [e for e, (source, *_rest) in edge_sets.items()
                  if source in yields.values()]
        if not usable:
            break
        e = draw(hs.sampled_from(usable))
        source = edge_sets[e][0]
        candidates = [name for name, s in yields.items() if s == source]
        inputs = draw(hs.lists(hs.sampled_from(candidates), min_size=1, unique=True))
        k = draw(hs.integers(1, 4))
        strategy = draw(hs.sampled_from(STRATEGIES + (
            ("LATEST_K",) * 2 if edge_sets[e][5] is not None else ())))
        ops.append(f'sampling_ops {{ op_name: "op{o}" input_op_names: {json.dumps(inputs)} '
                   f'edge_set_name: "{e}" sample_size: {k} strategy: {strategy} }}')
        yields[f"op{o}"] = edge_sets[e][1]
    spec = f'seed_op {{ op_name: "seed" node_set_name: "{seed_set}" }}\n' + "\n".join(ops)
    seeds = None
    if draw(hs.booleans()):
        pool = list(node_sets[seed_set][0]) + [b"nobody"]
        seeds = draw(hs.lists(hs.sampled_from(pool), min_size=1, max_size=12))
        if all(s == b"nobody" for s in seeds):
            seeds.append(pool[0])
    cutoffs = None
    if timed:  # a cut-off per seed row; without a seeds list, every node of the seed set
        if seeds is None:
            seeds = list(node_sets[seed_set][0])
        cutoffs = [draw(hs.integers(-1, 5)) for _ in seeds]
    return node_sets, edge_sets, spec, seeds, fmt, rng, cutoffs


def write_graph(folder, node_sets, edge_sets, fmt, rng, link_set=None):
    lines = []
    if link_set is not None:  # TF-GNN's link structure, the pairs' features on _readout
        lines += ['node_sets { key: "_readout" value { features { key: "label" value { '
                  'dtype: DT_INT64 } } } }'] + [
            f'edge_sets {{ key: "_readout/{end}" value {{ source: "{link_set}" '
            f'target: "_readout" }} }}' for end in ("source", "target")]
    features_of = {}
    for name, (ids, with_table, _times) in node_sets.items():
        if with_table:
            chosen = [f for f in NODE_FEATURES if rng.random() < 0.6]
            features_of[name] = chosen
            features = "".join(f'features {{ key: "{f}" value {{ {NODE_FEATURES[f][0]} }} }} '
                               for f in chosen)
            lines.append(f'node_sets {{ key: "{name}" value {{ {features}'
                         f'metadata {{ filename: "{name}.{fmt}" }} }} }}')
        else:
            lines.append(f'node_sets {{ key: "{name}" value {{ }} }}')
    for name, (source, target, *_rest) in edge_sets.items():  # "#timestamp": not declared
        lines.append(f'edge_sets {{ key: "{name}" value {{ source: "{source}" target: '
                     f'"{target}" features {{ key: "w2" value {{ dtype: DT_DOUBLE }} }} '
                     f'metadata {{ filename: "{name}.{fmt}" }} }} }}')
    os.makedirs(folder)
    with open(os.path.join(folder, "graph_schema.pbtxt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    loaded = load_schema(folder)
    stamp = TimeColumn("#timestamp", "int64")
    for name, (ids, with_table, times) in node_sets.items():
        if with_table:
            features = {f: NODE_FEATURES[f][1](rng, len(ids)) for f in features_of[name]}
            if times is not None:
                features["#timestamp"] = times
            write_table(os.path.join(folder, f"{name}.{fmt}"),
                        table_layout(loaded, "nodes", name,
                                     stamp if times is not None else None),
                        [NodeBatch(name, ids, row_ids(0, 0, len(ids)), features)])
    for name, (source, target, src, tgt, weights, times) in edge_sets.items():
        m = len(src)
        if not m:  # an empty edge table still needs a row for its header in some formats
            src, tgt, weights = node_sets[source][0][:1], node_sets[target][0][:1], \
                np.ones(1)
            times = None if times is None else np.zeros(1, np.int64)
            m = 1
        features = {"w2": np.round(np.asarray(weights) * 3, 2)}
        if times is not None:
            features["#timestamp"] = times
        write_table(os.path.join(folder, f"{name}.{fmt}"),
                    table_layout(loaded, "edges", name, stamp if times is not None else None),
                    [EdgeBatch(name, np.array(src, "S"), np.array(tgt, "S"), row_ids(0, 0, m),
                               np.asarray(weights, np.float64), features)])


def run(folder, spec_path, seeds_path, out, *engine_args):
    args = ["--graph", folder, "--spec", spec_path, "--output", out, "--quiet", "--seed", "5",
            *engine_args]
    if seeds_path:
        args += ["--seeds", seeds_path]
    code = sample.main(args)
    report = None
    if os.path.exists(os.path.join(out, "sample_report.json")):
        with open(os.path.join(out, "sample_report.json")) as f:
            report = json.load(f)
        for key in ("wall_time_s", "engine", "node_buckets", "graph_in_memory_mb", "shuffled"):
            report.pop(key, None)
    return code, report


@hs.composite
def options(draw):
    """Flags every seed kind takes: induced edges on some runs; on some, chunks so small
    that most nodes have long rows (core.long_rows), which the Beam engine ships as
    chunk elements (core.hubs) and the memory engine keeps in its CSR."""
    flags = ["--edge-aggregation", "node"] if draw(hs.booleans()) else []
    if draw(hs.booleans()):
        flags += ["--chunk-edges", str(draw(hs.sampled_from([1, 2, 3, 8])))]
    return flags


@settings(settings.get_profile(PROFILE))
@given(graphs(), hs.integers(1, 2), options())
def test_engines_write_identical_bytes(tmp_path_factory, graph, workers, flags):
    node_sets, edge_sets, spec, seeds, fmt, rng, cutoffs = graph
    root = tmp_path_factory.mktemp("g")
    folder = str(root / "graph")
    write_graph(folder, node_sets, edge_sets, fmt, rng)
    spec_path = str(root / "spec.pbtxt")
    with open(spec_path, "w") as f:
        f.write(spec)
    seeds_path = None
    if cutoffs is not None:  # a seeds table with a cut-off column, in the graph's format
        seeds_path = str(root / f"seeds.{fmt}")
        write_table(seeds_path, seeds_layout(TimeColumn("timestamp", "int64")),
                    [NodeBatch("seeds", np.array(seeds, "S"), row_ids(0, 0, len(seeds)),
                               {"timestamp": np.array(cutoffs, np.int64)})])
    elif seeds is not None:
        seeds_path = str(root / "seeds.txt")
        with open(seeds_path, "wb") as f:
            f.write(b"\n".join(seeds) + b"\n")
    assert_engines_agree(root, folder, spec_path, seeds_path, workers, flags)


def assert_engines_agree(root, folder, spec_path, seeds_path, workers, flags):
    memory = run(folder, spec_path, seeds_path, str(root / "memory"), "--engine", "memory",
                 "--workers", str(workers), *flags)
    beam = run(folder, spec_path, seeds_path, str(root / "beam"), "--engine", "beam",
               "--node-buckets", "3", *flags)
    assert memory[0] == beam[0]  # exit status
    if memory[1] is not None:  # the report's counts
        differ = {k: (memory[1].get(k), beam[1].get(k)) for k in memory[1]
                  if memory[1].get(k) != beam[1].get(k)}
        assert not differ, differ
    if memory[0] == 0:
        assert read_records(str(root / "memory")) == read_records(str(root / "beam"))
        for name in ("graph_schema.pbtxt",):
            with open(root / "memory" / name, "rb") as f, open(root / "beam" / name, "rb") as g:
                assert f.read() == g.read()


@hs.composite
def link_jobs(draw):
    """A graph as above, seeded by pairs of its spec's seed set (symmetric_link_seed_op),
    with negatives (uniform or by degree), leakage exclusion on or off, induced edges; a
    temporal graph's pairs have a `timestamp` cut-off each (a pair may come twice, at
    one cut-off or two)."""
    node_sets, edge_sets, spec, _, fmt, rng, node_cutoffs = draw(graphs())
    seed_set = spec.split('node_set_name: "')[1].split('"')[0]
    spec = spec.split("\n", 1)[1] if "\n" in spec else ""
    spec = 'symmetric_link_seed_op { op_name: "seed" }\n' + spec
    pool = list(node_sets[seed_set][0]) + [b"nobody"]
    pairs = draw(hs.lists(hs.tuples(hs.sampled_from(pool), hs.sampled_from(pool),
                                    hs.integers(0, 1)), min_size=1, max_size=8))
    cutoffs = None
    if node_cutoffs is not None:
        cutoffs = [draw(hs.integers(-1, 5)) for _ in pairs]
        if draw(hs.booleans()):  # the first pair again, at another cut-off or the same
            pairs.append(pairs[0])
            cutoffs.append(draw(hs.sampled_from([cutoffs[0], cutoffs[0] + 1])))
    flags = draw(options())
    negatives = draw(hs.integers(0, 2))
    if negatives:
        self_edges = any(s == t == seed_set for s, t, *_ in edge_sets.values())
        mode = draw(hs.sampled_from(["uniform", "degree"] if self_edges else ["uniform"]))
        flags += ["--negatives", str(negatives), "--negative-sampling", mode]
    if draw(hs.booleans()):
        flags.append("--no-exclude-target-edge")
    return node_sets, edge_sets, spec, pairs, fmt, rng, seed_set, flags, cutoffs


@settings(settings.get_profile(PROFILE))
@given(link_jobs(), hs.just(1))  # worker counts: test_link_sample (a fresh process)
def test_engines_write_identical_bytes_for_link_seeds(tmp_path_factory, job, workers):
    node_sets, edge_sets, spec, pairs, fmt, rng, seed_set, flags, cutoffs = job
    if "degree" in flags and not any(
            f"edge_set_name: \"{e}\"" in spec for e, (s, t, *_r) in edge_sets.items()
            if s == t == seed_set):
        flags[flags.index("degree")] = "uniform"  # degrees come from a sampled set S -> S
    root = tmp_path_factory.mktemp("link")
    folder = str(root / "graph")
    write_graph(folder, node_sets, edge_sets, fmt, rng, link_set=seed_set)
    spec_path = str(root / "spec.pbtxt")
    with open(spec_path, "w") as f:
        f.write(spec)
    if cutoffs is None:
        seeds_path = str(root / "pairs.csv")
        with open(seeds_path, "wb") as f:
            f.write(b"source,target,label\n" + b"".join(
                b"%s,%s,%d\n" % (s, t, label) for s, t, label in pairs))
    else:  # cut-offs: the pairs table in the graph's format
        seeds_path = str(root / f"pairs.{fmt}")
        sources, targets, labels = (np.array(column) for column in zip(*pairs))
        write_table(seeds_path, pairs_layout(load_schema(folder).schema,
                                             timestamp=TimeColumn("timestamp", "int64")),
                    [PairBatch(sources.astype("S"), targets.astype("S"),
                               row_ids(0, 0, len(pairs)),
                               {"label": labels.astype(np.int64),
                                "timestamp": np.array(cutoffs, np.int64)})])
    assert_engines_agree(root, folder, spec_path, seeds_path, workers, flags)
