"""MAFALDA-SGD's correlation optimiser (Bellet et al., Sec. 6, Lemma 10, Algorithm 2) and its
baselines, all scored with the package's own LDP accounting.

Lemma 10: with local correlation ``C = C_local kron I_n`` under local DP, Definition 9's
objective is

    L_opti(C_local) = sens_Pi(C_local)^2 ||L C_local^+||_F^2 = sens_Pi(C_local)^2 tr(H X^{-1}),

``H = L^T L`` the utility Gram matrix (:mod:`sparsedp.mf.utility`) and ``X = C_local^T
C_local`` (C_local invertible).  (Appendix D's last lines print ``C_local`` where ``C_local^+``
is meant; the statement, eq. 11, has ``C^+``.)  The objective is invariant to scaling C, so
we fix the sensitivity to 1.

**The convex problem** (the multi-participation approach of Choquette-Choo et al. 2023 for
``(k, b)``-cyclic participation with ``T = k b``, whose patterns ``{i, i + b, ...}`` partition
the steps): minimise over X

    f(X) = tr(H X^{-1})   s.t.   X > 0,   X_st = 0 for s != t in one pattern,
                                 sum_(t in pi) X_tt = 1 for every pattern pi.

Inside a pattern X is then diagonal, so for every pattern and any unit vectors x_t,
``sum_(s,t in pi) X_st <x_s, x_t> = sum_(t in pi) X_tt = 1``: ``sens^2 = 1`` exactly (scalar
and vector gradients) and ``f(X)`` is the objective.  The feasible set is an affine subspace
intersected with the PD cone; f is convex.  ``D-MF`` (Choquette-Choo et al.'s centralized
optimum applied locally) is the same problem with ``H = A^T A``, A the lower-triangular ones
(prefix sums), so it is feasible here and MAFALDA's optimum can only be as good or better.

**Solver**: L-BFGS on the subspace (gradient ``-X^{-1} H X^{-1}`` projected: co-pattern
off-diagonal entries zeroed, the diagonal centred within each pattern), backtracking line
search that keeps X positive definite (Cholesky), from ``X = I / k``.

**Optimality certificate** (KKT and duality).  With multipliers ``Lambda`` supported on the
pattern entries (diagonal ``v_pi`` constant on each pattern, free co-pattern off-diagonals),
the Lagrange dual is, for ``Lambda >= 0`` (PSD),

    g(Lambda) = min_X tr(H X^{-1}) + tr(Lambda X) - sum_pi v_pi
              = 2 tr((Lambda^{1/2} H Lambda^{1/2})^{1/2}) - sum_pi v_pi  <=  f(X*),

and at the optimum ``Lambda = X^{-1} H X^{-1}``.  We take that Lambda at the returned X,
project it onto the multiplier pattern, optimise its scale (``g(c Lambda)`` is maximal at
``c = (a / V)^2``, value ``a^2 / V``, ``a = tr((Lambda^{1/2} H Lambda^{1/2})^{1/2})``,
``V = sum v_pi``) and report ``dual_bound`` (a lower bound on the optimum whenever the
projected Lambda is PSD) and the relative gap ``(f - g) / f``.  The stationarity residual is
the projected gradient's norm relative to the gradient's.

**C by Cholesky**: ``J X J = R R^T`` (J the reversal), ``C = J R^T J`` is lower triangular
with ``C^T C = X``; the noise as applied is ``C^{-1}`` (``sparsedp.mf.mf_d_sgd(C^{-1})``).
The returned sensitivity is **recomputed** by :func:`sparsedp.mf.mf_sensitivity` under
``"ldp"`` from that C (certified upper value), not taken from the optimiser.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg as sla

from sparsedp import resources, validation
from sparsedp.errors import ParameterError
from sparsedp.hints import MemorySize
from sparsedp.linalg.threads import limit_blas_threads
from sparsedp.mf import participation
from sparsedp.mf.algorithms import mf_d_sgd
from sparsedp.mf.sensitivity import mf_sensitivity
from sparsedp.progress import progress_bar


# ----------------------------------------------------------------------------- the scheme
def pattern_labels(scheme, T: int) -> np.ndarray:
    """The pattern of every step, for a scheme whose patterns partition ``0..T-1`` (``(k, b)``
    cyclic with ``T = k b``; ``single`` and ``user-level`` too); ParameterError otherwise."""
    scheme = participation.resolve(scheme)
    T = validation.rounds(T)
    pats = scheme.patterns(T)
    labels = np.full(T, -1)
    for i, p in enumerate(pats):
        labels[p] = i
    if np.any(labels < 0):
        k = scheme.k if scheme.k is not None else T
        b = scheme.b if scheme.b is not None else T
        raise ParameterError(
            f"T = {T} is not a multiple of the participation period: the correlation optimiser "
            f"needs every step in one pattern, T = k b = {k} x {b} = {k * b} for "
            f"{scheme.name}")
    return labels


def _project(D: np.ndarray, labels: np.ndarray, same: np.ndarray, counts: np.ndarray):
    """Projection onto the tangent space: co-pattern off-diagonals zeroed, the diagonal
    centred within each pattern."""
    P = np.where(same, 0.0, D)
    d = np.diagonal(D)
    means = np.bincount(labels, weights=d) / counts
    P[np.diag_indices_from(P)] = d - means[labels]
    return P


def _value_and_grad(X: np.ndarray, H: np.ndarray):
    try:
        cf = sla.cho_factor(X, lower=True, check_finite=False)
    except np.linalg.LinAlgError:
        return np.inf, None
    Y = sla.cho_solve(cf, H, check_finite=False)           # X^{-1} H
    f = float(np.trace(Y))
    G = -sla.cho_solve(cf, Y.T, check_finite=False)         # -X^{-1} H X^{-1}
    return f, (G + G.T) / 2


def _dual_bound(X, H, labels, same):
    """Scale-optimised Lagrange dual value at the multipliers of X (module docstring)."""
    Lam = -_value_and_grad(X, H)[1]
    Lam = np.where(same, Lam, 0.0)
    d = np.diagonal(Lam)
    v = np.bincount(labels, weights=d) / np.bincount(labels)
    Lam[np.diag_indices_from(Lam)] = v[labels]
    w, U = np.linalg.eigh(Lam)
    if w.min() < 0:
        return -np.inf
    half = (U * np.sqrt(w)) @ U.T
    ev = np.linalg.eigvalsh(half @ H @ half)
    a = float(np.sum(np.sqrt(np.clip(ev, 0.0, None))))
    V = float(v.sum())
    return a * a / V


def chol_correlation(X: np.ndarray) -> np.ndarray:
    """Lower-triangular C with ``C^T C = X`` (``J X J = R R^T``, ``C = J R^T J``)."""
    R = np.linalg.cholesky(X[::-1, ::-1])
    return R.T[::-1, ::-1].copy()


def applied_noise(C: np.ndarray) -> np.ndarray:
    """The noise as applied, ``C^{-1}`` (a triangular solve when C is lower triangular; any
    invertible C, e.g. MFDL's symmetric SR / BSR encoders, otherwise)."""
    C = np.asarray(C, dtype=np.float64)
    if np.any(np.triu(C, 1)):
        return np.linalg.inv(C)
    return sla.solve_triangular(C, np.eye(C.shape[0]), lower=True)


def ldp_sensitivity(C: np.ndarray, scheme) -> dict:
    """``sens_Pi(C_local)^2`` under local DP, recomputed by :func:`mf_sensitivity` from the
    noise as applied ``C^{-1}`` (certified ``upper`` and ``lower``)."""
    C = np.asarray(C, dtype=np.float64)
    noise = applied_noise(C)
    r = mf_sensitivity(np.ones((1, 1)), 0, None, C.shape[0], algorithm=mf_d_sgd(noise),
                       trust_model="ldp", participation_scheme=scheme)
    return {"lower": r.lower, "upper": r.upper}


def utility_norm(C: np.ndarray, H: np.ndarray) -> float:
    """``||L C^{-1}||_F^2 = tr(H (C^T C)^{-1})`` (Lemma 10)."""
    Ci = applied_noise(C)
    return float(np.sum(Ci * (H @ Ci)))


@dataclass(frozen=True)
class Factorisation:
    """A local correlation with its accounting.

    ``C``: ``C_local``, invertible (lower triangular from the optimiser; noise as applied
    ``C^{-1}``); ``sens2``: certified
    upper ``sens_Pi(C)^2`` recomputed by the accounting (``sens2_lower`` its lower bound);
    ``utility``: ``tr(H (C^T C)^{-1})``; ``objective = sens2 * utility`` (Lemma 10).
    Optimiser results also carry the solver's certificate: ``dual_bound`` (Lagrange dual lower
    bound on the optimum), ``gap`` (relative), ``stationarity`` (relative projected gradient)
    and ``iterations``.
    """

    name: str
    C: np.ndarray
    sens2: float
    sens2_lower: float
    utility: float
    objective: float
    dual_bound: float | None = None
    gap: float | None = None
    stationarity: float | None = None
    iterations: int | None = None
    notes: tuple = field(default_factory=tuple)

    @property
    def noise(self) -> np.ndarray:
        """The noise correlation as applied, ``C^{-1}``."""
        return applied_noise(self.C)

    def to_dict(self) -> dict:
        out = {k: getattr(self, k) for k in ("name", "sens2", "sens2_lower", "utility",
                                              "objective", "dual_bound", "gap", "stationarity",
                                              "iterations")}
        out["T"] = int(self.C.shape[0])
        out["notes"] = list(self.notes)
        return out


def evaluate(name: str, C: np.ndarray, H: np.ndarray, scheme, **extra) -> Factorisation:
    """Score a correlation with the accounting: ``sens^2`` (recomputed) times the utility."""
    s = ldp_sensitivity(C, scheme)
    u = utility_norm(C, H)
    return Factorisation(name=name, C=np.asarray(C, dtype=np.float64), sens2=s["upper"],
                         sens2_lower=s["lower"], utility=u, objective=s["upper"] * u, **extra)


def _check_H(H, T=None) -> np.ndarray:
    H = np.asarray(getattr(H, "H", H), dtype=np.float64)
    if H.ndim != 2 or H.shape[0] != H.shape[1] or (T is not None and H.shape[0] != T):
        raise ParameterError(f"H must be a square T x T matrix, got shape {H.shape}")
    if not np.all(np.isfinite(H)):
        raise ParameterError("H has non-finite entries")
    if np.max(np.abs(H - H.T)) > 1e-9 * max(1.0, np.abs(H).max()):
        raise ParameterError("H must be symmetric")
    return (H + H.T) / 2


def correlation_memory(T: int, memory: int) -> int:
    """Bytes the L-BFGS solve and the scoring of its result hold: its ``memory`` pairs of
    ``T x T`` steps and at most 56 other ``T x T`` arrays (X, gradients, direction, trial
    point, Cholesky factors, the dual bound, the recomputed sensitivity's sandwich), besides
    the caller's H (tracemalloc peaks: 85, 73, 72 ``T x T`` doubles at T = 60, 120, 240 with
    ``memory = 20``)."""
    return 8 * (2 * memory + 56) * T * T


def _require_fits(T: int, memory: int, max_memory) -> None:
    resources.require_fits(lambda t: correlation_memory(t, memory), T,
                           resources.memory_budget(max_memory),
                           f"the correlation optimiser at T = {T}", unit="gradient steps")


@limit_blas_threads
def optimise_correlation(H, scheme, *, max_iter: int = 5000, tol: float = 1e-9,
                         memory: int = 20, progress=None, name: str = "mafalda",
                         max_memory: MemorySize = None) -> Factorisation:
    """Minimise ``sens_Pi(C)^2 tr(H (C^T C)^{-1})`` over local correlations C (module
    docstring).

    Parameters
    ----------
    H : T x T utility Gram matrix (array, or a :class:`sparsedp.mf.utility.UtilityGram`).
    scheme : participation scheme whose patterns partition the T steps (``(k, b)`` with
        ``T = k b``, ``"single"``, ``"user-level"``).
    max_iter, tol : L-BFGS iterations and the stopping tolerance on the relative decrease.
    memory : L-BFGS memory.
    progress : tqdm bar (``None`` automatic).
    name : the result's name.
    max_memory : memory budget (bytes or e.g. ``"8G"``), checked before the solve
        (:func:`correlation_memory`).

    Returns
    -------
    Factorisation
        C (lower triangular) with the recomputed certified ``sens2``, the objective and the
        optimality certificate (``dual_bound``, ``gap``, ``stationarity``).

    Raises
    ------
    ParameterError
        H not a finite symmetric T x T matrix, or T not a multiple of the scheme's period.
    ResourceLimitError
        The solve does not fit in ``max_memory``.

    Examples
    --------
    >>> import networkx as nx, sparsedp
    >>> from sparsedp.mf.utility import utility_gram
    >>> from sparsedp.mf.optimise import optimise_correlation
    >>> H = utility_gram(sparsedp.gossip_matrix(nx.cycle_graph(6)), 6).H
    >>> best = optimise_correlation(H, (2, 3), progress=False)
    >>> round(best.sens2, 6), bool(best.gap < 1e-8)
    (1.0, True)
    """
    H = _check_H(H)
    T = H.shape[0]
    _require_fits(T, memory, max_memory)
    labels = pattern_labels(scheme, T)
    counts = np.bincount(labels).astype(float)
    same = labels[:, None] == labels[None, :]
    X = np.diag(1.0 / counts[labels])                     # I / k: feasible
    f, G = _value_and_grad(X, H)
    g = _project(G, labels, same, counts)
    g0 = np.sqrt(np.sum(g * g))
    S, Y = [], []
    bar = progress_bar(progress, total=max_iter, desc="MAFALDA correlation", unit="it")
    it = 0
    converged = False
    while it < max_iter:
        it += 1
        # two-loop recursion on the subspace
        q = -g
        alphas = []
        for s, y in reversed(list(zip(S, Y, strict=True))):
            rho = 1.0 / np.sum(y * s)
            a = rho * np.sum(s * q)
            alphas.append((a, rho, s, y))
            q = q - a * y
        if S:
            q = q * (np.sum(S[-1] * Y[-1]) / np.sum(Y[-1] * Y[-1]))
        else:
            q = q * (0.1 * np.abs(np.diagonal(X)).max() / max(np.abs(q).max(), 1e-300))
        for a, rho, s, y in reversed(alphas):
            b = rho * np.sum(y * q)
            q = q + (a - b) * s
        D = _project(q, labels, same, counts)
        slope = np.sum(D * g)
        if slope >= 0:                       # not a descent direction: restart
            S, Y = [], []
            D = -g * (0.1 * np.abs(np.diagonal(X)).max() / max(np.abs(g).max(), 1e-300))
            slope = np.sum(D * g)
        step = 1.0
        for _ in range(60):
            Xn = X + step * D
            fn, Gn = _value_and_grad(Xn, H)
            if fn <= f + 1e-4 * step * slope:
                break
            step *= 0.5
        else:
            break                            # no decrease along a descent direction
        gn = _project(Gn, labels, same, counts)
        s_, y_ = Xn - X, gn - g
        if np.sum(s_ * y_) > 1e-16 * np.sqrt(np.sum(s_ * s_) * np.sum(y_ * y_)):
            S.append(s_)
            Y.append(y_)
            if len(S) > memory:
                S.pop(0)
                Y.pop(0)
        decrease = f - fn
        X, f, g = (Xn + Xn.T) / 2, fn, gn
        if bar is not None:
            bar.update(1)
        if decrease <= tol * abs(f) and np.sqrt(np.sum(g * g)) <= 1e-6 * g0:
            converged = True
            break
    if bar is not None:
        bar.close()
    _, Gfull = _value_and_grad(X, H)
    stationarity = float(np.sqrt(np.sum(g * g)) / np.sqrt(np.sum(Gfull * Gfull)))
    dual = _dual_bound(X, H, labels, same)
    C = chol_correlation(X)
    notes = ("sens2 recomputed by sparsedp.mf.mf_sensitivity (ldp) from C; the optimiser's "
             "own constraint sets it to 1",
             "dual_bound: Lagrange dual at the multipliers of the returned X, a lower bound on "
             "the optimum of the constrained problem")
    if not converged:
        notes += (f"stopping test not met after {it} iterations (line search or max_iter): "
                  "judge the result by its gap",)
    out = evaluate(name, C, H, scheme, iterations=it, stationarity=stationarity,
                   dual_bound=dual, notes=notes)
    return dataclasses.replace(out, gap=(out.objective - dual) / out.objective)


# ----------------------------------------------------------------------------- baselines
def prefix_gram(T: int) -> np.ndarray:
    """``A^T A`` for the prefix-sum workload A (lower-triangular ones) of centralized SGD:
    ``(A^T A)_st = T - max(s, t)``."""
    s = np.arange(T)
    return (T - np.maximum(s[:, None], s[None, :])).astype(np.float64)


@limit_blas_threads
def baselines(H, scheme, *, progress=None, max_memory: MemorySize = None) -> dict:
    """DP-D-SGD (C = I), AntiPGD (C = lower-triangular ones, noise ``z_t - z_(t-1)``) and D-MF
    (Choquette-Choo et al.'s optimum for the prefix-sum workload, applied locally), each scored
    with the accounting under H (``max_memory`` as for :func:`optimise_correlation`)."""
    H = _check_H(H)
    T = H.shape[0]
    _require_fits(T, 20, max_memory)
    pattern_labels(scheme, T)
    dmf = optimise_correlation(prefix_gram(T), scheme, progress=progress, name="d-mf",
                               max_memory=max_memory)
    return {
        "dp-d-sgd": evaluate("dp-d-sgd", np.eye(T), H, scheme),
        "antipgd": evaluate("antipgd", np.tril(np.ones((T, T))), H, scheme),
        "d-mf": evaluate("d-mf", dmf.C, H, scheme, notes=("optimised for the prefix-sum "
                                                          "workload, scored under H",)),
    }
