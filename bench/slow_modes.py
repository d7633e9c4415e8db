"""Why a single Chung-Lu query does not reach 100 ``W @ x``: the slow content the lags carry.

Issue 35 asks for one pair at n = 10^6, T = 1000, gap <= 1e-6 in at most 100 ``W @ x`` on a
Chung-Lu graph (certified: 512 products).  The two routes it names need, respectively, a
per-W slow subspace that every query can deflate, and extended-precision products.  This
script measures both premises (an estimate, nothing here is certified):

* **structure**: the centred vectors ``x_c = W^P e_c - 1/n`` of the pair (observer 0, target
  n/2) and 14 random nodes after P products: ``n ||x_0||^2`` (how far the observer is from
  mixed), the eigenvalue shares of their 16 x 16 Gram matrix (a slow part common to all nodes
  would make it rank one), ``x0_outside_others``, the fraction of ``||x_0||^2`` outside the
  span of the other 15 (what the best 15-dimensional per-W control block could not remove
  from the observer's tail), and where ``x_0``'s energy lies by self weight ``W_ii`` of the
  nodes (the lazy periphery is ``W_ii`` near 1);
* **control variate**: every lag is propagated (the reference value); then the lags from
  ``2P`` on are replaced by ``1/n`` (a truncation after P products: ``truncation_change``) or
  by ``1/n + alpha_a alpha_b zeta_l`` with ``zeta_l = <R^l y, y>`` the lags of one per-W
  vector (``y`` the centred indicator of the nodes with ``W_ii >= 1/2``, ``R = W - 11^T/n``)
  and ``alpha`` the least-squares coefficient of each column's ``R^P`` vector on ``R^P y``
  (``control_change``): the relative change of the c = 1 value.  Neither can certify less
  than its change;
* **double-double product**: one CSR product in double-double arithmetic (Dekker's
  two-product and Knuth's two-sum, numba, one thread), which a Gauss-Radau bracket of the
  tail lags needs (float64 Lanczos vectors lose ~2e-10 against the 6e-13 it needs,
  docs/performance.md), as a ratio to one scipy ``W @ x`` in the same process.

    python bench/slow_modes.py --n 100000
    python bench/slow_modes.py --n 100000 --exponent 2.3

Writes ``bench/results/slow_modes.json`` (``--record``: ``docs/figures/``), one record per
(n, exponent), merged with the file's others.
"""

from __future__ import annotations

import argparse
import json

import numba
import numpy as np
from blas_pinning import add_blas_option, pinned_blas
from moment_limit import value, value_gradient
from outputs import add_output_options, output_path
from timing import matvec_seconds, timed

import sparsedp
from sparsedp.graphs import large

PRODUCTS = (25, 50, 100, 200)
CONTROL_PRODUCTS = (25, 50, 75, 100, 150)
CONTROL_BLOCKS = {"lazy_1": (0.5,), "lazy_4": (0.5, 0.8, 0.9, 0.95)}  # W_ii >= level
REFERENCE_NODES = 14
SELF_WEIGHT_BINS = (0.0, 0.5, 0.8, 0.9, 0.95, 0.99, 1.0)


def centred_step(W, X: np.ndarray) -> np.ndarray:
    """``R X = W X - 1 (1^T X) / n``."""
    return W @ X - X.sum(axis=0) / W.shape[0]


def structure(W, nodes: list[int]) -> list[dict]:
    """The slow content of ``R^P r_c`` for the given nodes, at each P of ``PRODUCTS``."""
    n, self_weight = W.shape[0], W.diagonal()
    X = np.full((n, len(nodes)), -1.0 / n)
    X[nodes, np.arange(len(nodes))] += 1.0
    rows = []
    for products in range(1, max(PRODUCTS) + 1):
        X = centred_step(W, X)
        if products not in PRODUCTS:
            continue
        gram = X.T @ X
        shares = np.linalg.eigvalsh(gram)[::-1] / np.trace(gram)
        others = X[:, 1:]
        coefficients = np.linalg.lstsq(others, X[:, 0], rcond=None)[0]
        outside = X[:, 0] - others @ coefficients
        energy = X[:, 0] ** 2
        rows.append({
            "products": products,
            "n_norm2_observer": float(n * gram[0, 0]),
            "gram_eigenvalue_shares": [float(s) for s in shares[:6]],
            "x0_outside_others": float(outside @ outside / gram[0, 0]),
            "observer_energy_by_self_weight": {
                f"{lo}-{hi}": float(energy[(self_weight >= lo) & (self_weight < hi)].sum()
                                    / energy.sum())
                for lo, hi in zip(SELF_WEIGHT_BINS[:-1], SELF_WEIGHT_BINS[1:], strict=True)},
        })
        print(json.dumps(rows[-1]), flush=True)
    return rows


