"""What a bandwidth-reducing node order gains on the sparse products (issue 18, scope 2).

For each graph the gossip matrix W (Metropolis) is renumbered by reverse Cuthill-McKee
(``scipy.sparse.csgraph.reverse_cuthill_mckee``) and by decreasing degree, and the products
the engine makes are timed on each order in the same process, interleaved, best of
``--rounds``: one scipy ``W @ x`` (the calibration), the engine's fused two-column product
(``csr_spmm_fused_pair``, the single-pair structured path) and the same kernel on one
thread.  Ratios are against the original order in the same round, so the machine's drift
cancels.  Graphs: Erdos-Renyi and Chung-Lu (power law, exponent 2.5) from
:mod:`sparsedp.graphs.large`, average degree 20, node ids in random order as generated.

    python bench/ordering.py                 # n = 10^6, writes bench/results/ordering.json
    python bench/ordering.py --n 100000 --rounds 3
    python bench/ordering.py --record        # writes docs/figures/ordering.json

BLAS is pinned to ``--blas-threads`` threads (default 1) for the whole run.
"""

from __future__ import annotations

import argparse
import json
import time

import numba
import numpy as np
from blas_pinning import add_blas_option, pinned_blas
from outputs import add_output_options, output_path
from scipy.sparse.csgraph import reverse_cuthill_mckee

from sparsedp import gossip_matrix
from sparsedp.graphs import large
from sparsedp.linalg import _numba_kernels as kernels_numba
from sparsedp.linalg.kernels import _chunks


def orders(W) -> dict:
    """Each order as a permutation of the rows (new position -> old row) and its build time."""
    out = {"original": (np.arange(W.shape[0]), 0.0)}
    start = time.perf_counter()
    out["rcm"] = (reverse_cuthill_mckee(W, symmetric_mode=True), time.perf_counter() - start)
    start = time.perf_counter()
    out["degree"] = (np.argsort(-np.diff(W.indptr), kind="stable"), time.perf_counter() - start)
    return out


def permuted(W, p):
    P = W[p][:, p].tocsr()
    P.sort_indices()
    return P


def bandwidth(W) -> float:
    """Mean |i - j| over the stored entries, relative to n."""
    rows = np.repeat(np.arange(W.shape[0]), np.diff(W.indptr))
    return float(np.abs(rows - W.indices).mean() / W.shape[0])


def timings(matrices: dict, rounds: int) -> dict:
    n = next(iter(matrices.values())).shape[0]
    x = np.random.default_rng(0).random(n)
    X = np.ascontiguousarray(np.random.default_rng(1).random((n, 2)))
    Y = np.empty_like(X)
    best = {name: {"matvec": np.inf, "fused_pair": np.inf, "fused_pair_1thread": np.inf}
            for name in matrices}
    threads = numba.get_num_threads()
    for _ in range(rounds):
        for name, M in matrices.items():
            for key, one_thread in (("matvec", None), ("fused_pair", False),
                                    ("fused_pair_1thread", True)):
                if one_thread:
                    numba.set_num_threads(1)
                start = time.perf_counter()
                if key == "matvec":
                    M @ x
                else:
                    kernels_numba.csr_spmm_fused_pair(M.indptr, M.indices, M.data, X, Y, 0.5,
                                                      _chunks(n))
                best[name][key] = min(best[name][key], time.perf_counter() - start)
                numba.set_num_threads(threads)
    return best


def run(n: int, rounds: int, blas_threads: int) -> list[dict]:
    records = []
    for name, make in (("erdos-renyi", large.erdos_renyi_large),
                       ("chung-lu", large.chung_lu_large)):
        graph = large.largest_component(make(n, 20, seed=1))
        W = gossip_matrix(graph).copy()
        perms = orders(W)
        matrices = {order: (W if order == "original" else permuted(W, p))
                    for order, (p, _) in perms.items()}
        best = timings(matrices, rounds)
        for order, times in best.items():
            records.append({
                "graph": name, "n": graph.n, "nnz": int(W.nnz), "order": order,
                "order_seconds": perms[order][1], "mean_relative_bandwidth":
                bandwidth(matrices[order]), **{f"{k}_seconds": v for k, v in times.items()},
                **{f"{k}_gain": best["original"][k] / v for k, v in times.items()},
                "blas_threads": blas_threads,
            })
            print(json.dumps(records[-1]), flush=True)
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10**6)
    parser.add_argument("--rounds", type=int, default=5)
    add_output_options(parser)
    add_blas_option(parser)
    args = parser.parse_args()
    with pinned_blas(args.blas_threads):
        records = run(args.n, args.rounds, args.blas_threads)
    output_path(args, "ordering.json").write_text(json.dumps(records, indent=1) + "\n")


if __name__ == "__main__":
    main()
