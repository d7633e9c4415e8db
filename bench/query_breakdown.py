"""Where a repeated single-pair query spends its time, as multiples of one scipy ``W @ x``.

One structured query (observer 0, target n/2, ``truncation_rtol = 1e-7`` unless given) on a locked
Metropolis W, then three more (``--repeats``) on the same W, each profiled: its time, the time
inside the sparse product kernels, and the rest (dense T x T work and bookkeeping; no pass over
W, see ``tests/test_matrix_facts.py``), each as a ratio to one ``W @ x`` timed just before it
(best of 5) in the same process (issue 18), on ``--blas-threads`` BLAS threads (default 1).
The rows go to ``bench/results/query_breakdown.json`` (``--record``: ``docs/figures/``).

    python bench/query_breakdown.py --n 1000000 --T 1000
    python bench/query_breakdown.py --n 1000000 --T 1000 --graph chung-lu
    python bench/query_breakdown.py --n 1000000 --T 1000 --truncation-rtol 5e-7  # gap <= 1e-6
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import time

import numpy as np
from blas_pinning import add_blas_option, pinned_blas
from outputs import add_output_options, output_path
from timing import matvec_seconds

import sparsedp
from sparsedp.graphs import large

GENERATORS = {"erdos-renyi": large.erdos_renyi_large, "chung-lu": large.chung_lu_large}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10**6)
    parser.add_argument("--T", type=int, default=1000)
    parser.add_argument("--graph", choices=sorted(GENERATORS), default="erdos-renyi")
    parser.add_argument("--truncation-rtol", type=float, default=1e-7)
    parser.add_argument("--repeats", type=int, default=3, help="profiled queries after the first")
    add_output_options(parser)
    add_blas_option(parser)
    args = parser.parse_args()
    with pinned_blas(args.blas_threads):
        rows = breakdown(args)
    output_path(args, "query_breakdown.json").write_text(json.dumps(rows, indent=1) + "\n")


def breakdown(args: argparse.Namespace) -> list[dict]:
    """One row per profiled query, each printed as it is measured."""
    graph = large.largest_component(GENERATORS[args.graph](args.n, 20, seed=1))
    W = sparsedp.gossip_matrix(graph)
    x = np.random.default_rng(0).random(W.shape[0])

    def query():
        return sparsedp.squared_sensitivity(W, graph.n // 2, [0], args.T, exact=False,
                                            truncation_rtol=args.truncation_rtol, progress=False)

    start = time.perf_counter()
    query()
    first = time.perf_counter() - start
    rows = []
    for _ in range(args.repeats):
        calibration = matvec_seconds(W, x)
        profile = cProfile.Profile()
        start = time.perf_counter()
        profile.enable()
        result = query()
        profile.disable()
        total = time.perf_counter() - start
        stats = pstats.Stats(profile).stats
        products = sum(v[2] for k, v in stats.items()
                       if "_numba_kernels" in k[0] and ("spmm" in k[2] or "propagate" in k[2]))
        rows.append({
            "graph": args.graph, "n": int(W.shape[0]), "T": args.T,
            "truncation_rtol": args.truncation_rtol, "first_seconds": first,
            "query_seconds": total, "matvec_seconds": calibration,
            "query_per_matvec": total / calibration, "products_seconds": products,
            "products_per_matvec": products / calibration,
            "rest_per_matvec": (total - products) / calibration,
            "sparse_products": result.solver.get("sparse_products"),
            "relative_gap": result.relative_gap, "blas_threads": args.blas_threads})
        print(json.dumps(rows[-1]), flush=True)
    return rows


if __name__ == "__main__":
    main()
