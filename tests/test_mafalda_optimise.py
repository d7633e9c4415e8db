"""MAFALDA's correlation optimiser (sparsedp.mf.optimise): optimality (KKT, duality gap),
agreement with an independent solve of the Lagrange dual by scipy's L-BFGS-B, the
sensitivity recomputed by the accounting, the baselines, bad input."""

import time

import numpy as np
import pytest
import scipy.linalg as sla
from scipy.optimize import minimize

from sparsedp.errors import ParameterError
from sparsedp.graphs.weights import gossip_matrix
from sparsedp.mf import cyclic, mf_d_sgd, mf_sensitivity, single_use, user_level
from sparsedp.mf.optimise import (
    baselines,
    optimise_correlation,
    pattern_labels,
    prefix_gram,
)
from sparsedp.mf.utility import utility_gram
from tests.conftest import connected_instance


def dual_optimum(H, patterns):
    """Independent solve of the Lagrange dual with scipy's L-BFGS-B: maximise over the
    multipliers Lambda = diag(v_pi(t)) + mu (mu on the co-pattern pairs)

        g(Lambda) = 2 tr((H^1/2 Lambda H^1/2)^1/2) - sum_pi v_pi,

    whose gradient is the constraint residual at X(Lambda) = H^1/2 (H^1/2 Lambda H^1/2)^-1/2
    H^1/2: d/dv_pi = sum_(t in pi) X_tt - 1, d/dmu_st = 2 X_st.  By strong duality its maximum
    is the primal optimum."""
    T = H.shape[0]
    w, U = np.linalg.eigh(H)
    Hh = (U * np.sqrt(w)) @ U.T
    pairs = [(p[a], p[c]) for p in patterns for a in range(len(p)) for c in range(a + 1, len(p))]
    rows = np.array([s for s, _ in pairs], dtype=int)
    cols = np.array([t for _, t in pairs], dtype=int)
    label = np.empty(T, dtype=int)
    for i, p in enumerate(patterns):
        label[p] = i
    nb = len(patterns)

    def neg_g(x):
        v, mu = x[:nb], x[nb:]
        Lam = np.diag(v[label])
        Lam[rows, cols] = mu
        Lam[cols, rows] = mu
        ev, V = np.linalg.eigh(Hh @ Lam @ Hh)
        if ev.min() <= 0:
            return 1e30, np.zeros_like(x)
        X = Hh @ ((V / np.sqrt(ev)) @ V.T) @ Hh
        g = 2 * np.sum(np.sqrt(ev)) - v.sum()
        grad_v = np.bincount(label, weights=np.diagonal(X), minlength=nb) - 1.0
        grad_mu = 2 * X[rows, cols]
        return -g, -np.concatenate([grad_v, grad_mu])

    # start: Lambda = c I at the best scale, c = (tr H^1/2 / #patterns)^2
    c = (np.sum(np.sqrt(w)) / nb) ** 2
    x0 = np.concatenate([np.full(nb, c), np.zeros(len(pairs))])
    # L-BFGS-B stops ("ABNORMAL") when its line search meets the PD boundary; restart it from
    # where it stopped (fresh curvature memory) until the value no longer improves
    best = np.inf
    for _ in range(200):
        res = minimize(neg_g, x0, jac=True, method="L-BFGS-B",
                       options={"maxiter": 20000, "ftol": 0.0, "gtol": 1e-11, "maxcor": 30})
        x0 = res.x
        if res.fun >= best - 1e-14 * abs(best):
            break
        best = res.fun
    return -best


