"""Bounds on the vector quadratic maximum, the semidefinite programme

    max { sum_(s,t) M_st <x_s, x_t> : x_t in R^d, ||x_t|| <= 1 }
        = max { <M, X> : X PSD, diag(X) = 1, rank X <= d },

from a certified sandwich of a PSD ``M`` (:class:`sparsedp.linalg.certified.MatrixSandwich`).
For PSD M the maximum over the ball is attained on the sphere (the objective is convex in
each x_t), so ``diag(X) = 1``; for ``d >= r`` with ``r(r + 1)/2 > T`` the rank constraint is
not binding (Barvinok-Pataki) and this is the SDP relaxation of the sign problem.  Bellet et
al.'s sensitivity with clipped d-dimensional gradients is this value.

* **Primal (lower bound).**  The mixing method (:func:`sparsedp.linalg.kernels.mixing_sweeps`)
  on ``low`` from a seeded random start, rank ``r = min(T, ceil(sqrt(2 T)) + 1)``:
  ``X = V V^T`` is feasible for gradients of at least r coordinates, and
  ``<M, X> >= <low, X> - slack`` with the slack of sign vectors
  (:meth:`MatrixSandwich.quadratic_slack`: a sign vector is the case r = 1 of the same
  argument — ``<D, X> <= ||D||_2 tr X``, ``<F, X> >= 0``, ``|<E, X>| <= sum |E|`` since
  ``|X_st| <= 1``) plus ``gamma_(T r + 1) sum |low|`` for evaluating ``<low, X>``.
* **Dual (certified upper bound).**  At a stationary point ``(M V)_i = lambda_i v_i`` with
  ``lambda_i = M_ii + ||g_i||``, and at the optimum ``M - diag(lambda) <= 0``; for any d,
  ``<M, X> = <M - diag d, X> + sum d <= T lambda_max(M - diag d) + sum d`` (``tr X = T``),
  certified on ``up`` by :func:`sparsedp.linalg.sign_bounds.certified_shift_bound` with
  ``d = lambda`` from the primal.  The two meet as the primal converges.
"""

from __future__ import annotations

import math

import numpy as np

from sparsedp.linalg import kernels
from sparsedp.linalg.certified import MatrixSandwich, gamma
from sparsedp.linalg.sign_bounds import Bound, certified_shift_bound

SEED = 20_261_125  # of the random start: the bounds are reproducible
SWEEP_WORK = 2e10  # multiply-adds of the mixing method: SWEEP_WORK / (T^2 r) sweeps, clipped
MIN_SWEEPS, MAX_SWEEPS = 50, 2000


def rank_for(T: int) -> int:
    """``r = min(T, ceil(sqrt(2 T)) + 1)``: ``r (r + 1) / 2 > T``, so an optimal X of rank at
    most r exists (Barvinok-Pataki) and, generically, every local maximum of the rank-r
    problem is global (Boumal, Voroninski and Bandeira 2016)."""
    return min(T, math.ceil(math.sqrt(2 * T)) + 1)


def vector_bounds(sandwich: MatrixSandwich, backend: str = "auto") -> list[Bound]:
    """The SDP primal (``sdp_primal``, lower: valid for gradients with at least
    :func:`rank_for` coordinates) and the dual from its multipliers (``sdp_dual``,
    certified upper) for the PSD matrix inside ``sandwich`` (module docstring)."""
    T, low = sandwich.T, sandwich.low
    r = rank_for(T)
    V = np.random.default_rng(SEED).standard_normal((T, r))
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    sweeps = int(np.clip(SWEEP_WORK / (T * T * r), MIN_SWEEPS, MAX_SWEEPS))
    V, MV, done = kernels.mixing_sweeps(low, V, sweeps, backend=backend)
    value = float((MV * V).sum())
    slack = sandwich.quadratic_slack() + gamma(T * r + 1) * float(np.abs(low).sum())
    diagonal = np.diag(low)
    multipliers = diagonal + np.linalg.norm(MV - diagonal[:, None] * V, axis=1)
    upper = certified_shift_bound(sandwich, multipliers, backend=backend)
    return [
        Bound("sdp_primal", value - slack, "lower",
              f"Gram matrix of unit vectors in R^{r} (mixing method, {done} sweeps): "
              f"feasible for gradients with at least {r} coordinates"),
        Bound("sdp_dual", upper, "certified upper",
              "T lambda_max(M_up - diag l) + sum l, l the SDP primal's multipliers"),
    ]
