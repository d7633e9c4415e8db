"""How many products any mixing truncation needs: the true effect of cutting the lags, by graph.

One observer (node 0), target n/2, average degree 20, Metropolis weights, T = 1000 unless
given.  Every lag is propagated (the reference); then the lags from ``L`` on are replaced
by ``1/n`` (what a truncation after ``L / 2`` products stores) and the c = 1 value
``1^T G^T K^{-1} G 1`` recomputed.  ``true_change`` is its relative change: no certified
bound on a truncation after ``L / 2`` products can be narrower, so the first ``L`` where it
falls below the target gap is a lower bound on the products of every truncation-based
method.  Next to it: the products of the certified structured query at ``truncation_rtol``
(gap <= 2 rtol), the second-largest eigenvalue of W (``scipy.sparse.linalg.eigsh``) and
``1 - 1 / (1 + d_max)``, the self weight of a degree-1 node next to the largest hub.

    python bench/truncation_effect.py --n 100000

Writes ``bench/results/truncation_effect.json`` and ``.png`` (``--record``:
``docs/figures/``; the change against the cut, the certified stop marked, the target gap
drawn).
"""

from __future__ import annotations

import argparse
import json
import pathlib

import numpy as np
import scipy.sparse.linalg
from outputs import add_output_options, output_path

import sparsedp
from sparsedp.graphs import large
from sparsedp.linalg.moments import LagPropagator
from sparsedp.linalg.operators import k_from_moments, toeplitz_blocks

TARGET_GAP = 1e-6
GENERATORS = {"erdos-renyi": large.erdos_renyi_large, "chung-lu": large.chung_lu_large}
CUTS = (25, 50, 100, 200, 400, 600, 800, 1200, 1600)


def c1_value(mu: np.ndarray, a: np.ndarray, T: int) -> float:
    """``1^T G^T K^{-1} G 1`` with ``K = k_from_moments(mu)``, ``G = toeplitz_blocks(a)``."""
    K, G = k_from_moments(mu, T), toeplitz_blocks(a)
    X = np.linalg.solve(K, G)
    return float(G.sum(axis=1) @ X.sum(axis=1))


def effect(name: str, n: int, T: int, rtol: float) -> dict:
    graph = large.largest_component(GENERATORS[name](n, 20, seed=1))
    W = sparsedp.gossip_matrix(graph)
    size, target = W.shape[0], graph.n // 2
    propagator = LagPropagator(W, [0], target, T, progress=None)
    full = propagator.advance(None).result()
    propagator.close()
    reference = c1_value(full.mu, full.a, T)
    changes = {}
    for cut in CUTS:
        mu, a = full.mu.copy(), full.a.copy()
        mu[cut:], a[cut:] = 1.0 / size, 1.0 / size
        changes[cut] = abs(c1_value(mu, a, T) - reference) / reference
    certified = sparsedp.squared_sensitivity(W, target, [0], T, exact=False,
                                             truncation_rtol=rtol, progress=False)
    top = scipy.sparse.linalg.eigsh(W, k=2, which="LA", return_eigenvectors=False)
    degrees = np.diff(graph.adjacency.indptr)
    return {
        "graph": name, "n": int(size), "T": T,
        "true_change_after_lag": {str(k): v for k, v in changes.items()},
        "certified_products": certified.solver["sparse_products"],
        "certified_relative_gap": certified.relative_gap, "truncation_rtol": rtol,
        "lambda_2": float(np.sort(top)[0]),
        "lazy_periphery_self_weight": 1.0 - 1.0 / (1.0 + float(degrees.max())),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10**5)
    parser.add_argument("--T", type=int, default=1000)
    parser.add_argument("--truncation-rtol", type=float, default=5e-7)
    add_output_options(parser)
    args = parser.parse_args()
    rows = [effect(name, args.n, args.T, args.truncation_rtol) for name in GENERATORS]
    for row in rows:
        print(json.dumps(row), flush=True)
    out = output_path(args, "truncation_effect.json")
    out.write_text(json.dumps(rows, indent=1) + "\n")
    plot(rows, out.with_suffix(".png"))


def plot(rows: list[dict], path: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for row in rows:
        cuts = [int(k) for k in row["true_change_after_lag"]]
        changes = [max(v, 1e-16) for v in row["true_change_after_lag"].values()]
        line, = ax.plot(cuts, changes, marker="o",
                        label=f"{row['graph']} (lambda_2 = {row['lambda_2']:.4f})")
        ax.axvline(2 * row["certified_products"], color=line.get_color(), linestyle=":",
                   label=f"{row['graph']}: certified stop, {row['certified_products']} products")
    ax.axhline(TARGET_GAP, color="grey", linestyle="--", label="gap 1e-6")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("lags kept (L; L / 2 products)")
    ax.set_ylabel("relative change of the c = 1 value when lags >= L are 1/n")
    ax.set_title(f"n = {rows[0]['n']}, T = {rows[0]['T']}, observer 0, target n/2")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
