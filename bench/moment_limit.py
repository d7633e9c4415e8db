"""How many products any certificate built from the lags alone needs: realisable measures.

After P products a moment-based certificate knows the lags ``C_0 .. C_2P`` of the centred
pair ``V = [e_o - 1/n, e_t - 1/n]`` (``C_l = V^T R^l V``, ``R = W - 11^T/n``) and that the
spectrum lies in ``[-1, 1]``.  The block Gauss rule of ``m = P + 1`` nodes, from a block
Lanczos run on ``R`` (full reorthogonalisation), is a positive 2 x 2 matrix measure on
``[-1, 1]`` with exactly those lags (it reproduces ``C_0 .. C_(2m-1)``), so it could be the
truth: every certified interval after P products must contain both its c = 1 value
``1^T G^T K^-1 G 1`` and the true one.  Their relative distance ``gauss_change`` is
therefore a **lower bound on the gap of any certificate that uses only the lags** (the
reference value is the rule of ``REFERENCE_STEPS`` nodes, converged to rounding).

``known_lags_mismatch`` checks the premise: the largest distance between the rule's lags
``0 .. 2P + 1`` and the reference's, relative to ``C_0`` (rounding level).

``gauss_radau_spread`` is an estimate of what the best such certificate reaches, not a
bound: for each of the positive measures ``r_o``, ``r_o +- r_t`` (polarisation) the even
lags are moments of the pushed-forward measure in ``x = lambda^2`` and the sums
``C_2i + C_2i+1`` those of ``(1 + lambda) dmu``, each bracketed by its Gauss (below) and
Gauss-Radau at ``x = 1`` (above) rules (exact arithmetic: every derivative of ``x^j`` is
>= 0 on ``[0, 1]``); ``gauss_radau_spread`` is the largest relative change of the value
over the box's centre, the two corners along the sign of the value's gradient (the first-order
extremes), the two constant-sign corners and five random corners.

    python bench/moment_limit.py --n 100000

Merges its records (one per graph, n and T) into ``bench/results/moment_limit.json``
(``--record``: ``docs/figures/moment_limit.json``) and redraws ``.png`` from all of them.
"""

from __future__ import annotations

import argparse
import json
import pathlib

import numpy as np
from outputs import add_output_options, output_path
from truncation_effect import GENERATORS, TARGET_GAP, c1_value

import sparsedp
from sparsedp.graphs import large
from sparsedp.linalg.operators import k_from_moments

REFERENCE_STEPS = 150
PRODUCTS = (10, 15, 20, 25, 30, 35, 40, 50, 60, 80)


class CentredChain:
    """``R X = W X - 1 (1^T X) / n`` for blocks X (n x b)."""

    def __init__(self, W):
        self.W, self.n = W, W.shape[0]

    def __call__(self, X: np.ndarray) -> np.ndarray:
        return self.W @ X - X.sum(axis=0) / self.n


def block_lanczos(R, V: np.ndarray, steps: int):
    """Block Lanczos on the symmetric ``R`` from ``V`` (n x b): ``(J, R0)`` with ``J`` the
    ``steps b`` block tridiagonal matrix and ``V = Q_1 R0``; full reorthogonalisation."""
    n, b = V.shape
    basis = np.empty((n, b * (steps + 1)))
    Q, R0 = np.linalg.qr(V)
    basis[:, :b] = Q
    J = np.zeros((steps * b, steps * b))
    for k in range(steps):
        Q = basis[:, k * b:(k + 1) * b]
        Z = R(Q)
        J[k * b:(k + 1) * b, k * b:(k + 1) * b] = Q.T @ Z
        done = basis[:, :(k + 1) * b]
        for _ in range(2):
            Z -= done @ (done.T @ Z)
        Q_next, B = np.linalg.qr(Z)
        basis[:, (k + 1) * b:(k + 2) * b] = Q_next
        if k + 1 < steps:
            J[(k + 1) * b:(k + 2) * b, k * b:(k + 1) * b] = B
            J[k * b:(k + 1) * b, (k + 1) * b:(k + 2) * b] = B.T
    return J, R0


