"""Times sampler.core.strategies.sample_edges on a synthetic power-law CSR.

    python -m pipelines.bench.strategy_benchmark [--queries 200000] [--k 8] [--profile]

The CSR has `--rows` ordinary rows with power-law degrees (discrete Pareto,
mean about 20) plus `--hubs` rows of `--hub-degree` edges, log-normal weights.
Queries pick an ordinary row uniformly, except a share `--hub-share` that go to
the hubs (many samples reaching one hub is the case the hub path exists for).
Prints, per strategy, the best of `--repeat` runs: queries/s and sampled edges/s.
"""
from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import numpy as np

from sampler.core import rng
from sampler.plan.sampling_spec_pb2 import RANDOM_UNIFORM, RANDOM_WEIGHTED, TOP_K
from sampler.core.strategies import sample_edges

STRATEGIES = {"TOP_K": TOP_K, "RANDOM_UNIFORM": RANDOM_UNIFORM,
              "RANDOM_WEIGHTED": RANDOM_WEIGHTED}


def make_csr(rows: int, hubs: int, hub_degree: int, seed: int):
    generator = np.random.default_rng(seed)
    # numpy's pareto(2) is Lomax(alpha=2): mean 1, power-law tail P(X > x) ~ x**-2.
    degrees = np.floor(20 * generator.pareto(2.0, size=rows)).astype(np.int64) + 1
    degrees = np.concatenate([degrees, np.full(hubs, hub_degree, dtype=np.int64)])
    row_splits = np.concatenate([[0], np.cumsum(degrees)]).astype(np.int64)
    weights = generator.lognormal(0.0, 1.0, size=int(row_splits[-1]))
    return row_splits, weights


def make_queries(rows: int, hubs: int, n: int, hub_share: float, seed: int):
    generator = np.random.default_rng(seed + 1)
    on_hub = generator.random(n) < hub_share
    query_rows = np.where(on_hub, rows + generator.integers(0, max(hubs, 1), size=n),
                          generator.integers(0, rows, size=n)).astype(np.int64)
    if hubs == 0:
        query_rows = generator.integers(0, rows, size=n).astype(np.int64)
    samples = generator.integers(0, 1 << 40, size=n).astype(np.int64)
    node_ids = np.char.add(b"node-", query_rows.astype("S"))
    return query_rows, samples, rng.fingerprint(node_ids)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=200_000)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--hubs", type=int, default=3)
    parser.add_argument("--hub-degree", type=int, default=1_000_000)
    parser.add_argument("--hub-share", type=float, default=0.02)
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--strategy", choices=sorted(STRATEGIES), action="append")
    parser.add_argument("--profile", action="store_true", help="cProfile one run per strategy")
    args = parser.parse_args(argv)

    row_splits, weights = make_csr(args.rows, args.hubs, args.hub_degree, args.seed)
    query_rows, samples, nodes = make_queries(args.rows, args.hubs, args.queries,
                                              args.hub_share, args.seed)
    degrees = np.diff(row_splits)
    print(f"CSR: {len(degrees):,} rows, {row_splits[-1]:,} edges, mean degree of ordinary rows "
          f"{degrees[:args.rows].mean():.1f}, max {degrees[:args.rows].max():,}; "
          f"{args.queries:,} queries ({np.sum(query_rows >= args.rows):,} on hubs), k={args.k}")

    for name in args.strategy or list(STRATEGIES):
        def once():
            return sample_edges(STRATEGIES[name], row_splits=row_splits, weights=weights,
                                query_rows=query_rows, query_samples=samples, query_nodes=nodes,
                                k=args.k, seed=args.seed, op_salt=rng.name_salt(name))
        best = float("inf")
        for _ in range(args.repeat):
            start = time.perf_counter()
            queries, _ = once()
            best = min(best, time.perf_counter() - start)
        print(f"{name:16s} {best * 1e3:8.1f} ms  {args.queries / best:12,.0f} queries/s  "
              f"{len(queries) / best:12,.0f} edges/s  ({len(queries):,} edges)")
        if args.profile:
            profiler = cProfile.Profile()
            profiler.runcall(once)
            pstats.Stats(profiler).sort_stats("tottime").print_stats(12)


if __name__ == "__main__":
    main()
