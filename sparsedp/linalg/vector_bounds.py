"""Bounds on the vector quadratic maximum, the semidefinite programme

    max { sum_(s,t) M_st <x_s, x_t> : x_t in R^d, ||x_t|| <= 1 }
        = max { <M, X> : X PSD, diag(X) = 1, rank X <= d },

from a certified sandwich of a PSD ``M`` (:class:`sparsedp.linalg.certified.MatrixSandwich`).
For PSD M the maximum over the ball is attained on the sphere (the objective is convex in
each x_t), so ``diag(X) = 1``; for ``d >= r`` with ``r(r + 1)/2 > T`` the rank constraint is
not binding (Barvinok-Pataki) and this is the SDP relaxation of the sign problem.  Bellet et
al.'s sensitivity with clipped d-dimensional gradients is this value.

* **Solver.**  For ``T <= BARRIER_MAX_T`` an interior-point (log-barrier) solve of the dual
  ``min sum d, diag(d) - M PSD`` (:func:`_barrier`: Newton steps, ``O(T^3)`` each, duality
  gap ``T mu`` driven to ``1e-10`` relative; at T = 1000 about 80 steps, 4 s, where the mixing
  method left a gap of 7e-5 after 434 sweeps and closes it only like 1/sweeps); its primal
  ``X = mu S^-1``, rescaled to a unit diagonal and written ``X = V V^T`` (V: T x T), and its
  dual d give the two bounds below.  Otherwise, or if a step fails, the mixing method
  (:func:`sparsedp.linalg.kernels.mixing_sweeps`) on ``low`` from a seeded random start, rank
  ``r = min(T, ceil(sqrt(2 T)) + 1)``, and the multipliers of its stationarity conditions.
* **Primal (lower bound).**  ``X = V V^T`` with unit rows is feasible for gradients of at
  least ``rank V`` coordinates; the SDP's maximum is attained at rank at most r
  (Barvinok-Pataki), so ``<M, X>`` bounds it from below for gradients of at least r
  coordinates whatever ``rank V`` is; and
  ``<M, X> >= <low, X> - slack`` with the slack of sign vectors
  (:meth:`MatrixSandwich.quadratic_slack`: a sign vector is the case r = 1 of the same
  argument — ``<D, X> <= ||D||_2 tr X``, ``<F, X> >= 0``, ``|<E, X>| <= sum |E|`` since
  ``|X_st| <= 1``) plus ``gamma_(T k + 1) sum |low|`` (k the columns of V) for evaluating
  ``<low, X>``.
* **Dual (certified upper bound).**  For any d,
  ``<M, X> = <M - diag d, X> + sum d <= T lambda_max(M - diag d) + sum d`` (``tr X = T``),
  certified on ``up`` by :func:`sparsedp.linalg.sign_bounds.certified_shift_bound` (whose
  ``sign_vector_allowance`` covers ``<M - up, X>`` for such X by the same argument as the
  lower bound's), with d the interior-point dual, or the mixing method's multipliers
  ``lambda_i = M_ii + ||g_i||`` (at a stationary point ``(M V)_i = lambda_i v_i``, and at
  the optimum ``M - diag(lambda) <= 0``).  The two meet as the solver converges.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import scipy.linalg

from sparsedp.linalg import kernels
from sparsedp.linalg.certified import MatrixSandwich, gamma
from sparsedp.linalg.sign_bounds import Bound, certified_shift_bound

SEED = 20_261_125  # of the random start: the bounds are reproducible
BARRIER_MAX_T = 1200  # the interior-point solve (O(T^3) a Newton step: ~4 s at T = 1000)
BARRIER_RTOL = 1e-10  # its duality gap T mu, relative
BARRIER_NEWTON, BARRIER_MAX_STEPS = 50, 400
SWEEP_WORK = 2e10  # multiply-adds of the mixing method: SWEEP_WORK / (T^2 r) sweeps, clipped
MIN_SWEEPS, MAX_SWEEPS = 50, 2000
VECTOR_SETTLED_GAP = 1e-8  # relative gap of the sign bounds below which the SDP is not solved


def rank_for(T: int) -> int:
    """``r = min(T, ceil(sqrt(2 T)) + 1)``: ``r (r + 1) / 2 > T``, so an optimal X of rank at
    most r exists (Barvinok-Pataki) and, generically, every local maximum of the rank-r
    problem is global (Boumal, Voroninski and Bandeira 2016)."""
    return min(T, math.ceil(math.sqrt(2 * T)) + 1)


def vector_bounds(sandwich: MatrixSandwich, backend: str = "auto") -> list[Bound]:
    """The SDP primal (``sdp_primal``, lower: valid for gradients with at least
    :func:`rank_for` coordinates) and a dual (``sdp_dual``, certified upper) for the PSD
    matrix inside ``sandwich`` (module docstring): from the interior-point solve for
    ``T <= BARRIER_MAX_T``, else (or if it fails) from the mixing method."""
    T, low = sandwich.T, sandwich.low
    r = rank_for(T)
    slack = sandwich.quadratic_slack()
    solved = _barrier(0.5 * (low + low.T)) if T <= BARRIER_MAX_T else None
    if solved is not None:
        d, V, steps = solved
        value = float(((low @ V) * V).sum())
        primal = (f"Gram matrix of unit vectors (interior-point solve, {steps} Newton steps): "
                  f"the SDP's maximum, attained at rank <= {r}, is at least this, so it bounds "
                  f"gradients with at least {r} coordinates")
        dual = "T lambda_max(M_up - diag d) + sum d, d the interior-point dual"
    else:
        V = np.random.default_rng(SEED).standard_normal((T, r))
        V /= np.linalg.norm(V, axis=1, keepdims=True)
        sweeps = int(np.clip(SWEEP_WORK / (T * T * r), MIN_SWEEPS, MAX_SWEEPS))
        V, MV, done = kernels.mixing_sweeps(low, V, sweeps, backend=backend)
        value = float((MV * V).sum())
        diagonal = np.diag(low)
        d = diagonal + np.linalg.norm(MV - diagonal[:, None] * V, axis=1)  # the multipliers
        primal = (f"Gram matrix of unit vectors in R^{r} (mixing method, {done} sweeps): "
                  f"feasible for gradients with at least {r} coordinates")
        dual = "T lambda_max(M_up - diag l) + sum l, l the SDP primal's multipliers"
    slack += gamma(T * V.shape[1] + 1) * float(np.abs(low).sum())
    upper = certified_shift_bound(sandwich, d, backend=backend)
    return [Bound("sdp_primal", value - slack, "lower", primal),
            Bound("sdp_dual", upper, "certified upper", dual)]


def for_vector_gradients(bounds: list[Bound], sandwich: MatrixSandwich,
                         backend: str = "auto") -> list[Bound]:
    """The sign problem's bounds re-read for d-dimensional gradients clipped in norm, whose
    exact value is the SDP ``max <M, X>`` (module docstring), with the SDP bounds added
    where they can narrow the interval.

    A sign vector is a feasible point (``x_t = c_t e_1``), so every sign bound of kind
    ``lower`` stays a lower bound, and the exhaustive maximum becomes one too
    (``exhaustive_signs``, kind ``lower``); its certified upper end (``exhaustive_upper``)
    bounds the sign maximum only and is dropped.  Every other certified upper bound of
    :func:`sparsedp.linalg.sign_bounds.evaluate_bounds` holds for ``<M, X>`` (spectral:
    ``tr X = T``; diagonal shift: the SDP dual; entrywise: ``|X_st| <= 1``; local DP:
    ``M <= I``).  When the remaining interval is open by more than ``VECTOR_SETTLED_GAP``
    (relative; below it the sandwich's own rounding is of the same order and the SDP solve,
    seconds at T = 1000, could not narrow it), :func:`vector_bounds` adds ``sdp_primal`` and
    ``sdp_dual``."""
    out = []
    for b in bounds:
        if b.name == "exhaustive_upper":
            continue
        if b.name == "exhaustive":
            b = dataclasses.replace(b, name="exhaustive_signs", kind="lower")
        out.append(b)
    lower = max((b.value for b in out if b.kind == "lower"), default=0.0)
    upper = min((b.value for b in out if b.kind == "certified upper"), default=np.inf)
    if upper - lower > VECTOR_SETTLED_GAP * abs(upper):
        out += vector_bounds(sandwich, backend)
    return out


def _barrier(M: np.ndarray) -> tuple[np.ndarray, np.ndarray, int] | None:
    """Primal-dual point of ``max <M, X>, X PSD, diag X = 1`` by the log-barrier method on
    the dual ``min sum d, S = diag(d) - M PSD``: Newton steps on ``sum d - mu log det S``
    (gradient ``1 - mu diag(S^-1)``, Hessian ``mu S^-1 o S^-1``), backtracking to keep S
    positive definite, ``mu`` divided by 10 until ``T mu <= BARRIER_RTOL sum d`` (the duality
    gap of the central point is ``T mu``).  Returns the dual d, V with unit rows whose Gram
    matrix is the primal ``X = mu S^-1`` rescaled to a unit diagonal, and the Newton steps;
    ``None`` if a step fails.  Neither needs to be accurate: the bounds built from them are
    certified (module docstring)."""
    T = M.shape[0]
    scale = float(np.abs(M).sum()) / T
    if not scale > 0:
        return None
    d = np.abs(M).sum(axis=1) + 1e-3 * scale  # diagonally dominant: S positive definite
    mu = scale
    identity = np.eye(T)

    def potential(x):
        try:
            factor = scipy.linalg.cho_factor(np.diag(x) - M, lower=True, check_finite=False)
        except np.linalg.LinAlgError:
            return np.inf, None
        return float(x.sum()) - 2 * mu * float(np.log(np.diag(factor[0])).sum()), factor

    steps = 0
    try:
        while True:
            value, factor = potential(d)  # at this mu
            for _ in range(BARRIER_NEWTON):
                S_inv = scipy.linalg.cho_solve(factor, identity, check_finite=False)
                gradient = 1.0 - mu * np.diag(S_inv)
                # ill-conditioned near the optimum; the step need not be exact (the bounds
                # built from d and V are certified whatever they are)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", scipy.linalg.LinAlgWarning)
                    step = -scipy.linalg.solve(mu * S_inv * S_inv, gradient, assume_a="pos",
                                               check_finite=False)
                decrement = float(-gradient @ step)
                if decrement <= 1e-3 * mu:
                    break
                a = 1.0
                trial = potential(d + a * step)
                while trial[0] > value - 0.25 * a * decrement and a > 1e-12:
                    a *= 0.5
                    trial = potential(d + a * step)
                d = d + a * step
                value, factor = trial  # the accepted point's factor serves the next step
                steps += 1
            if T * mu <= BARRIER_RTOL * float(d.sum()) or steps > BARRIER_MAX_STEPS:
                break
            mu *= 0.1
        X = mu * scipy.linalg.cho_solve(factor, identity, check_finite=False)
        w, Q = np.linalg.eigh(0.5 * (X + X.T))
    except (np.linalg.LinAlgError, ValueError, TypeError):
        return None
    V = Q * np.sqrt(np.clip(w, 0.0, None))
    norms = np.linalg.norm(V, axis=1, keepdims=True)
    if not np.all(norms > 0):
        return None
    return d, V / norms, steps