def rule_lags(J: np.ndarray, R0: np.ndarray, lags: int, b: int) -> np.ndarray:
    """``C_l = R0^T E_1^T J^l E_1 R0`` for ``l < lags`` (the block Gauss rule's lags)."""
    nodes, vectors = np.linalg.eigh(J)
    F = R0.T @ vectors[:b]
    C = np.empty((lags, b, b))
    power = np.ones_like(nodes)
    for lag in range(lags):
        C[lag] = (F * power) @ F.T
        power *= nodes
    return C


def value(C: np.ndarray, n: int, T: int) -> float:
    """The c = 1 value from the centred lags of ``[r_o, r_t]``."""
    mu = C[: 2 * T - 1, 0, 0] + 1.0 / n
    a = C[:T, 0, 1] + 1.0 / n
    return c1_value(mu[:, None, None], a[:, None], T)


def scalar_lanczos(R, r: np.ndarray, steps: int, plus: bool):
    """Lanczos on ``R^2`` from ``r`` in the inner product ``(I + R)^plus`` (classical
    Gram-Schmidt twice against the whole basis): ``(alpha, beta, mass)``, the Jacobi matrix
    of the pushforward to ``x = lambda^2`` of ``dmu_r`` (or of ``(1 + lambda) dmu_r`` when
    ``plus``) and its total mass.  The first k steps are the k-step run's."""
    metric = (lambda v: v + R(v)) if plus else (lambda v: v)  # noqa: E731
    mass = float((r.T @ metric(r))[0, 0])
    basis = r / np.sqrt(mass)
    alpha, beta = [], []
    for _ in range(steps):
        q = basis[:, -1:]
        z = R(R(q))
        alpha.append(float((q.T @ metric(z))[0, 0]))
        for _ in range(2):
            z -= basis @ (basis.T @ metric(z))
        beta.append(float(np.sqrt(max((z.T @ metric(z))[0, 0], 0.0))))
        basis = np.hstack([basis, z / beta[-1]])
    return np.array(alpha), np.array(beta), mass


def scalar_rules(alpha: np.ndarray, beta: np.ndarray, mass: float, k: int):
    """Gauss (k nodes) and Gauss-Radau (k free nodes and 1) rules ``(nodes, weights)`` from
    the first k Lanczos steps; the Radau rule's last diagonal entry is ``1 + delta_k``,
    ``(J_k - I) delta = beta_k^2 e_k`` (Golub)."""
    J = np.diag(alpha[:k]) + np.diag(beta[:k - 1], 1) + np.diag(beta[:k - 1], -1)
    gauss_nodes, vectors = np.linalg.eigh(J)
    gauss = (gauss_nodes, mass * vectors[0] ** 2)
    end = np.zeros(k)
    end[-1] = beta[k - 1] ** 2
    delta = np.linalg.solve(J - np.eye(k), end)
    Jr = np.zeros((k + 1, k + 1))
    Jr[:k, :k] = J
    Jr[k, k - 1] = Jr[k - 1, k] = beta[k - 1]
    Jr[k, k] = 1.0 + delta[-1]
    radau_nodes, vectors = np.linalg.eigh(Jr)
    return gauss, (radau_nodes, mass * vectors[0] ** 2)


def rule_moments(rule, orders: np.ndarray) -> np.ndarray:
    nodes, weights = rule
    return np.array([np.sum(weights * np.clip(nodes, 0.0, None) ** j) for j in orders])


