"""sampler.minibatch: mini-batches sampled at once, against the per-sample engine.

Differential, on the random graphs and specs of the engines' test (every strategy,
LATEST_K with cut-offs, long rows, link pairs with negatives):
- a disjoint batch holds, seed by seed, the edges and nodes of `Graph.sample`'s
  subgraph of that seed (the same draws);
- a merged batch (without cut-offs) holds the edges the per-sample engine samples when
  every seed request carries one sample id, the batch's key: each distinct node of a
  frontier sampled once, keyed by (seed, epoch, batch, op, node, position).
Then the rules of merged batches: cut-offs (every sampled edge respects the cut-off of
every seed that reached its node), link leakage over the whole batch, hop layout and
layers, and bytes that do not depend on the order of the seeds, threads or processes.
"""
import collections
import os
import pickle
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from sampler import api
from sampler.core import rng
from sampler.core.hop import sample_hop
from sampler.core.merged import batch_key, op_depths
from sampler.core.pieces import Requests
from sampler.job.job import epoch_seed
from tests.conftest import REPO_ROOT
from tests.pipelines.test_engines_agree import PROFILE, graphs, link_jobs, write_graph
from tests.sampler.api.test_api import api_options

DEMO = os.path.join(REPO_ROOT, "examples", "mag_tiny")
DEMO_SPEC = os.path.join(DEMO, "sampling_spec.pbtxt")
LINK = os.path.join(REPO_ROOT, "examples", "link_tiny")


def batch_edges(graph, batch, slot=None):
    """Counter of (edge set, source id, target id) in a batch (one seed's with `slot`)."""
    names = graph._memory.names
    found = collections.Counter()
    for name, edges in batch.edges.items():
        sources = batch.nodes[edges.source_set]
        targets = batch.nodes[edges.target_set]
        keep = np.ones(len(edges), bool)
        if slot is not None:
            keep = sources.slots[edges.sources] == slot
        found.update(zip([name] * int(keep.sum()),
                         names[edges.source_set][sources.codes[edges.sources[keep]]].tolist(),
                         names[edges.target_set][targets.codes[edges.targets[keep]]].tolist()))
    return found


def subgraph_edges(subgraph):
    found = collections.Counter()
    for name, edge_set in subgraph.edge_sets.items():
        if name.startswith("_readout"):
            continue
        adjacency = edge_set.adjacency
        sources = subgraph.node_sets[adjacency.source_name]["#id"]
        targets = subgraph.node_sets[adjacency.target_name]["#id"]
        found.update(zip([name] * len(adjacency.source),
                         [bytes(i) for i in sources[adjacency.source]],
                         [bytes(i) for i in targets[adjacency.target]]))
    return found


def batch_nodes(graph, batch, slot):
    names = graph._memory.names
    return {name: sorted(names[name][n.codes[n.slots == slot]].tolist())
            for name, n in batch.nodes.items() if (n.slots == slot).any()}


def subgraph_nodes(subgraph):
    return {name: sorted(bytes(i) for i in node_set["#id"])
            for name, node_set in subgraph.node_sets.items()
            if not name.startswith("_") and node_set.total_size}


def write(tmp_path_factory, graph, link_set=None):
    node_sets, edge_sets, spec, *_ = graph
    fmt, rng_ = graph[4], graph[5]
    root = tmp_path_factory.mktemp("minibatch")
    folder = str(root / "graph")
    write_graph(folder, node_sets, edge_sets, fmt, rng_, link_set=link_set)
    (root / "spec.pbtxt").write_text(spec)
    return folder, str(root / "spec.pbtxt")


@settings(settings.get_profile(PROFILE))
@given(graphs(), hs.sampled_from([[], ["--chunk-edges", "2"]]), hs.sampled_from([5, 2**40 + 3]))
def test_a_disjoint_batch_holds_each_seeds_subgraph(tmp_path_factory, graph, flags, seed):
    node_sets, _, spec, seeds, _, _, cutoffs = graph
    folder, spec_path = write(tmp_path_factory, graph)
    seed_set = spec.split('node_set_name: "')[1].split('"')[0]
    seeds = list(node_sets[seed_set][0]) if seeds is None else seeds
    times = None if cutoffs is None else np.array(cutoffs, np.int64)
    loaded = api.load_graph(folder, spec_path, cutoffs=times is not None, **api_options(flags))
    subgraphs = loaded.sample(seeds, seed=seed, epoch=1, cutoffs=times)
    batch = loaded.sample_merged(seeds, seed=seed, epoch=1, cutoffs=times, disjoint=True)
    assert batch.missing == subgraphs.missing
    assert batch.input_id.tolist() == subgraphs.positions.tolist()
    for slot, subgraph in enumerate(subgraphs):
        assert batch_edges(loaded, batch, slot) == subgraph_edges(subgraph)
        assert batch_nodes(loaded, batch, slot) == subgraph_nodes(subgraph)


