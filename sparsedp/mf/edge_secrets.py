"""DECOR (App. A.5; Allouah et al. 2024) when every message is public: local DP and SecLDP.

Messages ``O = W_T (G + Z + (I_T kron s Inc) V)`` (:mod:`sparsedp.mf.algorithms`): W_T is
invertible, so the attacker equivalently sees, at every step, ``y_t = g_t + z_t + s Inc v_t``
for every node, with covariance ``I + s^2 Lap`` (``Lap = Inc Inc^T`` the graph Laplacian;
the secrets of different steps are independent).  Under SecLDP the attackers know their own
``z`` and the secrets of every edge incident to them: their own rows are then known
exactly (no information) and, for the other nodes, the known secrets are subtracted.  Hence,
with ``V'`` the nodes outside the attacker set and ``Lap'`` the Laplacian of the graph they
induce (all nodes and edges under LDP),

    M = c I_T,     c = [(I + s^2 Lap')^{-1}]_(u u),

and ``sens^2 = c |pi|`` for every pattern, scalar or vector gradients alike
(``tr(c I X) = c |pi|``); Theorem 7's bound is the same number.  ``c`` is certified from one
sparse SPD solve: ``lambda_min(I + s^2 Lap') >= 1``, so for any ``x`` with true residual
``r = e_u - K x``, ``2 x_u - x^T K x <= c <= 2 x_u - x^T K x + ||r||^2``; the rounding of
``K x`` (sums of at most ``d + 2`` terms: ``|fl(K x) - K x| <= gamma_(d+2) |K| |x|``) and of
the inner products (``gamma_(n')``) is added on both sides, and so is the rounding of K itself
(``s^2`` and its entries: ``||fl(K) - K||_2 <= 3 u (1 + s^2 d_max)``, which moves c by at most
as much since both have ``lambda_min >= 1``).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from sparsedp.gossip.target_block import TargetBlock
from sparsedp.linalg.certified import UNIT_ROUNDOFF, gamma

DIRECT_MAX_N = 200_000  # sparse direct solve up to this many nodes, CG beyond


def decor_block(pattern: sp.csr_matrix, target: int, attackers: np.ndarray, T: int,
                secret_scale: float) -> TargetBlock:
    """``M = c I_T`` with a certified interval for c (module docstring)."""
    n = pattern.shape[0]
    outside = np.ones(n, dtype=bool)
    outside[attackers] = False
    nodes = np.flatnonzero(outside)
    adjacency = ((pattern + pattern.T) != 0).astype(np.float64).tocsr()
    adjacency.setdiag(0)
    adjacency.eliminate_zeros()
    sub = adjacency[nodes][:, nodes].tocsr()
    degrees = np.asarray(sub.sum(axis=1)).ravel()
    s2 = secret_scale * secret_scale
    K = (sp.identity(nodes.size, format="csr") + s2 * (sp.diags(degrees) - sub)).tocsr()
    u = int(np.searchsorted(nodes, target))
    e = np.zeros(nodes.size)
    e[u] = 1.0
    if nodes.size <= DIRECT_MAX_N:
        x = spla.spsolve(K.tocsc(), e)
    else:
        x, _ = spla.cg(K, e, rtol=1e-14, maxiter=10_000)
    Kx = K @ x
    d = int(np.diff(K.indptr).max())
    absKx = abs(K) @ np.abs(x)
    r = e - Kx
    r_norm = float(np.linalg.norm(r)) + gamma(d + 2) * float(np.linalg.norm(absKx + e))
    low = 2.0 * x[u] - float(x @ Kx)
    rounding = gamma(nodes.size + d + 4) * (float(np.abs(x) @ absKx) + 2.0 * abs(x[u]))
    rounding += 4 * UNIT_ROUNDOFF * abs(low)
    # K as stored differs from I + s^2 Lap by the rounding of s^2 and of its entries:
    # ||dK||_2 <= 3 u (1 + s^2 d_max), and |c_exact - c_stored| <= ||dK|| (lambda_min >= 1)
    rounding += 4 * UNIT_ROUNDOFF * (1.0 + s2 * float(degrees.max(initial=0.0)))
    c_low = max(low - rounding, 0.0)
    c_high = min(low + rounding + r_norm**2 * (1 + 4 * UNIT_ROUNDOFF), 1.0)
    known = "" if attackers.size == 0 else (
        ", the attackers' noise and the secrets of their edges known")
    return TargetBlock(
        T=T, closed_form="scaled-identity", method="sparse SPD solve",
        solver={"c_low": c_low, "c_high": c_high, "nodes": int(nodes.size)},
        notes=(f"DECOR, every message public{known}: M = c I_T, c = [(I + s^2 Lap')^-1]_uu",),
    )
