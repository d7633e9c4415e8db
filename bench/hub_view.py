"""The neighbourhood view of a hub (issue 35): one certified query with the highest-degree
node of a Chung-Lu graph (power-law exponent 2.3, average degree 20) as the observer, next to
the same query with a degree-20 observer and with the highest-degree node of an Erdos-Renyi
twin (same n and edge count), in one process: CPU seconds as ratios, wall seconds, the estimate
(:func:`sparsedp.estimate_cost`) and the peak resident memory after each query.

    python bench/hub_view.py --n 10000 --T 100            # one BLAS thread (--blas-threads)
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import numpy as np
from blas_pinning import add_blas_option, pinned_blas
from outputs import add_output_options, output_path

import sparsedp
from sparsedp.gossip.views import closed_neighbourhood
from sparsedp.graphs import large


def query(W, observer: int, T: int) -> dict:
    """Estimate, then solve; a target outside the observed set, of median degree."""
    degrees = np.diff(W.indptr) - 1
    seen = set(closed_neighbourhood(W, [observer]).tolist())
    outside = [v for v in np.argsort(degrees, kind="stable") if int(v) not in seen]
    target = int(outside[len(outside) // 2])
    plan = sparsedp.estimate_cost(W, target, [observer], T, view="neighbourhood")
    start, wall_start = time.process_time(), time.perf_counter()
    r = sparsedp.squared_sensitivity(W, target, [observer], T, view="neighbourhood",
                                     progress=False)
    cpu, wall = time.process_time() - start, time.perf_counter() - wall_start
    return {"observer": observer, "degree": int(degrees[observer]), "target": target,
            "method": r.method, "cpu_seconds": cpu, "wall_seconds": wall,
            "lower": r.lower, "upper": r.upper,
            "relative_gap": r.relative_gap, "certified": r.solver.get("upper_certified"),
            "iterations": r.solver.get("iterations"),
            "preconditioner": r.solver.get("preconditioner"),
            "estimate": {k: plan[k] for k in ("method", "memory_bytes", "seconds")},
            "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--T", type=int, default=100)
    add_output_options(parser)
    add_blas_option(parser)
    args = parser.parse_args()
    chung_lu = large.largest_component(large.chung_lu_large(args.n, 20, exponent=2.3, seed=1))
    W = sparsedp.gossip_matrix(chung_lu)
    degrees = np.diff(W.indptr) - 1
    n, edges = W.shape[0], chung_lu.num_edges
    er = large.largest_component(large.erdos_renyi_large(n, 2 * edges / n, seed=1))
    W_er = sparsedp.gossip_matrix(er)
    with pinned_blas(args.blas_threads):
        rows = {
            "chung-lu hub": query(W, int(degrees.argmax()), args.T),
            "chung-lu degree 20": query(W, int(np.flatnonzero(degrees == 20)[0]), args.T),
            "erdos-renyi hub": query(W_er, int((np.diff(W_er.indptr) - 1).argmax()), args.T),
        }
    base = rows["erdos-renyi hub"]["cpu_seconds"]
    for row in rows.values():
        row["ratio_to_er"] = row["cpu_seconds"] / base
    record = json.dumps({"n": n, "edges": edges, "T": args.T, "queries": rows}, indent=1)
    print(record)
    output_path(args, "hub_view.json").write_text(record)


if __name__ == "__main__":
    main()
