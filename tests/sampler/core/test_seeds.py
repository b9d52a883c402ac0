"""sampler.core.seeds: seed rows become samples; the join keeps found seeds, lists the rest."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

from sampler.core import rng
from sampler.core.buckets import node_buckets, sample_buckets
from sampler.core.node_table import build_node_table, ids_only_table
from sampler.core.pieces import Requests
from sampler.core.seeds import (_GROUP_SHIFT, join_seeds, number_seeds, numbering_groups,
                                numbering_key,
                                seed_requests, seeds_from_ids, seeds_from_nodes, unique_ids)
from unigraph.columnar.batches import NodeBatch, SeedBatch, row_ids


def S(*ids):
    return np.array(ids, dtype="S")


def number_all(batch, splits=(), keys=4096):
    """Sample ids of a seed table via `keys` numbering keys, its rows cut into parts at
    `splits`."""
    parts = np.split(np.arange(len(batch)), list(splits))
    by_group = {}
    for part in parts:
        for group, rows in numbering_groups(batch.take(part), keys):
            by_group.setdefault(group, []).append(rows)
    numbered = [number_seeds(rows) for rows in by_group.values()]
    return sorted(zip(np.concatenate([r.samples for r in numbered]).tolist(),
                      np.concatenate([r.nodes for r in numbered]).tolist()))


@settings(max_examples=60, deadline=None)
@given(hs.lists(hs.sampled_from([b"a", b"b", b"p1", b"long-seed-id-0123456789", b"z"]),
                min_size=1, max_size=40), hs.randoms(use_true_random=False))
def test_sample_ids_depend_on_the_multiset_of_rows_only(ids, random):
    batch = SeedBatch(np.array(ids, "S"), row_ids(0, 0, len(ids)))
    shuffled = list(range(len(ids)))
    random.shuffle(shuffled)
    other = SeedBatch(batch.ids[shuffled], row_ids(3, 7, len(ids)))  # other files, rows
    splits = sorted(random.sample(range(1, len(ids)), min(3, len(ids) - 1))) if len(ids) > 1 \
        else []
    numbered = number_all(batch)
    assert number_all(other, splits) == numbered
    # Numbering keys (whole groups each: as many as the Beam job chooses) change nothing.
    for keys in (1, 2, 64):
        assert number_all(other, splits, keys) == numbered
    samples = [s for s, _ in numbered]
    assert len(set(samples)) == len(ids)  # one sample per row, duplicates included
    for node in set(ids):  # a seed listed k times: k consecutive ids from its own
        mine = sorted(s for s, n in numbered if n == node)
        assert mine == list(range(mine[0], mine[0] + ids.count(node)))
        assert mine[0] == number_all(SeedBatch(np.array([node], "S"), row_ids(0, 0, 1)))[0][0]


def test_a_seed_listed_once_has_the_id_of_its_content_alone():
    ids = np.array([f"n{i}".encode() for i in range(20000)])
    numbered = number_all(SeedBatch(ids, row_ids(0, 0, len(ids))))
    assert len({s for s, _ in numbered}) == len(ids)
    alone = (rng.fingerprint(ids) >> np.uint64(1)).astype(np.int64)
    by_id = dict((n, s) for s, n in numbered)
    assert [by_id[i] for i in ids.tolist()] == alone.tolist()


@settings(max_examples=100, deadline=None)
@given(hs.lists(hs.tuples(hs.integers(0, 3), hs.integers(-3, 3)), min_size=1, max_size=30))
def test_ids_are_unique_and_stay_in_their_group_when_a_group_fills_up(wanted):
    """Wanted ids crowded at the ends of numbering groups: every id is unique, lies in its
    row's group, and numbering each group alone gives the same ids."""
    wanted = np.sort(np.array([(g << _GROUP_SHIFT) + (d if d >= 0 else (1 << _GROUP_SHIFT) + d)
                               for g, d in wanted], np.int64))
    ids = unique_ids(wanted)
    group = wanted >> _GROUP_SHIFT
    assert len(set(ids.tolist())) == len(ids) and (np.diff(ids) > 0).all()
    assert ((ids >> _GROUP_SHIFT) == group).all()
    for g in set(group.tolist()):
        assert unique_ids(wanted[group == g]).tolist() == ids[group == g].tolist()