def propagate(W, V: np.ndarray, steps: int, keep: tuple[int, ...] = ()):
    """The block lags ``V^T R^l V`` (``l = 0 .. 2 steps``) and the blocks ``R^P V`` for P in
    ``keep``."""
    lags, kept = np.empty((2 * steps + 1, V.shape[1], V.shape[1])), {}
    lags[0] = V.T @ V
    for k in range(steps):
        V_next = centred_step(W, V)
        lags[2 * k + 1], lags[2 * k + 2] = V.T @ V_next, V_next.T @ V_next
        V = V_next
        if k + 1 in keep:
            kept[k + 1] = V.copy()
    return lags, kept


def control_variate(W, observer: int, target: int, T: int) -> list[dict]:
    """Truncation against a per-W control block after P products, against every lag."""
    n, self_weight = W.shape[0], W.diagonal()
    pair = np.full((n, 2), -1.0 / n)
    pair[[observer, target], [0, 1]] += 1.0
    lags, kept = propagate(W, pair, T - 1, CONTROL_PRODUCTS)
    reference_lags = np.zeros((2 * T - 1, 2, 2))
    reference_lags[:, 0, 0], reference_lags[:T, 0, 1] = lags[:, 0, 0], lags[:T, 0, 1]
    reference = value(reference_lags, n, T)
    g_mu, g_a = value_gradient(reference_lags, n, T)
    blocks = {}
    for name, levels in CONTROL_BLOCKS.items():
        Y = np.stack([(self_weight >= level).astype(np.float64) for level in levels], axis=1)
        blocks[name] = propagate(W, Y - Y.mean(axis=0), T - 1, CONTROL_PRODUCTS)

    def relative_change(mu_tail: np.ndarray, a_tail: np.ndarray, cut: int) -> float:
        C = reference_lags.copy()
        C[cut:, 0, 0], C[cut:T, 0, 1] = mu_tail[cut:], a_tail[cut:T]
        return abs(value(C, n, T) - reference) / reference

    def first_order_charge(mu_error: np.ndarray, a_error: np.ndarray, cut: int) -> float:
        """``sum |dvalue/dC_l| E_l`` over the lags from ``cut`` on, relative."""
        return float(np.abs(g_mu[cut:]) @ mu_error[cut:]
                     + np.abs(g_a[cut:]) @ a_error[cut:T]) / reference

    rows = []
    for products in CONTROL_PRODUCTS:
        cut, X = 2 * products, kept[products]
        zero = np.zeros(2 * T - 1)
        plain = tail_charges(W, X, np.zeros((2 * T - 1, 1, 1)), np.zeros((n, 1)), products, T)
        row = {"products": products,
               "truncation_change": relative_change(zero, zero, cut),
               "truncation_charge_estimate": first_order_charge(*plain, cut)}
        for name, (zeta, kept_y) in blocks.items():
            Y_p = kept_y[products]
            alpha = np.linalg.lstsq(Y_p, X, rcond=None)[0]  # (k, 2)
            model = np.einsum("i,lij,j->l", alpha[:, 0], zeta, alpha[:, 1])
            model_mu = np.einsum("i,lij,j->l", alpha[:, 0], zeta, alpha[:, 0])
            row[name] = {
                "change": relative_change(model_mu, model, cut),
                "charge_estimate": first_order_charge(
                    *tail_charges(W, X, zeta, Y_p @ alpha, products, T, alpha), cut),
            }
        rows.append(row)
        print(json.dumps(rows[-1]), flush=True)
    return rows


