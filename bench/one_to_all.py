"""One observer against every target of a large graph (issue 16), against one single-pair
query on the same graph, in the same process.

    python bench/one_to_all.py [--n 1000000] [--T 1000] [--record | --out FILE.json]

Erdos-Renyi graph with average degree 20 (largest component, the ``bench/scaling.py``
generator), Metropolis weights, observer node 0.  Times, in this order on the same locked W:
one ``W @ x`` (calibration, best of 5), one single-pair query
``squared_sensitivity(W, target, [0], T)`` for a target at hop distance 2 (the default
truncation of the structured path), then ``privacy_map(W, observers=[0], targets="all", T,
upper="none")`` (certified c = 1 lower bounds for every target, from truncated lags:
:mod:`sparsedp.gossip.one_to_all`), then both again (the machine's speed drifts: the ratio
is the best map time over the best single-query time), all on ``--blas-threads`` BLAS
threads (default 1).  Prints and writes a JSON record (``bench/results/one_to_all.json``;
``--record``: ``docs/figures/``): the times, their ratio (the issue asks <= 3), peak RSS,
and whether the map's lower bound at the single query's target lies below that query's
certified upper bound.
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import numpy as np
from blas_pinning import add_blas_option, pinned_blas
from outputs import add_output_options, output_path
from scipy.sparse.csgraph import shortest_path
from timing import matvec_seconds, timed

import sparsedp
from sparsedp.gossip.one_to_all import one_to_all
from sparsedp.graphs import large as lg


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--T", type=int, default=1000)
    add_output_options(ap)
    add_blas_option(ap)
    args = ap.parse_args()
    with pinned_blas(args.blas_threads):
        record = measure(args.n, args.T)
    record["blas_threads"] = args.blas_threads
    output_path(args, "one_to_all.json").write_text(json.dumps(record, indent=1))
    print(json.dumps(record, indent=1))


def measure(n: int, T: int) -> dict:
    warm = sparsedp.gossip_matrix(lg.erdos_renyi_large(300, 10, seed=0))
    sparsedp.squared_sensitivity(warm, 1, [0], 50, exact=False)  # compile / load kernels
    sparsedp.privacy_map(warm, [0], "all", T=50, upper="none")
    one_to_all(warm, 0, 50)  # the one-column kernel
    start = time.perf_counter()
    graph = lg.largest_component(lg.erdos_renyi_large(n, 20, seed=1))
    W = sparsedp.gossip_matrix(graph)
    build = time.perf_counter() - start
    x = np.random.default_rng(0).standard_normal(W.shape[0])
    matvec = matvec_seconds(W, x)
    hops = shortest_path(W, unweighted=True, indices=0)
    target = int(np.flatnonzero(hops == 2)[0])
    single, r = timed(lambda: sparsedp.squared_sensitivity(W, target, [0], T, exact=False))
    every, m = timed(lambda: sparsedp.privacy_map(W, [0], "all", T=T, upper="none"))
    again, _ = timed(lambda: sparsedp.squared_sensitivity(W, target, [0], T, exact=False))
    every_again, _ = timed(lambda: sparsedp.privacy_map(W, [0], "all", T=T,
                                                        upper="none"))
    low = np.asarray(m.columns["lower"], dtype=np.float64)
    return {
        "n": W.shape[0], "T": T, "nnz": int(W.nnz), "build_seconds": build,
        "matvec_seconds": matvec, "single_pair_seconds": single,
        "single_pair_again_seconds": again, "one_to_all_seconds": every,
        "one_to_all_again_seconds": every_again,
        "ratio_to_single_pair": min(every, every_again) / min(single, again),
        "one_to_all_over_matvec": min(every, every_again) / matvec,
        "truncated_lags": m.info["truncated_lags"],
        "sparse_products": m.info["sparse_matrix_vector_products"],
        "single_pair": {"target": target, "lower": r.lower, "upper": r.upper},
        "map_lower_at_that_target": float(low[target]),
        "map_lower_within_single_interval": bool(low[target] <= r.upper),
        "lower_min_mean_max": [float(low.min()), float(low.mean()), float(low.max())],
        "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
    }


if __name__ == "__main__":
    main()