def lag_box(runs, products: int, lags: int):
    """Lower and upper ends of the centred lags ``r^T R^l r`` from the Gauss and Radau rules
    of ``products / 2`` Lanczos steps on ``R^2`` (``runs``: both measures' Lanczos)."""
    k = max(products // 2, 1)
    gauss, radau = scalar_rules(*runs[False], k)
    gauss_plus, _ = scalar_rules(*runs[True], k)
    # the Radau rule of k free nodes needs moment 2k of (1 + lambda) dmu, C_(4k) + C_(4k+1):
    # lag 4k + 1 is known only when P = 2k + 1
    _, radau_plus = scalar_rules(*runs[True], max(k - (products % 2 == 0), 1))
    even, odd = np.arange(0, lags, 2), np.arange(1, lags, 2)
    lo, hi = np.empty(lags), np.empty(lags)
    lo[even], hi[even] = rule_moments(gauss, even // 2), rule_moments(radau, even // 2)
    lo[odd] = rule_moments(gauss_plus, odd // 2) - hi[odd - 1]
    hi[odd] = rule_moments(radau_plus, odd // 2) - lo[odd - 1]
    return lo, hi


def gauss_radau_spread(runs: dict, C_reference: np.ndarray, products: int, n: int, T: int,
                       reference: float) -> float:
    lags = 2 * T - 1
    lo_o, hi_o = lag_box(runs["o"], products, lags)
    lo_p, hi_p = lag_box(runs["o+t"], products, T)
    lo_m, hi_m = lag_box(runs["o-t"], products, T)
    lo_a, hi_a = (lo_p - hi_m) / 4, (hi_p - lo_m) / 4
    known = 2 * products + 1  # computed lags: exact
    for lo, hi, exact in ((lo_o, hi_o, C_reference[:, 0, 0]),
                          (lo_a, hi_a, C_reference[:T, 0, 1])):
        lo[:known] = hi[:known] = exact[:known]
    rng = np.random.default_rng(0)
    centre = np.zeros((lags, 2, 2))
    centre[:, 0, 0], centre[:T, 0, 1] = (lo_o + hi_o) / 2, (lo_a + hi_a) / 2
    g_mu, g_a = value_gradient(centre, n, T)
    signs = [(np.zeros(lags), np.zeros(T)), (np.sign(g_mu), np.sign(g_a)),
             (-np.sign(g_mu), -np.sign(g_a)), (np.ones(lags), np.ones(T)),
             (-np.ones(lags), -np.ones(T))]
    signs += [(rng.choice([-1.0, 1.0], lags), rng.choice([-1.0, 1.0], T)) for _ in range(5)]
    spread = 0.0
    for s_mu, s_a in signs:
        C = np.zeros((lags, 2, 2))
        C[:, 0, 0] = (lo_o + hi_o) / 2 + s_mu * (hi_o - lo_o) / 2
        C[:T, 0, 1] = (lo_a + hi_a) / 2 + s_a * (hi_a - lo_a) / 2
        spread = max(spread, abs(value(C, n, T) - reference) / reference)
    return spread


def value_gradient(C: np.ndarray, n: int, T: int) -> tuple[np.ndarray, np.ndarray]:
    """Gradient of the c = 1 value ``g^T K^-1 g`` (``g = G 1``, ``g_t = sum_(j <= t) a_j``)
    in the lags ``mu_l`` and ``a_l``: with ``x = K^-1 g``, ``d/da_l = 2 sum_(t >= l) x_t`` and
    ``d/dmu_l = -x^T (dK/dmu_l) x``; since ``K[t, s] = K[t-1, s-1] + mu_(t+s)``, the latter is
    minus the anti-diagonal ``t + s = l`` sum of ``Y[t, s] = sum_(j >= 0) x_(t+j) x_(s+j)``."""
    mu = C[: 2 * T - 1, 0, 0] + 1.0 / n
    a = C[:T, 0, 1] + 1.0 / n
    K = k_from_moments(mu[:, None, None], T)
    x = np.linalg.solve(K, np.cumsum(a))
    Y = np.outer(x, x)
    for t in range(T - 2, -1, -1):  # the last row and column have no (t + 1, s + 1) term
        Y[t, :-1] += Y[t + 1, 1:]
    anti = np.add.outer(np.arange(T), np.arange(T))
    grad_mu = -np.bincount(anti.ravel(), weights=Y.ravel(), minlength=2 * T - 1)
    grad_a = 2.0 * np.cumsum(x[::-1])[::-1]
    return grad_mu, grad_a


def limits(name: str, n: int, T: int) -> dict:
    graph = large.largest_component(GENERATORS[name](n, 20, seed=1))
    W = sparsedp.gossip_matrix(graph).tocsr()
    size, observer, target = W.shape[0], 0, graph.n // 2
    R = CentredChain(W)
    V = np.full((size, 2), -1.0 / size)
    V[observer, 0] += 1.0
    V[target, 1] += 1.0
    J, R0 = block_lanczos(R, V, REFERENCE_STEPS)
    lags = 2 * T - 1
    C_reference = rule_lags(J, R0, lags, 2)
    reference = value(C_reference, size, T)
    steps = max(PRODUCTS) // 2
    starts = {"o": V[:, :1], "o+t": V[:, :1] + V[:, 1:], "o-t": V[:, :1] - V[:, 1:]}
    runs = {key: {plus: scalar_lanczos(R, r, steps, plus) for plus in (False, True)}
            for key, r in starts.items()}
    rows = []
    for products in PRODUCTS:
        m = products + 1  # block nodes: lags 0 .. 2m - 1 reproduced, all a certificate knows
        C_gauss = rule_lags(J[: 2 * m, : 2 * m], R0, lags, 2)
        known = 2 * products + 1  # the rule must reproduce every lag a certificate knows
        rows.append({
            "products": products,
            "known_lags_mismatch": float(np.abs(C_gauss[: known + 1] - C_reference[: known + 1]
                                                ).max() / np.abs(C_reference[0]).max()),
            "gauss_change": abs(value(C_gauss, size, T) - reference) / reference,
            "gauss_radau_spread": gauss_radau_spread(runs, C_reference, products, size, T,
                                                     reference),
        })
        print(name, json.dumps(rows[-1]), flush=True)
    return {"graph": name, "n": int(size), "T": T, "reference_value": reference,
            "reference_steps": REFERENCE_STEPS, "by_products": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10**5)
    parser.add_argument("--T", type=int, default=1000)
    add_output_options(parser)
    args = parser.parse_args()
    out = output_path(args, "moment_limit.json")
    fresh = [limits(name, args.n, args.T) for name in GENERATORS]
    keys = {(result["graph"], result["n"], result["T"]) for result in fresh}
    kept = json.loads(out.read_text()) if out.exists() else []
    results = [result for result in kept
               if (result["graph"], result["n"], result["T"]) not in keys] + fresh
    out.write_text(json.dumps(results, indent=1) + "\n")
    plot(results, out.with_suffix(".png"))


def plot(results: list[dict], path: pathlib.Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for result in results:
        products = [row["products"] for row in result["by_products"]]
        name = f"{result['graph']}, n = {result['n']}"
        line, = ax.plot(products, [max(row["gauss_change"], 1e-16)
                                   for row in result["by_products"]],
                        marker="o", label=f"{name}: lower bound (Gauss rule)")
        ax.plot(products, [max(row["gauss_radau_spread"], 1e-16)
                           for row in result["by_products"]],
                marker="x", linestyle=":", color=line.get_color(),
                label=f"{name}: Gauss-Radau box (estimate)")
    ax.axhline(TARGET_GAP, color="grey", linestyle="--", label="gap 1e-6")
    ax.set_yscale("log")
    ax.set_xlabel("sparse products P (lags 0 .. 2P known)")
    ax.set_ylabel("relative gap")
    ax.set_title(f"certificates from the lags alone, T = {results[0]['T']}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    main()
