"""The target's block ``M = A_u^T (B B^T)^+ A_u`` (T x T) as a certified sandwich, per trust
model and algorithm (Bellet et al., Thm 7: ``C^T B^+ B C = A^T (B B^T)^+ A``; never ``B^+``).

Paths:

local DP (``"ldp"``)
    B has full column rank exactly when L is invertible (``W_R (I_T kron E_K)`` has full
    column rank: the rows of injection rounds are block unit lower-triangular), and then
    ``M = (L L^T)^{-1} = C_local^T C_local``: ``M = I`` for independent noise (exact), else a
    certified dense T x T solve.  A singular L (decided in exact rational arithmetic) leaves
    the target's column of step t in range(B) exactly when ``e_t`` is in the column space of L
    (also exact): a pattern with a step outside it is infinitely sensitive.
DP-D-SGD under PNDP (K = 1, L = I)
    the innovation form ``K = I + F F^T`` (:mod:`sparsedp.mf.innovations`: block CG,
    ``lambda_min >= 1``) when its cost model prefers it (many observed rows), else the
    gossip engine's certified view (:mod:`sparsedp.gossip.target_block`): ``"pndp"`` is
    ``view="neighbourhood", observers=attackers, noise_removed=True``; ``"pndp-eq12"`` is
    ``view="secure-summation", observers=received rows, noise_removed=False`` (equal to the
    neighbourhood view without noise removal when every attacker has ``W[a, a] > 0``).
K = 1, invertible L under PNDP (AntiPGD, MF-D-SGD)
    ``B = H (L kron I)`` has the same row dependencies as ``H`` (L invertible), so the gossip
    engine's exact redundant-row decisions apply; ``K = B B^T`` is assembled from the
    operator on the kept rows (``R m <= 1500``) and its ``lambda_min`` certified numerically.
K > 1 (Muffliato-SGD, MF-D-SGD with K rounds) under PNDP
    rounds without injection add no noise and their rows can depend on others in ways that
    the sparsity pattern does not decide; dependent rows are found by exact rational
    elimination of B formed exactly from W with L = I (:mod:`sparsedp.mf.exact_rows`; an
    invertible L changes no row dependency).  Beyond its work limit, by exact elimination
    of the *computed* B instead: when no row is dropped the sandwich is certified; when rows
    are dropped, lower bounds stay certified (observing fewer rows can only lower M) and the
    upper bounds are reported as estimates, next to the certified ``M <= I`` (``|pi|``) for
    independent noise.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from sparsedp.errors import ParameterError
from sparsedp.gossip.certified_solve import OPERATOR_ASSEMBLY_MAX_DIM, _certified_dense_sandwich
from sparsedp.gossip.target_block import TargetBlock, view_target_block
from sparsedp.linalg import exact_rank
from sparsedp.linalg.certified import gamma
from sparsedp.mf import innovations
from sparsedp.mf.exact_rows import independent_observations
from sparsedp.mf.operators import MFSystem
from sparsedp.mf.trust import Observation


def ldp_block(L: np.ndarray, patterns: list[np.ndarray]) -> TargetBlock:
    """Local DP (module docstring)."""
    T = L.shape[0]
    if np.array_equal(L, np.eye(T)):
        return TargetBlock(T=T, closed_form="identity",
                           notes=("local DP with independent noise: M = I",))
    keep = exact_rank.independent_rows(L)
    if keep is not None and keep.all():
        K = L @ L.T
        absL = np.abs(L)
        dK = gamma(T + 1) * float((absL @ absL.T).sum(axis=1).max())
        sandwich, lam = _certified_dense_sandwich(0.5 * (K + K.T), np.eye(T), dK)
        return TargetBlock(T=T, closed_form=None, sandwich=sandwich,
                           upper_certified=lam > 0, method="dense T x T",
                           notes=("local DP: M = (L L^T)^{-1} = C_local^T C_local",))
    in_range = _columns_in_range(L)
    if any(not in_range[p].all() for p in patterns):
        return TargetBlock(T=T, closed_form="infinite", notes=(
            "range condition fails: a participating step's gradient is not covered by the "
            "noise (e_t outside the column space of L, decided exactly)",))
    raise ParameterError("a singular noise correlation whose range covers every participating "
                         "step is not supported")


def _columns_in_range(L: np.ndarray) -> np.ndarray:
    """Bool (T,): ``e_t`` in the column space of L, in exact rational arithmetic."""
    echelon = exact_rank.IntegerEchelon(L.shape[0])
    for row in L.T:
        echelon.add(exact_rank._integer_row(row))
    return echelon.unit_vectors_in_span()


def require_invertible(L: np.ndarray, trust: str) -> None:
    keep = exact_rank.independent_rows(L)
    if keep is None or not keep.all():
        raise ParameterError(
            f"trust model {trust!r} needs an invertible noise correlation L (a singular L is "
            "accounted under 'ldp' only)"
        )


def gossip_block(W, target: int, obs: Observation, T: int, *, method: str, max_memory,
                 progress) -> TargetBlock:
    """DP-D-SGD under PNDP: the innovation form (``method="innovations"``, or ``"auto"`` where
    :func:`sparsedp.mf.innovations.preferred`), else the gossip engine (module docstring)."""
    if method == "innovations" or (method == "auto" and innovations.preferred(
            W.shape[0], W.nnz, obs.observed.size, T)):
        sandwich, info = innovations.innovation_sandwich(W, target, obs, T,
                                                         max_memory=max_memory,
                                                         progress=progress)
        return TargetBlock(T=T, closed_form=None, sandwich=sandwich, method="innovations",
                           solver=info)
    if obs.trust == "pndp":
        return view_target_block(W, target, obs.attackers, T, view="neighbourhood",
                                 noise_removed=True, method=method, max_memory=max_memory,
                                 progress=progress)
    return view_target_block(W, target, obs.observed, T, view="secure-summation",
                             noise_removed=False, method=method, max_memory=max_memory,
                             progress=progress)


def operator_block(W: sp.csr_matrix, target: int, obs: Observation, T: int, K: int,
                   L: np.ndarray) -> TargetBlock:
    """AntiPGD / MF-D-SGD (K = 1) and Muffliato-SGD (K > 1) under PNDP (module docstring)."""
    system = MFSystem(W, obs.observed, obs.known_noise, T, K, L)
    size = system.R * system.m
    if size > OPERATOR_ASSEMBLY_MAX_DIM:
        raise ParameterError(
            f"this algorithm under {obs.trust!r} assembles B B^T densely: {system.m} observed "
            f"rows x {system.R} rounds = {size} exceeds {OPERATOR_ASSEMBLY_MAX_DIM}"
        )
    notes: list[str] = []
    estimate = False
    if K == 1:
        keep = ~system.gossip.redundant_rows().ravel()  # exact (or zero rows only)
    else:
        keep = independent_observations(W, obs.observed, obs.known_noise, T, K)
        if keep is None:  # too large for exact rationals: decided on the computed B
            keep = exact_rank.independent_rows(system.dense_B(np.arange(size)))
            if keep is None:
                raise ParameterError("the exact row reduction of B is too large for this "
                                     "problem")
            estimate = not keep.all()
    if estimate:
        notes.append(
            f"{int((~keep).sum())} dependent observation rows were dropped by exact elimination "
            "of the computed B (not certified for the exact B): upper bounds other than |pi| "
            "are estimates; lower bounds remain certified"
        )
    rows = np.flatnonzero(keep)
    if rows.size == 0:
        return TargetBlock(T=T, closed_form="zero", notes=("every observation is redundant",))
    Kmat, dK, K_error = system.dense_K(rows)
    G = system.A_target(target)[rows]
    sandwich, lam = _certified_dense_sandwich(Kmat, G, dK, system.G_rounding() * G,
                                              K_error_abs=K_error)
    info = {"observed_rows": int(size), "rows_kept": int(rows.size),
            "lambda_min_lower_bound": lam, "estimate": estimate}
    return TargetBlock(T=T, closed_form=None, sandwich=sandwich, upper_certified=lam > 0,
                       method="dense operator assembly", solver=info, notes=tuple(notes))
