"""The whole 10^8-pair privacy map of an n = 10^4 graph, run in full (not extrapolated, unlike
``bench/privacy_map_scaling.py``): wall time, peak RSS and the table's size (issue 16).

Graph: Erdos-Renyi with average degree 20 (:func:`sparsedp.graphs.large.erdos_renyi_large`,
seed 1, giant component), Metropolis weights, every observer against every target,
``float32=True``.  ``--upper none``: the certified c = 1 lower bound at T = 100;
``--upper entrywise``: certified upper bounds ``sum |M_T|`` for every pair at T = 30, with
epsilons at sigma = 1, delta = 1e-5.  Each mode in a fresh process (``--upper`` picks one), so
the peak RSS is its own; the time of one scipy ``W @ x`` on the same W is printed next to it.
``--upper worst-case``: no table, the certified per-target worst case over all observers at
T = 100 (:func:`sparsedp.per_target_worst_case`; ``--prepass``, ``--refine`` its options), with
the numbers of evaluated and refined pairs and the median / 90th percentile / max relative
gap ``(upper - lower) / lower`` over the targets.  The load average
(``os.getloadavg``) at the start and the end is printed too.  Everything runs on
``--blas-threads`` BLAS threads (default 1); the record goes to
``bench/results/privacy_map_full_<upper>.json`` (``--record``: ``docs/figures/``).

    python bench/privacy_map_full.py --upper none        # about 2.5 minutes, 4.3 GB
    python bench/privacy_map_full.py --upper entrywise   # about 7.5 minutes, 4.1 GB
    python bench/privacy_map_full.py --upper worst-case               # about 2.2 minutes, 0.5 GB
    python bench/privacy_map_full.py --upper worst-case --refine 5    # about 7.5 minutes, 1.4 GB
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time

import numpy as np
from blas_pinning import add_blas_option, pinned_blas
from outputs import add_output_options, output_path

import sparsedp
from sparsedp.graphs import large


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--upper", choices=("none", "entrywise", "worst-case"), default="none")
    parser.add_argument("--prepass", type=int, default=None, help="prepass_T (worst-case)")
    parser.add_argument("--refine", type=int, default=None, help="refine (worst-case)")
    add_output_options(parser)
    add_blas_option(parser)
    args = parser.parse_args()
    with pinned_blas(args.blas_threads):
        record = measure(args.n, args.upper, args.prepass, args.refine)
    record["blas_threads"] = args.blas_threads
    print(json.dumps(record))
    output_path(args, f"privacy_map_full_{args.upper}.json").write_text(
        json.dumps(record, indent=1) + "\n")


def measure(n: int, upper: str, prepass: int | None, refine: int | None) -> dict:
    load_start = os.getloadavg()
    graph = large.largest_component(large.erdos_renyi_large(n, 20, seed=1))
    W = sparsedp.gossip_matrix(graph)
    x = np.random.default_rng(0).random(W.shape[0])
    matvec = np.inf
    for _ in range(20):
        start = time.perf_counter()
        W @ x
        matvec = min(matvec, time.perf_counter() - start)
    if upper == "worst-case":
        return _worst_case(W, matvec, load_start, prepass, refine)
    T, sigma, delta = (100, None, None) if upper == "none" else (30, 1.0, 1e-5)
    start = time.perf_counter()
    m = sparsedp.privacy_map(W, "all", "all", T, sigma, delta, upper=upper, float32=True,
                             max_pairs=None,
                             progress=False)
    seconds = time.perf_counter() - start
    return {
        "n": int(W.shape[0]), "pairs": len(m), "T": T, "upper": upper,
        "seconds": seconds, "matvec_seconds": matvec, "seconds_per_matvec": seconds / matvec,
        "table_bytes": int(sum(v.nbytes for v in m.columns.values())),
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "load_average_start": load_start, "load_average_end": os.getloadavg()}


def _worst_case(W, matvec: float, load_start, prepass, refine) -> dict:
    T = 100
    options = {} if refine is None else {"refine": refine}
    start = time.perf_counter()
    w = sparsedp.per_target_worst_case(W, T, 1.0, 1e-5, prepass_T=prepass, progress=False,
                                       **options)
    seconds = time.perf_counter() - start
    lower, upper = w.columns["lower"], w.columns["upper"]
    gap = (upper - lower) / lower
    return {
        "n": int(W.shape[0]), "T": T, "upper": "worst-case", "targets": len(w),
        "pairs": w.info["pairs"], "evaluated_pairs": w.info["evaluated_pairs"],
        "refined_pairs": w.info["refined_pairs"], "refine": w.parameters["refine"],
        "prepass_T": w.parameters["prepass_T"], "prepass_seconds": w.info["prepass_seconds"],
        "evaluation_seconds": w.info["evaluation_seconds"],
        "seconds": seconds, "matvec_seconds": matvec, "seconds_per_matvec": seconds / matvec,
        "gap_median": float(np.median(gap)), "gap_p90": float(np.percentile(gap, 90)),
        "gap_max": float(gap.max()),
        "worst_lower_median": float(np.median(lower)), "worst_upper_max": float(upper.max()),
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        "load_average_start": load_start, "load_average_end": os.getloadavg()}


if __name__ == "__main__":
    main()
