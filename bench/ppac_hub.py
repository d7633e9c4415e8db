"""PPAC leakage with the highest-degree node as attacker (issue 35): the hub of
``networkx.powerlaw_cluster_graph(n, 10, 0.1)`` (bench/realistic.py's graph, its ``--seed``)
towards every other node at horizon t, next to the hub of its Erdos-Renyi twin (same n and
edge count), in one process: CPU and wall seconds, the CPU ratio to the twin, the time
estimate the progress bar shows, the basis width and the peak resident memory after each.

    python bench/ppac_hub.py --n 10000 --horizon 10                # one BLAS thread
    python bench/ppac_hub.py --n 10000 --horizon 10 --blas-threads 2

The progress bar (``progress="always"``) goes to stderr, as a user sees it.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import time

import numpy as np
from blas_pinning import add_blas_option, pinned_blas
from outputs import add_output_options, output_path
from realistic import er_twin, powerlaw_cluster

import sparsedp
from sparsedp.ppac import random_designated


def hub_leakage(graph, horizon: int, blas_threads: int) -> dict:
    """Leakage of the hub of ``graph`` towards every other node, timed."""
    layout = sparsedp.ppac_layout(graph, random_designated(graph, seed=0))
    W = sparsedp.laplacian_consensus_matrix(graph)
    hub = int(np.argmax(graph.degrees))
    start, wall_start = time.process_time(), time.perf_counter()
    r = sparsedp.ppac_leakage(layout, W, graph.id_of(hub), horizon, progress="always")
    cpu, wall = time.process_time() - start, time.perf_counter() - wall_start
    return {"degree": int(graph.degrees[hub]), "blas_threads": blas_threads,
            "cpu_seconds": cpu, "wall_seconds": wall,
            "estimated_seconds": r.extra["estimated_seconds"], "flops": r.extra["flops"],
            "basis_columns": r.extra["basis_columns"], "method": r.method,
            "relative_accuracy": (r.relative_accuracy if math.isfinite(r.relative_accuracy)
                                  else "infinity"),
            "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--horizon", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    add_output_options(parser)
    add_blas_option(parser)
    args = parser.parse_args()
    graph = powerlaw_cluster(args.n, args.seed)
    twin = er_twin(graph, args.seed)
    with pinned_blas(args.blas_threads) as threads:
        rows = {"erdos-renyi twin hub": hub_leakage(twin, args.horizon, threads),
                "powerlaw-cluster hub": hub_leakage(graph, args.horizon, threads)}
    base = rows["erdos-renyi twin hub"]["cpu_seconds"]
    for row in rows.values():
        row["ratio_to_er"] = row["cpu_seconds"] / base
    record = json.dumps({"n": graph.n, "edges": graph.num_edges, "horizon": args.horizon,
                         "seed": args.seed, "runs": rows}, indent=1)
    print(record)
    output_path(args, "ppac_hub.json").write_text(record)


if __name__ == "__main__":
    main()
