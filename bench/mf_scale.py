"""One matrix-factorisation query at scale (issue 14): DP-D-SGD under PNDP, user-level
participation, vector gradients, one (attacker, target) pair.

    python bench/mf_scale.py [--n 100000] [--T 1000] [--record | --out FILE.json]

Erdos-Renyi graph with average degree 20 (largest component, the ``bench/scaling.py``
generator), Metropolis weights, attacker node 0, the first target at hop distance 2.  Prints
and writes a JSON record: wall time of ``sparsedp.mf.mf_sensitivity`` (the issue asks
<= 60 s and <= 8 GB with a certified relative gap <= 1e-6 at n = 10^5, T = 1000), the
interval, its relative gap, the bound that gives each end, peak RSS and one scipy ``W @ x``
on the same W as a calibration, on ``--blas-threads`` BLAS threads (default 1), to
``bench/results/mf_scale.json`` (``--record``: ``docs/figures/``).
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

import sparsedp
from sparsedp.graphs import large as lg
from sparsedp.mf import mf_sensitivity


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--T", type=int, default=1000)
    add_output_options(ap)
    add_blas_option(ap)
    args = ap.parse_args()
    with pinned_blas(args.blas_threads):
        record = measure(args.n, args.T)
    record["blas_threads"] = args.blas_threads
    output_path(args, "mf_scale.json").write_text(json.dumps(record, indent=1))
    print(json.dumps(record, indent=1))


def measure(n: int, T: int) -> dict:
    warm = sparsedp.gossip_matrix(lg.erdos_renyi_large(300, 10, seed=0))
    mf_sensitivity(warm, 5, [0], 20, progress=False)  # compile / load the kernels
    graph = lg.largest_component(lg.erdos_renyi_large(n, 20, seed=1))
    W = sparsedp.gossip_matrix(graph)
    x = np.random.default_rng(0).standard_normal(W.shape[0])
    matvec = min(_seconds(lambda: W @ x) for _ in range(5))
    hops = shortest_path(W, unweighted=True, indices=0)
    target = int(np.flatnonzero(hops == 2)[0])
    start = time.perf_counter()
    r = mf_sensitivity(W, target, [0], T, progress=False)
    seconds = time.perf_counter() - start
    lower = max((b for b in r.bounds if b.kind in ("lower", "exact")), key=lambda b: b.value)
    upper = min((b for b in r.bounds if b.kind == "certified upper"), key=lambda b: b.value)
    return {
        "n": W.shape[0], "T": T, "nnz": int(W.nnz), "attacker": 0, "target": target,
        "seconds": seconds, "matvec_seconds": matvec, "over_matvec": seconds / matvec,
        "lower": r.lower, "upper": r.upper, "relative_gap": (r.upper - r.lower) / r.upper,
        "lower_from": lower.name, "upper_from": upper.name, "method": r.method,
        "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
    }


def _seconds(f) -> float:
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