@settings(settings.get_profile(PROFILE))
@given(graphs(), hs.sampled_from([[], ["--chunk-edges", "2"]]))
def test_a_merged_batch_samples_each_frontier_node_once(tmp_path_factory, graph, flags):
    node_sets, _, spec, seeds, _, _, cutoffs = graph
    folder, spec_path = write(tmp_path_factory, graph)
    seed_set = spec.split('node_set_name: "')[1].split('"')[0]
    seeds = list(node_sets[seed_set][0]) if seeds is None else seeds
    loaded = api.load_graph(folder, spec_path, **api_options(flags))
    batch = loaded.sample_merged(seeds, seed=7, epoch=2)
    # The reference: the per-sample engine with every seed request of one sample, the key.
    memory, plan = loaded._memory, loaded._plan
    found = np.array([s for s in seeds if s not in batch.missing], "S")
    assert len(np.unique(found)) == batch.batch_size
    key = batch_key(epoch_seed(7, 2), rng.fingerprint(np.unique(found)))
    codes = np.searchsorted(memory.names[seed_set], np.unique(found))
    reached = {plan.seed_op: Requests(np.full(len(codes), key, np.int64),
                                      np.arange(len(codes), dtype=np.int32), codes)}
    expected = collections.Counter()
    names = memory.names
    # The reference names each edge by its table row, which a hop gathers only where an
    # edge may be dropped (AdjacencyBucket.ends_in_tables): here, for every edge set.
    for adjacency in memory.adjacency.values():
        adjacency.ends_in_tables = False
    for op in plan.ops:
        drawn = sample_hop(memory.adjacency[op.edge_set],
                           Requests.concat([reached[name] for name in op.input_ops]), op,
                           epoch_seed(7, 2))
        reached[op.name] = drawn.reached()
        edges = drawn.edges
        if not len(edges):
            continue
        # Nodes a set's table lacks are left out with their edges, as the assembly does.
        kept = np.ones(len(edges), bool)
        for end, codes in ((op.source_set, edges.sources), (op.target_set, edges.targets)):
            if end in memory.node_tables:
                kept &= memory.node_tables[end].positions_of(codes) >= 0
        expected.update(set(zip([op.edge_set] * int(kept.sum()),
                                names[op.source_set][edges.sources[kept]].tolist(),
                                names[op.target_set][edges.targets[kept]].tolist(),
                                edges.rows[kept].tolist())))
    got = collections.Counter()
    for name, edges in batch.edges.items():
        rows = memory.adjacency[name].rows[edges.positions]
        got.update(zip([name] * len(edges),
                       names[edges.source_set][batch.nodes[edges.source_set].codes[
                           edges.sources]].tolist(),
                       names[edges.target_set][batch.nodes[edges.target_set].codes[
                           edges.targets]].tolist(), rows.tolist()))
    # An edge two ops drew is one edge of the batch.
    assert got == collections.Counter(set(expected.elements()))
    check_layout(batch, plan)


def check_layout(batch, plan):
    """Nodes once, by hop (their distance from the seeds); edges by hop, each from a
    node of the hop before; layers nested prefixes."""
    depth = op_depths(plan)
    assert batch.num_hops == max(depth.values())
    for name, nodes in batch.nodes.items():
        assert len(np.unique(nodes.codes)) == len(nodes)
        assert sum(nodes.num_sampled_nodes) == len(nodes)
        assert len(nodes.num_sampled_nodes) == batch.num_hops + 1
    hop_of = {name: np.repeat(np.arange(batch.num_hops + 1), n.num_sampled_nodes)
              for name, n in batch.nodes.items()}
    for name, edges in batch.edges.items():
        assert sum(edges.num_sampled_edges) == len(edges)
        hops = np.repeat(np.arange(1, batch.num_hops + 1), edges.num_sampled_edges)
        assert (hop_of[edges.source_set][edges.sources] == hops - 1).all()
        assert (hop_of[edges.target_set][edges.targets] <= hops).all()
    layers = batch.layers()
    assert len(layers) == batch.num_hops
    for layer in layers:
        for name, edges in batch.edges.items():
            count = layer.edges[name]
            assert (edges.sources[:count] < layer.dst[edges.source_set]).all()
            assert (edges.targets[:count] < layer.src[edges.target_set]).all()
    if layers:
        assert layers[-1].dst[batch.seed_set] == batch.nodes[batch.seed_set].num_sampled_nodes[0]


