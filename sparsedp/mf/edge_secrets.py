"""DECOR (App. A.5; Allouah et al. 2024): every message public (local DP, SecLDP) and the
attackers' received messages only (PNDP, App. A.5's form).

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

PNDP (:func:`decor_pndp_block`).  The attackers see the rows ``S`` of the messages (``"pndp"``:
their closed neighbourhood, as for D-SGD; ``"pndp-eq12"``: the messages they receive) and,
under ``"pndp"``, know their own gradients (Lemma 11), their own noise and the secrets of
their edges (App. A.5's ``[0 I 0]`` and ``E`` rows).  Conditioning on the known noise deletes
its columns, so with ``H`` the D-SGD message operator of the observed rows (the gossip
engine's, known-noise columns of the attackers deleted under ``"pndp"``)

    B B^T = H (I_T kron Sigma) H^T,   Sigma = I' + s^2 Lap',

``I'`` the identity on the non-attackers and ``Lap'`` the Laplacian of the edges not incident
to an attacker (``"pndp"``), or ``Sigma = I + s^2 Lap`` (``"pndp-eq12"``).  Restricted to the
unknown columns ``Sigma >= I`` is positive definite, so ``B`` has the row dependencies of
``H`` and the gossip engine's exact redundant-row decision applies (an attacker's own
message is a function of what it knows).  ``K`` is assembled densely on the kept rows
(``T m <= OPERATOR_ASSEMBLY_MAX_DIM``), with ``|fl(K) - K| <= gamma_k H |Sigma| H^T``
entrywise (every product but Sigma's off-diagonal is non-negative), and
``M = A_u^T K^{-1} A_u`` (``A_u`` the target's columns of ``H``) gets a certified sandwich.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from sparsedp.errors import ParameterError
from sparsedp.gossip.certified_solve import OPERATOR_ASSEMBLY_MAX_DIM, _certified_dense_sandwich
from sparsedp.gossip.target_block import TargetBlock
from sparsedp.linalg.certified import UNIT_ROUNDOFF, gamma
from sparsedp.linalg.operators import GossipSystem

DIRECT_MAX_N = 200_000  # sparse direct solve up to this many nodes, CG beyond


def decor_block(pattern: sp.csr_matrix, target: int, attackers: np.ndarray, T: int,
                secret_scale: float) -> TargetBlock:
    """``M = c I_T`` with a certified interval for c (module docstring)."""
    nodes = _outside(pattern.shape[0], attackers)
    K = _secret_covariance(pattern, nodes, secret_scale)
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
    # (the stored diagonal 1 + s^2 d_max bounds it to within a relative 2 u)
    rounding += 4 * UNIT_ROUNDOFF * (1 + 2 * UNIT_ROUNDOFF) * float(K.diagonal().max())
    c_low = max(low - rounding, 0.0)
    c_high = min(low + rounding + r_norm**2 * (1 + 4 * UNIT_ROUNDOFF), 1.0)
    known = "" if attackers.size == 0 else (
        ", the attackers' noise and the secrets of their edges known")
    return TargetBlock(
        T=T, closed_form="scaled-identity", method="sparse SPD solve",
        solver={"c_low": c_low, "c_high": c_high, "nodes": int(nodes.size)},
        notes=(f"DECOR, every message public{known}: M = c I_T, c = [(I + s^2 Lap')^-1]_uu",),
    )


def _outside(n: int, attackers: np.ndarray) -> np.ndarray:
    outside = np.ones(n, dtype=bool)
    outside[attackers] = False
    return np.flatnonzero(outside)


def _secret_covariance(pattern: sp.csr_matrix, nodes: np.ndarray,
                       secret_scale: float) -> sp.csr_matrix:
    """``I + s^2 Lap'`` on ``nodes``, ``Lap'`` the Laplacian of the graph they induce."""
    adjacency = ((pattern + pattern.T) != 0).astype(np.float64).tocsr()
    adjacency.setdiag(0)
    adjacency.eliminate_zeros()
    sub = adjacency[nodes][:, nodes].tocsr()
    degrees = np.asarray(sub.sum(axis=1)).ravel()
    s2 = secret_scale * secret_scale
    return (sp.identity(nodes.size, format="csr") + s2 * (sp.diags(degrees) - sub)).tocsr()


def decor_pndp_block(W: sp.csr_matrix, target: int, trust: str, observed: np.ndarray,
                     attackers: np.ndarray, T: int, secret_scale: float) -> TargetBlock:
    """DECOR under ``"pndp"`` / ``"pndp-eq12"``: certified sandwich of M (module docstring)."""
    n = W.shape[0]
    known = attackers if trust == "pndp" else np.zeros(0, dtype=np.int64)
    system = GossipSystem(W, observed, T, known_noise=known)
    m = system.m
    keep = np.flatnonzero(~system.redundant_rows().ravel())
    if system.exact_rank_skipped:
        raise ParameterError("DECOR under PNDP: the exact row reduction is too large here")
    if keep.size == 0:
        return TargetBlock(T=T, closed_form="zero", notes=("every observation is redundant",))
    if keep.size > OPERATOR_ASSEMBLY_MAX_DIM:
        raise ParameterError(f"DECOR under {trust!r} assembles B B^T densely: {keep.size} "
                             f"rows, which exceeds {OPERATOR_ASSEMBLY_MAX_DIM}")
    nodes = _outside(n, known)
    embed = sp.csr_matrix((np.ones(nodes.size), (nodes, np.arange(nodes.size))),
                          shape=(n, nodes.size))
    cov = (embed @ _secret_covariance(W, nodes, secret_scale) @ embed.T).tocsr()
    Y = np.zeros((T * m, keep.size))
    Y[keep, np.arange(keep.size)] = 1.0
    HT = system.apply_HT(Y.reshape(T, m, -1))  # (T, n, r), known columns zero
    K = sum(HT[t].T @ (cov @ HT[t]) for t in range(T))
    K_abs = sum(HT[t].T @ (abs(cov) @ HT[t]) for t in range(T))
    K = 0.5 * (K + K.T)
    depth = int(np.diff(system.W.indptr).max())
    k_terms = 2 * (T + 1) * (depth + 2) + T * n + depth + 16  # H (T (d + 1)), Sigma, sums
    dK = gamma(k_terms) * float(np.abs(K_abs).sum(axis=1).max())
    G = system.G_matrix(target)[keep]
    G_error = gamma(2 * T * (depth + 2) + 2) * G
    sandwich, lam = _certified_dense_sandwich(K, G, dK, G_error)
    info = {"observed_rows": int(T * m), "rows_kept": int(keep.size),
            "lambda_min_lower_bound": lam}
    known_text = ("own noise and the secrets of their edges known" if trust == "pndp"
                  else "no noise known")
    return TargetBlock(T=T, closed_form=None, sandwich=sandwich, upper_certified=lam > 0,
                       method="dense operator assembly", solver=info,
                       notes=(f"DECOR under {trust}: the attackers' messages only, {known_text}",))
