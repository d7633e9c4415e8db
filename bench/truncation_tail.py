"""How loose the certified mixing truncation is, and where a tighter certificate would come from.

One observer (node 0), target n/2, ER with average degree 20, Metropolis weights.  The lags
are propagated twice: in full (every lag, the reference) and truncated at ``n eps^2 <=
level`` (as the structured path does).  With ``X = K_hat^{-1} G_hat`` the script reports

* ``first_order_bound``: the truncation's first-order widening as certified today,
  ``sum |X|^T (N e) |X|`` (every truncated moment off by at most ``e = eps^2 + drift``);
* ``first_order_true``: ``sum |X^T (K - K_hat) X|`` with the full lags;
* ``first_order_true_pattern``: the same bound with the true ``|mu_l - mu_hat_l|`` per lag in
  place of ``e`` (how much of the slack is the lags' decay rather than cancellation);
* ``worst_measure_ratio``: ``sup_lambda |q(lambda)| / lambda^(2L)`` over [-1, 1] times e,
  over the bound along c = 1, where ``q(lambda) = x^T K_trunc(lambda) x`` is the error that a
  centred spectral measure concentrated at lambda would cause (1.0: the bound is what a
  measure with its tail mass at lambda = 1 attains);
* ``radau``: for L = 5 ... 40 Lanczos steps from ``e_0 - 1/n`` (float64, full
  re-orthogonalisation; an estimate, not certified), the Gauss-Radau weight at lambda = 1
  against the last moment ``m_2L = ||W^L e_0 - 1/n||^2`` that the truncation charges per lag.

    python bench/truncation_tail.py --n 100000 --T 1000

Writes ``bench/results/truncation_tail.json`` (``--record``: ``docs/figures/``).
"""

from __future__ import annotations

import argparse
import json

import numpy as np
from outputs import add_output_options, output_path

import sparsedp
from sparsedp.gossip.certified_solve import truncation_pattern
from sparsedp.graphs import large
from sparsedp.linalg.moments import LagPropagator
from sparsedp.linalg.operators import k_from_moments, toeplitz_blocks


def lags(W, target: int, T: int, level):
    propagator = LagPropagator(W, [0], target, T, progress=None)
    try:
        return propagator.advance(level).result()
    finally:
        propagator.close()


def slack(W, target: int, T: int, level: float) -> dict:
    full, cut = lags(W, target, T, None), lags(W, target, T, level)
    K, G = k_from_moments(cut.mu, T), toeplitz_blocks(cut.a)
    E = k_from_moments(full.mu, T) - K
    X = np.linalg.solve(K, G)
    N = truncation_pattern(cut, T)
    e = float(cut.mu_error.max())
    ax = np.abs(X)
    x = X.sum(axis=1)
    lams = np.linspace(-1.0, 1.0, 401)
    exponent = cut.exact_lags + cut.exact_lags % 2  # even: lambda^(2L) >= 0
    powers = np.arange(2 * T - 1)
    worst = max(abs(x @ k_from_moments(np.where(powers >= cut.exact_lags, lam**powers, 0.0)
                                      .reshape(-1, 1, 1), T) @ x) / max(lam**exponent, 1e-300)
                for lam in lams)
    return {"level": level, "exact_lags": int(cut.exact_lags), "products": int(cut.products),
            "e": e, "first_order_bound": float((ax.T @ (N * e) @ ax).sum()),
            "first_order_true": float(np.abs(X.T @ E @ X).sum()),
            "first_order_true_pattern": float((ax.T @ np.abs(E) @ ax).sum()),
            "worst_measure_ratio": float(worst * e / (np.abs(x) @ (N * e) @ np.abs(x)))}


def radau_weights(W, steps: int) -> list[dict]:
    n = W.shape[0]
    u = np.full(n, -1.0 / n)
    u[0] += 1.0
    norm2 = float(u @ u)
    basis, alpha, beta, records = [u / np.sqrt(norm2)], [], [], []
    power = u.copy()
    for L in range(1, steps + 1):
        z = W @ basis[-1]
        alpha.append(float(basis[-1] @ z))
        for q in basis:  # full re-orthogonalisation (twice is enough)
            z -= (q @ z) * q
        for q in basis:
            z -= (q @ z) * q
        beta.append(float(np.linalg.norm(z)))
        basis.append(z / beta[-1])
        power = W @ power
        if L % 5:
            continue
        J = np.diag(alpha) + np.diag(beta[:-1], 1) + np.diag(beta[:-1], -1)
        d = np.linalg.solve(J - np.eye(L), beta[-1] ** 2 * np.eye(L)[-1])
        radau = np.zeros((L + 1, L + 1))
        radau[:L, :L] = J
        radau[L - 1, L] = radau[L, L - 1] = beta[-1]
        radau[L, L] = 1.0 + d[-1]
        nodes, vectors = np.linalg.eigh(radau)
        at_one = int(np.argmin(np.abs(nodes - 1.0)))
        m2L = float(power @ power)
        records.append({"L": L, "m_2L": m2L, "radau_weight_at_1": norm2 * vectors[0, at_one] ** 2,
                        "ratio": norm2 * vectors[0, at_one] ** 2 / m2L})
    return records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--T", type=int, default=1000)
    parser.add_argument("--level", type=float, default=1e-6)
    add_output_options(parser)
    args = parser.parse_args()
    graph = large.largest_component(large.erdos_renyi_large(args.n, 20, seed=1))
    W = sparsedp.gossip_matrix(graph)
    record = {"n": int(W.shape[0]), "T": args.T, **slack(W, graph.n // 2, args.T, args.level),
              "radau": radau_weights(W, 40)}
    print(json.dumps(record, indent=1))
    output_path(args, "truncation_tail.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