CASES = [(12, (3, 4)), (12, (2, 6)), (12, (4, 3)), (10, (2, 5)), (12, "single"),
         (8, "user-level"), (9, (3, 3)), (6, (2, 3))]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_optimum_matches_independent_solve_and_kkt(case):
    T, scheme = CASES[case]
    scheme = {"single": single_use(), "user-level": user_level()}.get(scheme, scheme)
    if isinstance(scheme, tuple):
        scheme = cyclic(*scheme)
    G = connected_instance(["er", "ba", "ring", "grid"][case % 4], 10 + case, case)
    W = gossip_matrix(G, scheme=["metropolis", "row-normalised-self-loops"][case % 2])
    H = utility_gram(W, T, method="exact").H
    r = optimise_correlation(H, scheme, progress=False)
    patterns = scheme.patterns(T)
    ref = dual_optimum(H, patterns)
    assert abs(r.objective - ref) <= 1e-6 * ref
    # optimality: the Lagrange dual bound meets the objective, projected gradient ~ 0
    assert r.gap < 1e-8 and r.dual_bound <= r.objective * (1 + 1e-12)
    assert r.stationarity < 1e-4
    # sens^2 = 1 by construction; the returned value is the accounting's, for this C
    C = r.C
    acc = mf_sensitivity(np.ones((1, 1)), 0, None, T, algorithm=mf_d_sgd(r.noise),
                         trust_model="ldp", participation_scheme=scheme)
    assert r.sens2 == acc.upper and acc.lower <= 1 + 1e-9 <= acc.upper + 2e-9
    # and a dense evaluation of the objective from C
    X = C.T @ C
    dense_sens2 = max(X[np.ix_(p, p)].sum() for p in patterns)
    assert np.isclose(dense_sens2, 1.0, rtol=1e-9)
    assert np.allclose(np.tril(C), C)
    assert np.isclose(r.objective, acc.upper * np.trace(H @ np.linalg.inv(X)), rtol=1e-9)


def test_dual_bound_is_below_any_feasible_point():
    """Weak duality on random feasible X (diagonal within patterns, pattern sums 1)."""
    T, scheme = 12, cyclic(3, 4)
    W = gossip_matrix(connected_instance("er", 15, 1), scheme="metropolis")
    H = utility_gram(W, T).H
    r = optimise_correlation(H, scheme, progress=False)
    labels = pattern_labels(scheme, T)
    rng = np.random.default_rng(0)
    for _ in range(20):
        A = rng.standard_normal((T, T))
        X = A @ A.T / T + np.eye(T)
        X[labels[:, None] == labels[None, :]] = 0.0
        d = rng.uniform(0.5, 2.0, T)
        d /= np.bincount(labels, weights=d)[labels]
        X[np.diag_indices(T)] = d
        if np.linalg.eigvalsh(X).min() <= 0:
            continue
        assert np.trace(H @ np.linalg.inv(X)) >= r.dual_bound


@pytest.mark.slow  # the paper's n = 100, T = 100 optimisation: about a minute
def test_paper_scale_beats_every_baseline():
    """T = 380, (k, b) = (20, 19), Florentine families (Metropolis weights): <= 60 s, and the
    objective (recomputed sensitivity times utility) beats DP-D-SGD, AntiPGD and D-MF."""
    import networkx as nx
    W = gossip_matrix(nx.florentine_families_graph(), scheme="metropolis")
    H = utility_gram(W, 380).H
    t0 = time.perf_counter()
    r = optimise_correlation(H, cyclic(20, 19), progress=False)
    elapsed = time.perf_counter() - t0
    assert elapsed <= 60
    assert r.gap < 1e-6
    b = baselines(H, cyclic(20, 19), progress=False)
    for v in b.values():
        assert r.objective < v.objective
    assert b["dp-d-sgd"].sens2 == pytest.approx(20, rel=1e-9)     # C = I: k uses
    # AntiPGD: X = C^T C = T - max(s, t) >= 0 entrywise, so sens^2 = max_pi sum X_pi exactly
    s = cyclic(20, 19).patterns(380)
    X = prefix_gram(380)
    exact = max(X[np.ix_(p, p)].sum() for p in s)
    assert b["antipgd"].sens2_lower <= exact <= b["antipgd"].sens2 <= exact * (1 + 1e-5)


def test_bad_input():
    H = np.eye(10)
    with pytest.raises(ParameterError, match="not a multiple of the participation period"):
        optimise_correlation(H, cyclic(3, 3))
    with pytest.raises(ParameterError, match="non-finite"):
        optimise_correlation(np.full((6, 6), np.nan), cyclic(2, 3))
    with pytest.raises(ParameterError, match="square"):
        optimise_correlation(np.ones((3, 4)), cyclic(1, 3))
    assert sla.issymmetric(prefix_gram(5))
