"""The inertia certificate of lambda_2(W) on users' graphs and their ER twins.

For each graph of ``bench/realistic.py`` (and its Erdos-Renyi twin, same n and edge count),
Metropolis weights: the Lanczos estimate of the spectrum's upper end
(``spectral_interval(W, certify=False)``), then the certified end (``certify=True``: a sparse
``LDL^T`` of ``mu I - W`` or a dense Cholesky, ``sparsedp.linalg.inertia``), with the reverse
Cuthill-McKee envelope that ``certify="auto"`` decides by, the method, the factors' fill and
the backward-error allowance.  CPU seconds, also in units of one scipy ``W @ x`` timed in the
same process.  Writes ``bench/results/spectral_certificate.json`` (``--record``: ``docs/figures/``).

    python bench/spectral_certificate.py                          # n = 10^4, every model
    python bench/spectral_certificate.py --n 100000 --graphs geometric --no-twins
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import time

import numpy as np
from blas_pinning import add_blas_option, pinned_blas
from outputs import add_output_options, output_path
from realistic import GRAPHS, _metropolis, er_twin

from sparsedp.linalg.inertia import auto_skip_reason, envelope_cost
from sparsedp.randomwalk.log_green import spectral_interval


def cpu_seconds(run):
    start = time.process_time()
    result = run()
    return result, time.process_time() - start


def one_scipy_product(W) -> float:
    """CPU seconds of one ``W @ x`` (the median of 21)."""
    x = np.ones(W.shape[0])
    times = []
    for _ in range(21):
        start = time.process_time()
        W @ x
        times.append(time.process_time() - start)
    return float(np.median(times))


def measure(W) -> dict:
    product = one_scipy_product(W)
    estimate, t_estimate = cpu_seconds(lambda: spectral_interval(W, certify=False))
    certified, t_certified = cpu_seconds(lambda: spectral_interval(W, certify=True))
    cost = envelope_cost(W)
    fill = re.search(r"(\d+) factor entries", certified.how)
    error = re.search(r"backward error ([0-9.e+-]+)", certified.how)
    return {
        "n": W.shape[0], "nnz_W": int(W.nnz), "scipy_W_x_s": product,
        "estimate": estimate.upper, "estimate_s": t_estimate,
        "certified": certified.upper, "certified_s": t_certified,
        "certified_in_W_x": t_certified / product,
        "gap_kept": (1.0 - certified.upper) / (1.0 - estimate.upper),
        "envelope_flops": cost.flops, "envelope_gib": cost.bytes / 2**30,
        "auto": auto_skip_reason(W, 1 << 62) is None,
        "method": "dense Cholesky" if "dense Cholesky" in certified.how else "sparse LDL^T",
        "factor_entries": int(fill.group(1)) if fill else None,
        "backward_error": float(error.group(1)) if error else None,
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--graphs", default=",".join(GRAPHS))
    parser.add_argument("--no-twins", action="store_true", help="skip the ER twins")
    add_blas_option(parser)
    add_output_options(parser)
    args = parser.parse_args(argv)
    record = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "n": args.n, "seed": args.seed, "load_before": os.getloadavg(), "rows": []}
    with pinned_blas(args.blas_threads):
        for model in args.graphs.split(","):
            graph = GRAPHS[model](args.n, args.seed)
            pairs = [("graph", graph)] + ([] if args.no_twins
                                          else [("twin", er_twin(graph, args.seed))])
            for which, g in pairs:
                row = {"model": model, "which": which, **measure(_metropolis(g))}
                record["rows"].append(row)
                print(f"{model:16s} {which:5s} n={row['n']}: {row['estimate']:.10f} "
                      f"({row['estimate_s']:.2f} s) -> {row['certified']:.10f} "
                      f"({row['certified_s']:.2f} s = {row['certified_in_W_x']:.0f} W@x, "
                      f"{row['method']}), "
                      f"fill {row['factor_entries']}, error {row['backward_error']}, "
                      f"envelope {row['envelope_flops']:.1e} flops, auto {row['auto']}",
                      flush=True)
    record["load_after"] = os.getloadavg()
    path = output_path(args, "spectral_certificate.json")
    path.write_text(json.dumps(record, indent=1))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
