"""Every target of the hub attacker on a 10^4-node power-law graph (issue 32): DP-D-SGD,
AntiPGD and Muffliato-SGD (K = 2) under PNDP, user-level participation, scalar gradients
(``--gradients vector``: the package's default, gradients clipped in norm).

    python bench/mf_hub.py [--algorithms antipgd dp-d-sgd muffliato2] [--targets K]
                           [--gradients scalar|vector]
                           [--n 10000] [--T 20] [--blas-threads 2] [--record | --out FILE]

``networkx.powerlaw_cluster_graph(n, 10, 0.1, seed=1)``, row-normalised weights with self
loops, attacker node 0 (the hub, degree 187), every other node a target (``--targets K``:
the first K).  For each algorithm :func:`sparsedp.mf.distance_summary` is timed in this
process (wall and CPU seconds, the 1-minute load average before and after, peak RSS), with
the route it took (``sparsedp.mf.batched``: one shared factor for all targets), the number
of targets with a finite certified upper bound, the largest relative gap ``(upper - lower)
/ upper`` and the largest upper bound; and a calibration in the same process (one
2000 x 2000 matrix product on the same BLAS threads), since the machine may be shared.
Writes ``bench/results/mf_hub.json`` (``--record``: ``docs/figures/``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time

import networkx as nx
import numpy as np
from blas_pinning import add_blas_option, pinned_blas
from outputs import add_output_options, output_path

import sparsedp
from sparsedp.mf import antipgd, dp_d_sgd, muffliato_sgd
from sparsedp.mf.summary import distance_summary

ALGORITHMS = {"antipgd": antipgd, "dp-d-sgd": dp_d_sgd, "muffliato2": lambda: muffliato_sgd(2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--algorithms", nargs="+", choices=list(ALGORITHMS),
                    default=list(ALGORITHMS))
    ap.add_argument("--targets", type=int, default=None, help="the first K targets only")
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--T", type=int, default=20)
    ap.add_argument("--gradients", choices=("scalar", "vector"), default="scalar")
    add_output_options(ap)
    add_blas_option(ap)
    args = ap.parse_args()
    graph = nx.powerlaw_cluster_graph(args.n, 10, 0.1, seed=1)
    W = sparsedp.gossip_matrix(graph, scheme="row-normalised-self-loops")
    record = {"n": args.n, "T": args.T, "attacker": 0, "attacker_degree": graph.degree[0],
              "blas_threads": args.blas_threads, "rows": []}
    with pinned_blas(args.blas_threads):
        record["calibration_gemm_2000_s"] = _calibration()
        for name in args.algorithms:
            record["rows"].append(measure(W, name, args.T, args.targets, args.gradients))
            print(json.dumps(record["rows"][-1]), flush=True)
    output_path(args, "mf_hub.json").write_text(json.dumps(record, indent=1))
    print(json.dumps(record, indent=1))


def _calibration() -> float:
    A = np.random.default_rng(0).standard_normal((2000, 2000))
    best = np.inf
    for _ in range(3):
        start = time.perf_counter()
        A @ A
        best = min(best, time.perf_counter() - start)
    return best


def measure(W, name: str, T: int, count: int | None, gradients: str) -> dict:
    targets = list(range(1, W.shape[0] if count is None else count + 1))
    load_before = os.getloadavg()[0]
    wall, cpu = time.perf_counter(), time.process_time()
    summary = distance_summary(W, [0], T, algorithm=ALGORITHMS[name](), targets=targets,
                               gradients=gradients, progress=False)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    upper = np.array([r.upper for r in summary.results])
    lower = np.array([r.lower for r in summary.results])
    positive = upper > 0
    return {
        "algorithm": name, "gradients": gradients, "targets": len(targets),
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2), "load_before": load_before, "load_after": os.getloadavg()[0],
        "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
        "methods": sorted({r.method for r in summary.results}),
        "rows_kept": summary.results[0].solver.get("rows_kept"),
        "certified": int(np.isfinite(upper).sum()),
        "max_relative_gap": float(((upper - lower)[positive] / upper[positive]).max()),
        "max_upper": float(upper.max()),
    }


if __name__ == "__main__":
    main()