def test_every_node_is_a_seed_without_a_table():
    assert seeds_from_ids(S("a", "b")).ids.tolist() == [b"a", b"b"]
    batch = NodeBatch("p", S("a", "b"), row_ids(1, 5, 2), {})
    assert seeds_from_nodes(batch).ids.tolist() == [b"a", b"b"]


def test_seed_requests_are_keyed_by_node_bucket():
    requests = number_seeds([SeedBatch(S("a", "b", "a"), np.array([0, 1, 2], np.int64))])
    parts = list(seed_requests(requests, 4))
    assert sorted(n for _, r in parts for n in r.nodes.tolist()) == [b"a", b"a", b"b"]
    for bucket, r in parts:
        assert set(node_buckets(r.nodes, 4).tolist()) == {bucket}


def test_join_keeps_found_seeds_and_counts_the_missing():
    table = build_node_table("p", [NodeBatch("p", S("a", "b"), row_ids(0, 0, 2),
                                             {"x": np.array([1.0, 2.0])})])
    # "a" twice (two samples), "zz" not in the graph.
    requests = Requests.from_ids(np.array([10, 11, 12, 13]), S("a", "zz", "a", "b"))
    join = join_seeds(table, requests, num_shards=2)
    assert sorted(zip(join.found.samples.tolist(), join.found.nodes.tolist())) == [
        (10, b"a"), (12, b"a"), (13, b"b")]
    assert (join.stats.seeds_read, join.stats.seeds_missing) == (4, 1)
    assert join.stats.missing_seed_ids == ["zz"]
    seeds = sorted((int(s), i) for _, p in join.seeds_by_shard for s, i in zip(p.samples, p.ids))
    assert seeds == [(10, b"a"), (12, b"a"), (13, b"b")]
    for shard, piece in join.seeds_by_shard:
        assert set(sample_buckets(piece.samples, 2).tolist()) == {shard}
    # Features go once per node and shard, only to shards that hold a sample reaching it.
    for shard, features in join.features_by_shard:
        expected = sorted({i for s, i in seeds if sample_buckets(np.array([s]), 2)[0] == shard})
        assert sorted(features.ids.tolist()) == expected
        assert features.features["x"].tolist() == [{b"a": 1.0, b"b": 2.0}[i]
                                                   for i in features.ids.tolist()]


def test_join_without_features_or_seeds():
    table = ids_only_table("p", [S("a")])
    join = join_seeds(table, Requests.from_ids(np.array([1]), S("a")), num_shards=1)
    # A table without features still sends its seeds' ids: the assembly keeps only the
    # nodes a table sent.
    [(shard, piece)] = join.features_by_shard
    assert piece.ids.tolist() == [b"a"] and piece.features == {} and len(join.found) == 1
    assert join_seeds(table, join.found, 1, with_features=False).features_by_shard == []
    nothing = join_seeds(table, Requests.from_ids(np.array([1]), S("b")), num_shards=1)
    assert len(nothing.found) == 0 and nothing.seeds_by_shard == []
    assert nothing.stats.missing_seed_ids == ["b"]


def test_numbering_keys_are_powers_of_two_up_to_the_groups():
    first = np.array([0, 1 << 63, (1 << 64) - 1], np.uint64)
    assert numbering_key(first, 1).tolist() == [0, 0, 0]
    assert numbering_key(first, 2).tolist() == [0, 1, 1]
    assert numbering_key(first, 4096).tolist() == [0, 2048, 4095]
    for bad in (0, 3, 8192):
        with pytest.raises(ValueError, match="power of two up to 4096"):
            numbering_key(first, bad)