# --- link seeds -------------------------------------------------------------------------

@settings(settings.get_profile(PROFILE))
@given(link_jobs())
def test_link_batches_hold_each_pairs_subgraph_and_leak_no_pair_edge(tmp_path_factory, job):
    node_sets, edge_sets, spec, pairs, fmt, rng_, seed_set, flags, cutoffs = job
    if "--edge-aggregation" in flags:
        i = flags.index("--edge-aggregation")
        flags = flags[:i] + flags[i + 2:]
    if "degree" in flags and not any(
            f"edge_set_name: \"{e}\"" in spec for e, (s, t, *_r) in edge_sets.items()
            if s == t == seed_set):
        flags[flags.index("degree")] = "uniform"
    folder, spec_path = write(tmp_path_factory, (node_sets, edge_sets, spec, None, fmt, rng_),
                              link_set=seed_set)
    sources, targets, labels = (np.array(column) for column in zip(*pairs))
    sources, targets = sources.astype("S"), targets.astype("S")
    times = None if cutoffs is None else np.array(cutoffs, np.int64)
    options = api_options(flags)
    loaded = api.load_graph(folder, spec_path, cutoffs=times is not None, **options)
    features = {} if options.get("negatives") else {"label": labels.astype(np.int64)}
    subgraphs = loaded.sample_pairs(sources, targets, seed=9, cutoffs=times, features=features)
    disjoint = loaded.sample_merged_pairs(sources, targets, seed=9, cutoffs=times,
                                          features=features, disjoint=True)
    assert disjoint.edge_label_index.shape[1] == len(subgraphs)
    for slot, subgraph in enumerate(subgraphs):
        assert batch_edges(loaded, disjoint, slot) == subgraph_edges(subgraph)
    if options.get("negatives"):
        assert disjoint.edge_label.tolist() == subgraphs.labels.tolist()
    if times is not None and len(set(times.tolist())) > 1:
        with pytest.raises(api.SamplerError, match="disjoint=True"):
            loaded.sample_merged_pairs(sources, targets, seed=9, cutoffs=times,
                                       features=features)
        return
    merged = loaded.sample_merged_pairs(sources, targets, seed=9, cutoffs=times,
                                        features=features)
    ends = merged.nodes[seed_set].codes[merged.edge_label_index]
    assert (ends == disjoint.nodes[seed_set].codes[disjoint.edge_label_index]).all()
    assert merged.nodes[seed_set].num_sampled_nodes[0] == len(np.unique(ends))
    if options.get("exclude_target_edge", True):  # no edge between a pair's two ends
        pair_keys = set(zip(ends[0].tolist(), ends[1].tolist())) | set(
            zip(ends[1].tolist(), ends[0].tolist()))
        for edges in merged.edges.values():
            if edges.source_set == edges.target_set == seed_set:
                codes = merged.nodes[seed_set].codes
                assert not pair_keys & set(zip(codes[edges.sources].tolist(),
                                               codes[edges.targets].tolist()))
    check_layout(merged, loaded._plan)


# --- the rules, on the demo graphs -------------------------------------------------------

@pytest.fixture(scope="module")
def demo():
    return api.load_graph(DEMO, DEMO_SPEC)


def arrays(batch):
    """Everything a batch holds, as bytes."""
    parts = [batch.input_id.tobytes(), str(batch.batch_size).encode()]
    for name in sorted(batch.nodes):
        n = batch.nodes[name]
        parts += [name.encode(), n.codes.tobytes(), str(n.num_sampled_nodes).encode()]
    for name in sorted(batch.edges):
        e = batch.edges[name]
        parts += [name.encode(), e.sources.tobytes(), e.targets.tobytes(),
                  e.positions.tobytes(), str(e.num_sampled_edges).encode()]
    return b"|".join(parts)


