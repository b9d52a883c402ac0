"""Loader runs in a fresh interpreter, for the loader tests: a test process may have
loaded gRPC (Beam's tests, in the same pytest worker), where the loaders do not fork
(sampler.api.loader.worker_context), so their workers are tested where they would run.

    python -m tests.sampler.torch.loader_runs '{"graph": ..., "spec": ..., "runs": [...]}'

prints, per run (the loader's keyword arguments, plus "kind" and "input", "passes", and
optionally per pass "epochs" (the epoch set_epoch names first, or null) and "take" (how
many batches the pass takes before it stops, or null for all)), the digest of every batch
of every pass, as JSON."""
import hashlib
import json
import sys


def digest(data) -> str:
    """A hash of everything a HeteroData holds (every store, key and tensor's bytes)."""
    import torch

    h = hashlib.sha256()
    for store in sorted(data.stores, key=lambda s: str(getattr(s, "_key", None))):
        for key in sorted(store.keys()):
            value = store[key]
            h.update(f"{getattr(store, '_key', None)}|{key}|".encode())
            if torch.is_tensor(value):
                h.update(str(value.dtype).encode() + str(tuple(value.shape)).encode())
                h.update(value.contiguous().numpy().tobytes())
            else:
                h.update(repr(value).encode())
    return h.hexdigest()


def main(argv) -> int:
    from sampler import api
    from sampler.torch import LinkNeighborLoader, NeighborLoader

    config = json.loads(argv[0])
    graph = api.load_graph(config["graph"], config["spec"], **config.get("load", {}))
    results = []
    for run in config["runs"]:
        run = dict(run)
        kind, passes, given = run.pop("kind", "node"), run.pop("passes", 1), run.pop("input")
        epochs, take = run.pop("epochs", [None] * passes), run.pop("take", [None] * passes)
        loader = (NeighborLoader(graph, given, **run) if kind == "node"
                  else LinkNeighborLoader(graph, given, **run))
        digests = []
        for epoch, count in zip(epochs, take):
            if epoch is not None:
                loader.set_epoch(epoch)
            digests.append([])
            for data in loader:
                if count is not None and len(digests[-1]) == count:
                    break
                digests[-1].append(digest(data))
        results.append({"len": len(loader), "passes": digests})
    print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
