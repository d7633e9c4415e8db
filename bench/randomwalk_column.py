"""One column of the log-Green matrix L = -log(I - W + J/n) on a 10^6-node graph.

Erdos-Renyi graph (``erdos_renyi_large``, average degree 20, giant component), Metropolis
weights; one source, all receivers.  Times the spectral enclosure (Gershgorin + Lanczos) and
each column method separately, reports the error bounds, and checks that the methods agree
within the sum of their bounds.  Graph construction is not timed with the query.  Writes
``bench/results/randomwalk_column.json`` (``--record``: ``docs/figures/``); BLAS runs on
``--blas-threads`` threads (default 1).

    python bench/randomwalk_column.py                       # n = 10^6 (the acceptance size)
    python bench/randomwalk_column.py --n 100000 --methods chebyshev
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
from blas_pinning import add_blas_option, pinned_blas
from outputs import add_output_options, output_path

from sparsedp.graphs import large as lg
from sparsedp.graphs.weights import gossip_matrix
from sparsedp.randomwalk.log_green import log_green_columns, spectral_interval


def measure(n: int, degree: float, methods: list[str], tol: float, seed: int) -> dict:
    start = time.perf_counter()
    graph = lg.largest_component(lg.erdos_renyi_large(n, degree, seed=seed))
    W = gossip_matrix(graph)
    build = time.perf_counter() - start
    source = 0
    start = time.perf_counter()
    interval = spectral_interval(W)
    t_interval = time.perf_counter() - start
    record = {"n": graph.n, "nnz_W": int(W.nnz), "average_degree": 2 * graph.num_edges / graph.n,
              "build_seconds": build, "interval": [interval.lower, interval.upper],
              "interval_how": interval.how, "interval_seconds": t_interval, "tol": tol,
              "cpu_count": os.cpu_count(), "methods": {}}
    print(f"n = {graph.n}, nnz(W) = {W.nnz}, built in {build:.1f} s; interval "
          f"[{interval.lower:.6g}, {interval.upper:.6g}] in {t_interval:.1f} s", flush=True)
    columns = {}
    for method in methods:
        start = time.perf_counter()
        col = log_green_columns(W, [source], method=method, tol=tol, interval=interval)
        seconds = time.perf_counter() - start
        columns[method] = (col.columns[:, 0], float(col.error_bound[0]))
        details = {k: v for k, v in col.details.items()
                   if k in ("degree", "steps", "nodes", "matvecs", "preconditioned")}
        record["methods"][method] = {
            "seconds": seconds, "total_seconds_with_interval": seconds + t_interval,
            "error_bound": float(col.error_bound[0]), "details": details,
            "L_ss": float(col.columns[source, 0]),
            "max_offdiag": float(np.max(np.delete(col.columns[:, 0], source)))}
        print(f"{method:10s} {seconds:6.1f} s (+ interval {t_interval:.1f} s), error bound "
              f"{col.error_bound[0]:.3g}, {details}", flush=True)
    names = list(columns)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            diff = float(np.linalg.norm(columns[a][0] - columns[b][0]))
            ok = diff <= columns[a][1] + columns[b][1]
            record[f"difference_{a}_{b}"] = {"norm": diff, "within_bounds": ok}
            print(f"||{a} - {b}|| = {diff:.3g} (sum of bounds "
                  f"{columns[a][1] + columns[b][1]:.3g}): {'ok' if ok else 'DISAGREE'}")
    return record


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--degree", type=float, default=20.0)
    parser.add_argument("--methods", nargs="+", default=["chebyshev", "quadrature"])
    parser.add_argument("--tol", type=float, default=1e-8)
    parser.add_argument("--seed", type=int, default=0)
    add_output_options(parser)
    add_blas_option(parser)
    args = parser.parse_args()
    with pinned_blas(args.blas_threads):
        record = measure(args.n, args.degree, args.methods, args.tol, args.seed)
    record["blas_threads"] = args.blas_threads
    output_path(args, "randomwalk_column.json").write_text(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