def tail_charges(W, X: np.ndarray, zeta: np.ndarray, fitted: np.ndarray, products: int,
                 T: int, alpha: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per lag ``l = 2P + j``, the Cauchy-Schwarz charge of the tail given the model
    ``<R^j x_a, x_b> ~ alpha_a^T zeta_(2P+j) alpha_b`` (``fitted = Y_P alpha``,
    ``f = x - fitted``): ``|<R^j f_a, f_b>| + |<R^j y_a, f_b>| + |<R^j f_a, y_b>|`` with each
    term at most ``sqrt(tau_u(j) tau_v(j))``, ``tau_v(j) = ||R^floor(j/2) v||^2`` (the exact
    tails, propagated: what a moment bound on f can at best certify).  Returns the charges
    on ``mu`` (observer, observer) and ``a`` (observer, target)."""
    F = X - fitted
    steps = T - products
    f_lags, _ = propagate(W, F, steps)
    lags = np.arange(2 * T - 1)
    j = np.clip(lags - 2 * products, 0, None)
    even = 2 * (j // 2)
    tau_f = np.maximum(np.stack([f_lags[np.minimum(even, 2 * steps), c, c] for c in (0, 1)]), 0)
    if alpha is None:
        tau_y = np.zeros_like(tau_f)
    else:
        index = np.minimum(2 * products + even, zeta.shape[0] - 1)
        tau_y = np.maximum(np.stack([np.einsum("i,lij,j->l", alpha[:, c], zeta[index],
                                               alpha[:, c]) for c in (0, 1)]), 0)

    def charge(c: int, d: int) -> np.ndarray:
        return (np.sqrt(tau_f[c] * tau_f[d]) + np.sqrt(tau_y[c] * tau_f[d])
                + np.sqrt(tau_f[c] * tau_y[d]))

    return charge(0, 0), charge(0, 1)


@numba.njit
def _dd_product(indptr, indices, data, x_hi, x_lo, y_hi, y_lo):
    """``y = W x`` in double-double: Dekker's two-product (Veltkamp split) and Knuth's
    two-sum per stored entry, the low parts summed in float64."""
    split = 134217729.0  # 2^27 + 1
    for row in range(indptr.size - 1):
        s_hi, s_lo = 0.0, 0.0
        for k in range(indptr[row], indptr[row + 1]):
            w, xh = data[k], x_hi[indices[k]]
            p = w * xh
            t = split * w
            w1 = t - (t - w)
            w2 = w - w1
            t = split * xh
            x1 = t - (t - xh)
            x2 = xh - x1
            e = ((w1 * x1 - p) + w1 * x2 + w2 * x1) + w2 * x2
            s = s_hi + p
            bv = s - s_hi
            s_lo += ((s_hi - (s - bv)) + (p - bv)) + e + w * x_lo[indices[k]]
            s_hi = s
        total = s_hi + s_lo
        y_hi[row] = total
        y_lo[row] = s_lo - (total - s_hi)


def double_double_cost(W, repeats: int = 5) -> dict:
    """Best-of-``repeats`` double-double product time as a ratio to one scipy ``W @ x``."""
    rng = np.random.default_rng(0)
    x_hi, x_lo = rng.random(W.shape[0]), rng.random(W.shape[0]) * 1e-17
    y_hi, y_lo = np.empty_like(x_hi), np.empty_like(x_lo)
    args = (W.indptr, W.indices, W.data, x_hi, x_lo, y_hi, y_lo)
    _dd_product(*args)  # compile
    calibration = matvec_seconds(W, x_hi, repeats)
    seconds = min(timed(lambda: _dd_product(*args))[0] for _ in range(repeats))
    row = {"double_double_product_s": seconds, "scipy_matvec_s": calibration,
           "ratio": seconds / calibration}
    print(json.dumps(row), flush=True)
    return row


def measure(n: int, exponent: float, T: int) -> dict:
    graph = large.largest_component(large.chung_lu_large(n, 20, exponent=exponent, seed=1))
    W = sparsedp.gossip_matrix(graph).tocsr()
    size, observer, target = W.shape[0], 0, graph.n // 2
    self_weight = W.diagonal()
    others = np.random.default_rng(3).choice(np.arange(1, size), REFERENCE_NODES + 1,
                                             replace=False)
    nodes = [observer, target] + [int(c) for c in others if c != target][:REFERENCE_NODES]
    return {
        "graph": "chung-lu", "n": int(size), "exponent": exponent, "T": T,
        "max_degree": int(np.diff(W.indptr).max() - 1),
        "nodes_self_weight_at_least_0.9": int((self_weight >= 0.9).sum()),
        "pair_self_weights": [float(self_weight[observer]), float(self_weight[target])],
        "structure": structure(W, nodes),
        "control_variate": control_variate(W, observer, target, T),
        "double_double": double_double_cost(W),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10**5)
    parser.add_argument("--exponent", type=float, default=2.5)
    parser.add_argument("--T", type=int, default=1000)
    add_output_options(parser)
    add_blas_option(parser)
    args = parser.parse_args()
    out = output_path(args, "slow_modes.json")
    with pinned_blas(args.blas_threads):
        record = measure(args.n, args.exponent, args.T)
    key = (record["n"], record["exponent"], record["T"])
    kept = json.loads(out.read_text()) if out.exists() else []
    records = [r for r in kept if (r["n"], r["exponent"], r["T"]) != key] + [record]
    out.write_text(json.dumps(records, indent=1) + "\n")


if __name__ == "__main__":
    main()
