"""Scaling of the accounting engine: wall time and peak memory against n and T.

Every configuration runs in a fresh subprocess (so peak RSS is its own), on an Erdos-Renyi
graph with average degree 20 and Metropolis weights, one observer and one non-observer
target.  Graph construction is timed separately from the query.  Writes
``docs/figures/scaling.json`` and ``docs/figures/scaling.png``.

    python bench/scaling.py                 # the default grid (about 10 minutes, 2 cores)
    python bench/scaling.py --quick         # a small grid (CI-friendly, under a minute)
    python bench/scaling.py --n 1000000 --T 1000 --methods structured   # one point
"""

from __future__ import annotations

import argparse
import json
import pathlib
import resource
import subprocess
import sys
import time

FIGURES = pathlib.Path(__file__).resolve().parents[1] / "docs" / "figures"

WORKER = r"""
import json, resource, sys, time
import numpy as np
import sparsedp
from sparsedp import large_graphs as lg
from sparsedp.gossip import gossip_matrix
from sparsedp.testing import dense_M
n, T, method, seed = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
warm = gossip_matrix(lg.erdos_renyi_large(200, 10, seed=0))
sparsedp.squared_sensitivity(warm, 1, [0], 20, exact=False)   # compile / load numba kernels
start = time.perf_counter()
graph = lg.largest_component(lg.erdos_renyi_large(n, min(20, n - 2), seed=seed))
W = gossip_matrix(graph)
build = time.perf_counter() - start
observer, target = 0, graph.n // 2
start = time.perf_counter()
record = {"n": graph.n, "T": T, "method": method, "build_seconds": build}
if method == "dense":
    M = dense_M(W, target, [observer], T)
    record["upper"] = float(np.abs(M).sum())
else:
    r = sparsedp.squared_sensitivity(W, target, [observer], T, method=method, exact=False)
    record.update(lower=r.lower, upper=r.upper, relative_gap=r.relative_gap,
                  sparse_products=r.solver.get("sparse_products"),
                  iterations=r.solver.get("iterations"))
record["query_seconds"] = time.perf_counter() - start
record["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(record))
"""

DEFAULT_GRID = [
    *[("structured", n, 1000) for n in (10**4, 10**5, 10**6)],
    *[("structured", 10**5, T) for T in (100, 300, 3000)],
    *[("matrix-free", n, 100) for n in (10**3, 10**4)],
    *[("structured", n, 100) for n in (10**3,)],
    *[("dense", n, 20) for n in (50, 100, 200)],
    *[("structured", n, 20) for n in (50, 100, 200)],
]
QUICK_GRID = [
    ("structured", 10**4, 200), ("matrix-free", 10**3, 50), ("structured", 10**3, 50),
    ("dense", 100, 20), ("structured", 100, 20),
]


def run_point(method: str, n: int, T: int, seed: int = 1, timeout: float = 1800) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", WORKER, str(n), str(T), method, str(seed)],
        capture_output=True, text=True, timeout=timeout, check=False,
    )
    if proc.returncode != 0:
        return {"n": n, "T": T, "method": method, "error": proc.stderr.strip().splitlines()[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def plot(records: list[dict], path: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_n, ax_t, ax_m) = plt.subplots(1, 3, figsize=(14, 4))
    ok = [r for r in records if "error" not in r]
    for method, marker in (("structured", "o"), ("matrix-free", "s"), ("dense", "^")):
        for T in sorted({r["T"] for r in ok if r["method"] == method}):
            rows = sorted((r for r in ok if r["method"] == method and r["T"] == T),
                          key=lambda r: r["n"])
            if len(rows) > 1:
                ax_n.plot([r["n"] for r in rows], [r["query_seconds"] for r in rows],
                          marker=marker, label=f"{method}, T={T}")
                ax_m.plot([r["n"] for r in rows], [r["peak_rss_mb"] for r in rows],
                          marker=marker, label=f"{method}, T={T}")
        for n in sorted({r["n"] for r in ok if r["method"] == method}):
            rows = sorted((r for r in ok if r["method"] == method and r["n"] == n),
                          key=lambda r: r["T"])
            if len(rows) > 1:
                ax_t.plot([r["T"] for r in rows], [r["query_seconds"] for r in rows],
                          marker=marker, label=f"{method}, n={n}")
    for ax, xlabel, ylabel in ((ax_n, "n", "query time [s]"), (ax_t, "T", "query time [s]"),
                               (ax_m, "n", "peak RSS [MB]")):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=7)
    fig.suptitle("sparsedp scaling (ER, average degree 20, Metropolis, one observer)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--n", type=int)
    parser.add_argument("--T", type=int)
    parser.add_argument("--methods", default="structured")
    parser.add_argument("--out", default=str(FIGURES / "scaling"))
    args = parser.parse_args()
    if args.n:
        grid = [(m, args.n, args.T or 1000) for m in args.methods.split(",")]
    else:
        grid = QUICK_GRID if args.quick else DEFAULT_GRID
    records = []
    for method, n, T in grid:
        start = time.perf_counter()
        record = run_point(method, n, T)
        records.append(record)
        print(json.dumps(record), f"({time.perf_counter() - start:.0f} s)", flush=True)
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"machine_cores": len(__import__("os").sched_getaffinity(0)),
            "command": " ".join(sys.argv), "records": records}
    out.with_suffix(".json").write_text(json.dumps(meta, indent=1))
    plot(records, out.with_suffix(".png"))
    print("peak RSS of this driver:",
          resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024, "MB")


if __name__ == "__main__":
    main()