def test_a_batch_is_the_same_bytes_in_threads_and_processes(demo):
    ids = demo.node_ids()[:24]
    first = arrays(demo.sample_merged(ids, seed=3, epoch=1))
    with ThreadPoolExecutor(4) as pool:
        assert set(pool.map(lambda _: arrays(demo.sample_merged(ids, seed=3, epoch=1)),
                            range(8))) == {first}
    code = ("import pickle, sys\nfrom sampler import api\n"
            f"g = api.load_graph({DEMO!r}, {DEMO_SPEC!r})\n"
            "b = g.sample_merged(g.node_ids()[:24], seed=3, epoch=1)\n"
            "sys.stdout.buffer.write(pickle.dumps(b))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True,
                          cwd=REPO_ROOT)
    assert arrays(pickle.loads(done.stdout)) == first
    # Another epoch, or another seed, draws anew.
    assert arrays(demo.sample_merged(ids, seed=3, epoch=2)) != first
    assert arrays(demo.sample_merged(ids, seed=4, epoch=1)) != first


def test_the_draws_depend_on_the_batchs_seeds_not_their_order(demo):
    ids = demo.node_ids()[:16]
    one = demo.sample_merged(ids, seed=3)
    other = demo.sample_merged(ids[::-1], seed=3)
    assert batch_edges(demo, one) == batch_edges(demo, other)
    assert one.nodes["paper"].codes[:16].tolist() == \
        other.nodes["paper"].codes[:16][::-1].tolist()  # the seeds first, in their order
    # A seed given twice is one node, at its first row.
    twice = demo.sample_merged([ids[1], ids[0], ids[1]], seed=3)
    assert twice.batch_size == 2 and twice.input_id.tolist() == [0, 1]


def test_seeds_not_in_the_graph_are_listed(demo, caplog):
    batch = demo.sample_merged(["p01", "nobody"], seed=1)
    assert batch.missing == [b"nobody"] and batch.batch_size == 1
    assert batch.input_id.tolist() == [0]


def test_a_merged_batch_takes_seeds_of_one_cutoff(tmp_path):
    """A merged batch shares nodes between its seeds, so they share one cut-off: every
    sampled edge is no later than it. Seeds of different cut-offs are refused in one
    line (disjoint batches sample each at its own, as the differential test shows)."""
    from tests.sampler.minibatch.timed import timed_graph

    folder, spec, times_of = timed_graph(tmp_path)
    graph = api.load_graph(folder, spec, cutoffs=True)
    ids = graph.node_ids()
    rng_ = np.random.default_rng(0)
    sampled = 0
    for trial, cutoff in enumerate([0, 20, 50, 99]):
        seeds = ids[rng_.choice(len(ids), 12, replace=False)]
        batch = graph.sample_merged(seeds, seed=trial, cutoffs=[cutoff] * len(seeds))
        check_layout(batch, graph._plan)
        assert batch.seed_time.tolist() == [cutoff] * 12
        for name, edges in batch.edges.items():
            assert (times_of(name, edges.positions, graph) <= cutoff).all()
            sampled += len(edges)
        later = graph.sample_merged(seeds, seed=trial, cutoffs=[cutoff + 30] * len(seeds))
        assert later.num_edges >= batch.num_edges  # more edges are eligible later
    assert sampled
    with pytest.raises(api.SamplerError, match="disjoint=True"):
        graph.sample_merged(ids[:2], cutoffs=[3, 4])
    # The call's own cut-offs decide, whichever of its seeds the graph lacks (hypothesis
    # found a call refused or not by which seeds were dropped).
    for seeds in ([ids[0], b"nobody"], [b"nobody", b"nobody either"]):
        with pytest.raises(api.SamplerError, match="disjoint=True"):
            graph.sample_merged(seeds, cutoffs=[3, 4])
    assert graph.sample_merged(ids[:2], cutoffs=[3, 4], disjoint=True).seed_time.tolist() \
        == [3, 4]


def test_induced_edges_are_refused_in_one_line():
    graph = api.load_graph(DEMO, DEMO_SPEC, edge_aggregation="node")
    with pytest.raises(api.SamplerError, match="edge_aggregation='edge'"):
        graph.sample_merged(["p01"])


def test_link_batches_of_the_demo_pairs_with_negatives():
    graph = api.load_graph(LINK, os.path.join(LINK, "sampling_spec.pbtxt"), negatives=2)
    batch = graph.sample_merged_pairs(["u0000", "u0001"], ["u0008", "u0002"], seed=1)
    assert batch.edge_label.tolist() == [1, 1, 0, 0, 0, 0]
    assert batch.input_id.tolist() == [0, 1]
    assert batch.edge_label_index.shape == (2, 6)
    ends = graph._memory.names["user"][batch.nodes["user"].codes[batch.edge_label_index]]
    assert ends[:, :2].tolist() == [[b"u0000", b"u0001"], [b"u0008", b"u0002"]]
    assert (ends[0, 2:] == np.repeat(ends[0, :2], 2)).all()  # negatives keep the source
