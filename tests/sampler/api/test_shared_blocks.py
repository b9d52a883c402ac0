"""sampler.api.shared_blocks: a block travels with its descriptor once, then by number;
it is reused only when no view of its batch is left; retired blocks (dropped from a full
pool, or a worker's at its end) are let go in the main process."""
import gc
import pickle
from multiprocessing.reduction import ForkingPickler

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from sampler.api import shared_blocks  # noqa: E402
from sampler.api.torch_loader import Packed  # noqa: E402


@pytest.fixture
def pool(monkeypatch):
    """A pool of this process's own, and an empty registry."""
    monkeypatch.setattr(shared_blocks, "_MAPPED", {})
    blocks = shared_blocks.Blocks()
    monkeypatch.setattr(shared_blocks.Blocks, "_of_process", blocks)
    return blocks


def items(seed: int):
    rng = np.random.default_rng(seed)
    return [("paper", "x", rng.random((30, 4), dtype=np.float32)),
            ("paper", "num_nodes", 30),
            (("paper", "cites", "paper"), "edge_index", rng.integers(0, 30, (2, 50))),
            (None, "empty", np.zeros((0, 3), np.int64))]


def check(got, expected):
    assert [(k, a) for k, a, _ in got] == [(k, a) for k, a, _ in expected]
    for (_, _, value), (_, _, want) in zip(got, expected):
        if isinstance(want, np.ndarray):
            assert value.dtype == want.dtype and np.array_equal(value, want)
        else:
            assert value == want


def test_a_block_goes_by_number_once_the_main_process_has_it(pool):
    first = ForkingPickler.dumps(Packed(items(0)))
    received = pickle.loads(first)
    check(received.unpack(), items(0))
    [block] = pool._blocks
    assert block.header[0] == shared_blocks.IN_USE
    del received
    gc.collect()
    assert block.header[0] == shared_blocks.KNOWN
    again = ForkingPickler.dumps(Packed(items(1)))  # the same block, by number
    assert pool._blocks == [block] and block.known
    assert len(again) < len(first)
    received = pickle.loads(again)
    check(received.unpack(), items(1))
    assert received.unpack()[0][2].base is not None  # a view of the block, no copy


def test_a_kept_batch_keeps_its_block(pool):
    kept = pickle.loads(ForkingPickler.dumps(Packed(items(0)))).unpack()[0][2][3:]
    gc.collect()
    second = pickle.loads(ForkingPickler.dumps(Packed(items(1))))
    assert len(pool._blocks) == 2  # the first block still in use: another one
    assert np.array_equal(kept, items(0)[0][2][3:])
    check(second.unpack(), items(1))


def test_retired_blocks_are_let_go(pool, monkeypatch):
    monkeypatch.setattr(shared_blocks, "POOL", 2)
    held = [pickle.loads(ForkingPickler.dumps(Packed(items(i)))) for i in range(3)]
    assert len(pool._blocks) == 2 and len(shared_blocks._MAPPED) == 3  # the third unpooled
    del held
    gc.collect()
    assert set(shared_blocks._MAPPED) == {b.key for b in pool._blocks}  # the third let go
    # A free block of a full pool is dropped (retired) for a larger one.
    big = [("paper", "x", np.ones(100_000, np.float32))]
    check(pickle.loads(ForkingPickler.dumps(Packed(big))).unpack(), big)
    gc.collect()
    assert len(pool._blocks) == 2
    assert set(shared_blocks._MAPPED) == {b.key for b in pool._blocks}
    # A worker's end retires all its blocks.
    shared_blocks._retire(pool._blocks)
    shared_blocks._prune()
    assert shared_blocks._MAPPED == {}


def test_an_unknown_block_is_one_line():
    with pytest.raises(Exception, match="does not have") as info:
        shared_blocks._mapped((1, 99), None)
    assert "\n" not in str(info.value)


def _settle_in_child(connection, entry: str):
    """In a forked child: the freeze count before settling (through `entry`), after, and
    after settling again with new objects made meanwhile."""
    settle = {"settle_worker": shared_blocks.settle_worker,
              "the pool": shared_blocks.Blocks.of_process}[entry]
    before = gc.get_freeze_count()
    settle()
    settled = gc.get_freeze_count()
    made = [[i] for i in range(1000)]  # tracked objects a second freeze would count
    settle()
    connection.send((before, settled, gc.get_freeze_count(), len(made)))


@pytest.mark.parametrize("entry", ["settle_worker", "the pool"])
def test_a_worker_freezes_what_it_inherited_once(entry):
    """settle_worker (which a worker's pool of blocks calls when first made: the
    mini-batch loaders' workers) freezes the objects a forked worker holds (the
    parent's, which Python's full collections would otherwise walk), once per process:
    a process forked from this one settles anew, and this one is left as it was."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    ours = gc.get_freeze_count()
    for _ in range(2):  # each child settles for itself
        receiving, sending = context.Pipe(duplex=False)
        child = context.Process(target=_settle_in_child, args=(sending, entry))
        child.start()
        before, settled, again, made = receiving.recv()
        child.join(timeout=60)
        assert child.exitcode == 0
        assert before == ours and settled > max(before, 10_000)
        assert again < settled + made  # not frozen again: the new lists are not counted
    assert gc.get_freeze_count() == ours  # the parent's objects are not frozen here
