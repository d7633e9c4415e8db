"""Privacy-map scaling: the all-pairs c = 1 map of an n = 10^4 graph, as wall time and as a
ratio to one scipy ``W @ x`` on the same W in the same process.

Graph: Erdos-Renyi G(n, 20/n) (average degree about 20, :func:`sparsedp.graphs.erdos_renyi`,
seed 1), Metropolis weights.  Timed, each in this process after a warm-up (numba compiled):

* ``spmv``: one ``W @ x`` (scipy CSR times a float64 vector), median of 300;
* ``ones``: :func:`sparsedp.privacy_map` with ``upper="none"`` (the certified c = 1 lower
  bound) for seeded samples of 32 (one batch) and ``--observers`` observers against every
  target at T = 100; the all-pairs time is **extrapolated**: the 32-observer time (one-time
  costs included) plus the marginal cost of an observer between the two runs times the
  remaining n - 32 observers (every observer costs the same: T - 1 sparse products on its
  column and one T x T by T x n product);
* ``certified``: ``upper="certified"`` (the single-pair bounds per pair) at T = 30 for
  ``--certified-observers`` observers against every target, extrapolated to all pairs;
* ``entrywise``: ``upper="entrywise"`` (the certified ``sum |M_T|``, every target at once)
  at T = 30 for ``--entrywise-observers`` observers, extrapolated to all pairs;
* ``one-vs-all``: one observer against every target (``upper="none"``, T = 100) next to one
  single-pair :func:`sparsedp.squared_sensitivity` query on the same graph.

Prints one JSON record and writes it to ``bench/results/privacy_map_scaling.json``
(``--record``: ``docs/figures/``; ``--out FILE``: there); everything runs on
``--blas-threads`` BLAS threads (default 1):

    python bench/privacy_map_scaling.py                     # n = 10^4, 160 observers
    python bench/privacy_map_scaling.py --n 2000 --observers 2000   # a full small map
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import time

import numpy as np
from blas_pinning import add_blas_option, pinned_blas
from outputs import add_output_options, output_path

import sparsedp
from sparsedp.graphs import erdos_renyi


def _spmv_seconds(W, repeats: int = 300) -> float:
    x = np.random.default_rng(0).random(W.shape[0])
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        W @ x
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _timed(function, *args, **kwargs):
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return result, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--degree", type=float, default=20.0)
    parser.add_argument("--T", type=int, default=100)
    parser.add_argument("--observers", type=int, default=160,
                        help="observers timed for the c = 1 map (all targets; > 32)")
    parser.add_argument("--certified-T", type=int, default=30)
    parser.add_argument("--certified-observers", type=int, default=1)
    parser.add_argument("--entrywise-observers", type=int, default=16,
                        help="observers timed for upper='entrywise' at --certified-T")
    add_output_options(parser)
    add_blas_option(parser)
    args = parser.parse_args()
    with pinned_blas(args.blas_threads):
        record = measure(args)
    record["blas_threads"] = args.blas_threads
    text = json.dumps(record, indent=2)
    print(text)
    output_path(args, "privacy_map_scaling.json").write_text(text + "\n")


def measure(args: argparse.Namespace) -> dict:
    """The record of one run with the parsed options ``args``."""
    n, T = args.n, args.T

    graph, build = _timed(erdos_renyi, n, args.degree / n, seed=1)
    W = sparsedp.gossip_matrix(graph)
    sparsedp.privacy_map(W, [0, 1], "all", 3, upper="none", progress="never")  # warm-up
    spmv = _spmv_seconds(W)

    first, first_seconds = _timed(sparsedp.privacy_map, W, ("sample", 32, 0), "all", T,
                                  upper="none", progress="never")
    ones, ones_seconds = _timed(sparsedp.privacy_map, W, ("sample", args.observers, 0), "all",
                                T, upper="none", progress="never")
    spmv_after = _spmv_seconds(W)
    per_observer = ones_seconds / args.observers
    # the first batch pays one-time costs (page faults of the lag buffer): the marginal cost
    # of an observer is measured between the 32-observer and the larger map
    marginal = (ones_seconds - first_seconds) / (args.observers - 32)
    all_pairs = first_seconds + marginal * (n - 32)
    record = {
        "machine": {"cpus": os.cpu_count(), "load_average": os.getloadavg()},
        "graph": {"n": n, "edges": graph.num_edges, "nnz_W": int(W.nnz), "build_seconds": build},
        "spmv_seconds": {"before": spmv, "after": spmv_after},
        "ones": {
            "T": T, "observers_timed": args.observers, "pairs_timed": len(ones),
            "seconds": ones_seconds,
            "seconds_per_observer": per_observer,
            "spmv_per_observer": per_observer / spmv,
            "first_batch_32_observers_seconds": first_seconds,
            "marginal_seconds_per_observer": marginal,
            "marginal_spmv_per_observer": marginal / spmv,
            "all_pairs_seconds_extrapolated": all_pairs,
            "all_pairs_spmv_ratio_extrapolated": all_pairs / spmv,
            "batch_size": ones.info["batch_size"],
        },
    }
    if args.certified_observers:
        record["certified"] = _certified(W, args.certified_T, args.certified_observers)
    if args.entrywise_observers:
        record["entrywise"] = _certified(W, args.certified_T, args.entrywise_observers,
                                         "entrywise")
    one, one_seconds = _timed(sparsedp.privacy_map, W, [0], "all", T, upper="none",
                              progress="never")
    _, single_seconds = _timed(sparsedp.squared_sensitivity, W, n // 2, [0], T)
    record["one_vs_all"] = {"T": T, "map_seconds": one_seconds, "pairs": len(one),
                            "single_pair_seconds": single_seconds,
                            "ratio": one_seconds / single_seconds}
    record["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    record["numba_threads"] = os.environ.get("NUMBA_NUM_THREADS", "default")
    return record


def _certified(W, cT: int, observers: int, upper: str = "certified") -> dict:
    """``upper`` ("certified" or "entrywise") for a sample of observers against every target,
    per pair; the relative gap upper / lower - 1 over the pairs other than the observer
    itself."""
    n = W.shape[0]
    certified, seconds = _timed(sparsedp.privacy_map, W, ("sample", observers, 1), "all", cT,
                                upper=upper, progress="never")
    per_pair = seconds / len(certified)
    c = certified.columns
    return {
        "T": cT, "observers_timed": observers, "pairs_timed": len(certified),
        "seconds": seconds, "seconds_per_pair": per_pair,
        "all_pairs_seconds_extrapolated": per_pair * n * n,
        "seconds_per_observer": seconds / observers,
        "all_pairs_seconds_extrapolated_by_observers": seconds / observers * n,
        "max_relative_gap_other_pairs": float(np.max(
            ((c["upper"] - c["lower"]) / np.maximum(c["upper"], 1e-300))[
                c["observer"] != c["target"]])),
        "median_relative_gap_other_pairs": float(np.median(
            ((c["upper"] - c["lower"]) / np.maximum(c["upper"], 1e-300))[
                c["observer"] != c["target"]])),
    }


if __name__ == "__main__":
    main()
