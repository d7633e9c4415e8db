"""Long horizons on the banded form (issue 18): one observer, n = 10^5, T = 10^4 and
2 x 10^4, in the same process as a calibration.

    python bench/banded_scale.py [--n 100000] [--T 10000 20000] [--record | --out FILE.json]

ER graph with average degree 20 (largest component, the ``bench/scaling.py`` generator),
Metropolis weights, observer 0, target 303; ``squared_sensitivity(..., method="banded")``
(:mod:`sparsedp.gossip.banded`).  Records, per T: the wall time, its ratio to one scipy
``W @ x`` on the same W (best of 20), the certified interval and its relative gap, the band,
the sparse products, the peak RSS so far, and the ratio to one dense LAPACK Cholesky
(``dpotrf``) of the same T (T <= 10^4), both on ``--blas-threads`` BLAS threads (default 1).
Writes ``bench/results/banded_scale.json`` (``--record``: ``docs/figures/``).
"""

from __future__ import annotations

import argparse
import json
import resource

import numpy as np
import scipy.linalg.lapack
from blas_pinning import add_blas_option, pinned_blas
from outputs import add_output_options, output_path
from timing import matvec_seconds, timed

import sparsedp
from sparsedp.graphs import large as lg

DPOTRF_MAX_T = 10_000


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--T", type=int, nargs="+", default=[10_000, 20_000])
    add_output_options(ap)
    add_blas_option(ap)
    args = ap.parse_args()
    record = measure(args.n, args.T, args.blas_threads)
    output_path(args, "banded_scale.json").write_text(json.dumps(record, indent=1))


def measure(n: int, horizons: list[int], blas_threads: int) -> dict:
    W = sparsedp.gossip_matrix(lg.largest_component(lg.erdos_renyi_large(n, 20, seed=1)))
    x = np.random.default_rng(0).standard_normal(W.shape[0])
    matvec = matvec_seconds(W, x, repeats=20)
    rows = []
    for T in horizons:
        with pinned_blas(blas_threads):  # the engine and the dense Cholesky alike
            seconds, r = timed(lambda T=T: sparsedp.squared_sensitivity(W, 303, [0], T,
                                                                        method="banded"))
            dpotrf = _dpotrf(T)
        rows.append({"T": T, "seconds": seconds, "over_matvec": seconds / matvec,
                     "lower": r.lower, "upper": r.upper,
                     "relative_gap": r.upper / r.lower - 1.0,
                     "bandwidth": r.solver["bandwidth"],
                     "sparse_products": r.solver["sparse_products"],
                     "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
                     "over_dense_cholesky": seconds / dpotrf if dpotrf else None,
                     "dense_cholesky_seconds": dpotrf, "blas_threads": blas_threads})
        print(json.dumps(rows[-1]))
    return {"n": W.shape[0], "nnz": int(W.nnz), "matvec_seconds": matvec,
            "blas_threads": blas_threads, "runs": rows}


def _dpotrf(T: int) -> float | None:
    """One LAPACK Cholesky of a T x T SPD matrix (the dense path's smallest step), for
    T <= DPOTRF_MAX_T (larger ones cost minutes and gigabytes: None)."""
    if T > DPOTRF_MAX_T:
        return None
    A = np.eye(T) * T + np.random.default_rng(1).random((T, T)) * 0.01
    A = A + A.T
    seconds, _ = timed(lambda: scipy.linalg.lapack.dpotrf(A, lower=1, overwrite_a=1))
    return seconds


if __name__ == "__main__":
    main()
