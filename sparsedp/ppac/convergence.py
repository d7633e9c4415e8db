"""Convergence time of PPAC: the paper's bounds (Lemma B.5, eqs. 133, 144, 145) and an exact
expected initial error that tightens them.

PPAC changes only ``v(0)``; the error obeys ``v(t+1) - u* = (W - 11^T/n)(v(t) - u*)``
(eq. 128), so ``||v(t) - u*|| <= alpha^t ||v(0) - u*||`` with ``alpha = ||W - 11^T/n||_2``.

* Lemma B.5 (eq. 121), per realisation:
  ``t_eps <= max(0, ceil(log((1 + ||v(0) - u*||) / eps) / log(1/alpha)))``.  (The paper
  omits the ``max(0, .)``; without it the bound is negative when ``eps > 1 + ||v(0) - u*||``.)
* Eq. 133, in expectation (Jensen):
  ``E[t_eps] <= log(2 (1 + E||v(0) - u*||^2) / eps) / log(1/alpha) + 1``.
* Eq. 144: ``E||v(0) - u*||^2 <= n (d_max^2 + 1)^2 (mu_max^2 + sigma_max^2)``; eq. 145 is
  eq. 133 with it.
* Exact (this module): with ``v(0) - u* 1 = E g``, ``E = C - (1/n) 1 [1_n^T, 0]``, the
  column of ``u_k`` is ``e_{m_k} - 1/n`` (squared norm ``1 - 1/n``) and the column of
  ``Gamma_kl`` is ``e_l - e_{m_k}`` (squared norm 2), hence

      E||v(0) - u*||^2 = ||E mu_g||^2 + (1 - 1/n) sum_k sigma_k^2 + 2 sum_{(k,l) in S} sigma_kl^2.

  For d-dimensional values with independent coordinates (same parameters) multiply by d.

A remark on the paper's derivation: the step (140) -> (141) drops the term
``|{j in N_i : i != m_j}| sigma_max^2``; (142) still holds because
``|A| d_max + |B| <= d_max^2`` when ``|A| + |B| <= d_max``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from sparsedp import defaults
from sparsedp.errors import GossipMatrixError, ParameterError
from sparsedp.linalg.spectral import DENSE_MAX_N, rho_bound
from sparsedp.linalg.stochastic import has_property
from sparsedp.ppac.protocol import PPACLayout, _per_item, check_consensus_matrix
from sparsedp.reprs import short_repr

__all__ = ["ConvergenceBounds", "consensus_rate", "convergence_bounds",
           "expected_initial_error", "lemma_b5_bound"]


def consensus_rate(W: Any, n: int) -> tuple[float, str]:
    """An upper bound on ``alpha = ||W - 11^T/n||_2`` and how it was obtained.

    Symmetric W: ``max(|lambda_2|, |lambda_n|)`` from :func:`sparsedp.linalg.spectral.spectral_info`
    plus its stated tolerance, certified by inertia where affordable
    (:func:`sparsedp.linalg.spectral.rho_bound`; ``how`` says "not certified" otherwise, and
    :func:`convergence_bounds` then reports kind ``"estimate"``).  Otherwise the dense 2-norm
    (``n <= DENSE_MAX_N``) plus
    ``n eps ||W||_F``.  ``GossipMatrixError`` when ``alpha >= 1`` (no convergence: e.g. the
    paper's ``I - L/d_max`` on an even cycle has the eigenvalue ``-1``).
    """
    alpha, how, _ = _consensus_rate(W, n)
    return alpha, how


def _consensus_rate(W: Any, n: int) -> tuple[float, str, bool]:
    """``(alpha, how, certified)`` of :func:`consensus_rate`."""
    M = check_consensus_matrix(W, n)
    if has_property(M, "symmetric"):
        bound = rho_bound(M)
        alpha, how, certified = bound.value, bound.note, bound.certified
    elif n <= DENSE_MAX_N:
        D = M.toarray() - 1.0 / n
        alpha = float(np.linalg.norm(D, 2)) + n * np.finfo(float).eps * np.linalg.norm(D)
        how, certified = "dense 2-norm + rounding", True
    else:
        raise ParameterError("alpha = ||W - 11^T/n||_2 for a non-symmetric W is only computed "
                             f"densely (n <= {DENSE_MAX_N})")
    if alpha >= 1.0 - 1e-12:
        raise GossipMatrixError(
            f"||W - 11^T/n||_2 = {alpha:.12g} is not < 1: the consensus does not converge "
            "(W is periodic or reducible; for I - L/d_max on a bipartite regular graph such as "
            "an even cycle use laplacian_consensus_matrix(graph, scale=d_max + 1))")
    return alpha, how, certified


def _variances(layout: PPACLayout, value_std: Any, noise_std: Any) -> np.ndarray:
    """Variances of the 2m sources; a zero value std (fixed values) is allowed here."""
    sv = _per_item("value_std", value_std, layout.n, positive=False)
    sn = _per_item("noise_std", noise_std, layout.num_sources, positive=False)
    if np.any(sv < 0) or np.any(sn < 0):
        raise ParameterError("standard deviations must be >= 0")
    return np.concatenate([sv, sn[layout.noise_edges]]) ** 2


def expected_initial_error(layout: PPACLayout, *, value_mean: Any = 0.0, value_std: Any = 1.0,
                           noise_mean: Any = 0.0, noise_std: Any = 1.0,
                           dimension: int = 1) -> float:
    """Exact ``E||v(0) - u* 1||^2`` (module docstring); means and stds scalar, per node
    (values, in the graph's node order) or per directed edge (noises, CSR order).
    ``value_std = 0`` with ``value_mean = u`` gives the expectation for fixed values ``u``
    (noise only)."""
    n = layout.n
    mu_u = _per_item("value_mean", value_mean, n, positive=False)
    mu_e = _per_item("noise_mean", noise_mean, layout.num_sources, positive=False)
    mu_g = np.concatenate([mu_u, mu_e[layout.noise_edges]])
    mean = layout.source_matrix() @ mu_g - mu_u.mean()
    var = _variances(layout, value_std, noise_std)
    total = float(mean @ mean) + (1.0 - 1.0 / n) * var[:n].sum() + 2.0 * var[n:].sum()
    return dimension * total


def lemma_b5_bound(alpha: float, initial_error: Any, eps: float) -> np.ndarray:
    """Lemma B.5 (eq. 121) per realisation, with ``max(0, .)``; ``initial_error`` is
    ``||v(0) - u*||_2`` (array)."""
    e0 = np.asarray(initial_error, dtype=np.float64)
    if alpha == 0.0:
        return np.where(e0 <= eps, 0, 1)
    return np.maximum(0, np.ceil(np.log((1.0 + e0) / eps) / math.log(1.0 / alpha))).astype(int)


@dataclass(frozen=True)
class ConvergenceBounds:
    """Upper bounds on the expected convergence time ``E[t_eps]`` (Definition 7.1).

    ``expected_time_exact``: eq. 133 with the exact ``E||v(0) - u*||^2``;
    ``expected_time_paper``: eq. 145 (eq. 133 with the bound 144).  Both are upper bounds
    (kind ``"upper"``) when ``alpha`` is certified, estimates (kind ``"estimate"``) when it
    is an uncertified eigensolver estimate (``alpha_method`` says which).
    """

    eps: float
    alpha: float
    alpha_method: str
    initial_error_sq_exact: float
    initial_error_sq_paper: float
    expected_time_exact: float
    expected_time_paper: float
    kind: str = "upper"

    __repr__ = short_repr

    def to_dict(self) -> dict:
        return asdict(self)


def _eq133(alpha: float, initial_sq: float, eps: float) -> float:
    if alpha == 0.0:
        return 1.0
    return math.log(2.0 * (1.0 + initial_sq) / eps) / math.log(1.0 / alpha) + 1.0


def convergence_bounds(layout: PPACLayout, W: Any, eps: float, *, value_mean: Any = 0.0,
                       value_std: Any = defaults.PPAC_VALUE_STD, noise_mean: Any = 0.0,
                       noise_std: Any = defaults.PPAC_NOISE_STD,
                       dimension: int = 1) -> ConvergenceBounds:
    """Eq. 133 with the exact initial error, and the paper's eq. 145 (see module docstring)."""
    if not (isinstance(eps, (int, float)) and eps > 0 and math.isfinite(eps)):
        raise ParameterError(f"eps must be > 0 and finite, got {eps!r}")
    alpha, how, certified = _consensus_rate(W, layout.n)
    exact = expected_initial_error(layout, value_mean=value_mean, value_std=value_std,
                                   noise_mean=noise_mean, noise_std=noise_std,
                                   dimension=dimension)
    n, d_max = layout.n, int(layout.graph.degrees.max())
    mu_u = _per_item("value_mean", value_mean, n, positive=False)
    mu_e = _per_item("noise_mean", noise_mean, layout.num_sources, positive=False)
    mu_max = float(max(np.abs(mu_u).max(), np.abs(mu_e[layout.noise_edges]).max(initial=0.0)))
    var_max = float(_variances(layout, value_std, noise_std).max())
    paper = dimension * n * (d_max**2 + 1) ** 2 * (mu_max**2 + var_max)
    return ConvergenceBounds(float(eps), alpha, how, exact, paper, _eq133(alpha, exact, eps),
                             _eq133(alpha, paper, eps), "upper" if certified else "estimate")
