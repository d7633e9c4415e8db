"""One single-pair query timed on one and on two numba threads, interleaved, in one process:
the effect of the thread policy (:mod:`sparsedp.linalg.threads`) on a busy machine.

    python bench/threads_under_load.py [--n 10000] [--T 100] [--repeats 3]

Graph: the largest component of ER(n, 10 / n), Metropolis weights; target 5, observer 17.
On a quiet machine both counts take about the same time (the products are below the
parallel threshold or split well); with the cores busy, two threads used to wait for a
time slice at every parallel region (docs/performance.md, "Thread count from the work and
the load").  The one-minute load average is recorded with each run.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import networkx as nx
import numba
from blas_pinning import add_blas_option, pinned_blas
from outputs import add_output_options, output_path

import sparsedp


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--T", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    add_output_options(parser)
    add_blas_option(parser)
    args = parser.parse_args()
    G = nx.erdos_renyi_graph(args.n, 10 / args.n, seed=1)
    G = nx.convert_node_labels_to_integers(G.subgraph(max(nx.connected_components(G), key=len)))
    W = sparsedp.gossip_matrix(G)
    runs = []
    with pinned_blas(args.blas_threads):
        sparsedp.squared_sensitivity(W, 5, [17], args.T)  # compiled or loaded
        for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS)) * 2:
            numba.set_num_threads(threads)
            for _ in range(args.repeats):
                start = time.perf_counter()
                r = sparsedp.squared_sensitivity(W, 5, [17], args.T)
                runs.append({"numba_threads": threads, "seconds": time.perf_counter() - start,
                             "load_1min": os.getloadavg()[0], "lower": r.lower,
                             "upper": r.upper})
                print(json.dumps(runs[-1]), flush=True)
    output_path(args, "threads_under_load.json").write_text(json.dumps(
        {"n": W.shape[0], "T": args.T, "blas_threads": args.blas_threads, "runs": runs},
        indent=1))


if __name__ == "__main__":
    main()
