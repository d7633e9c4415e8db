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
    engine's exact redundant-row decisions apply; ``K = B B^T`` on the kept rows
    (:meth:`sparsedp.mf.operators.MFSystem.assemble_K`: the Gram of the noise lags for a
    Toeplitz L, else the operator) and its ``lambda_min`` certified numerically.
K > 1 (Muffliato-SGD, MF-D-SGD with K rounds) under PNDP
    rounds without injection add no noise and their rows can depend on others in ways that
    the sparsity pattern does not decide.  The rows the recursion proves dependent are
    dropped (:func:`sparsedp.mf.exact_rows.structural_observations`); when ``B B^T`` on the
    rest is certified positive definite they are independent, and the decision is certified
    without rational arithmetic.  Otherwise exact rational elimination of B formed exactly
    from W with L = I (an invertible L changes no row dependency) within its work limit,
    beyond it a pivoted Cholesky of the computed ``B B^T``: lower bounds stay certified
    (observing fewer rows can only lower M) and the upper bounds are reported as estimates,
    next to the certified ``M <= I`` (``|pi|``) for independent noise.

Everything but ``A_u`` is shared by the targets and patterns of one attacker set
(:func:`shared_noise`, kept by :func:`sparsedp.linalg.matrix_facts.query_memo`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from sparsedp.errors import ParameterError
from sparsedp.gossip.certified_solve import OPERATOR_ASSEMBLY_MAX_DIM, _certified_dense_sandwich
from sparsedp.gossip.target_block import TargetBlock, view_target_block
from sparsedp.linalg import certified, exact_rank, gram
from sparsedp.linalg.certified import frobenius, gamma
from sparsedp.linalg.matrix_facts import query_memo, scope_queries
from sparsedp.mf import batched, innovations
from sparsedp.mf.exact_rows import independent_observations, structural_observations
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
    """ParameterError unless L is invertible: a triangular L exactly when its diagonal has no
    zero (the determinant is their product), any other by exact row reduction."""
    if not np.any(np.triu(L, 1)) or not np.any(np.tril(L, -1)):
        invertible = bool(np.all(np.diagonal(L) != 0))
    else:
        keep = exact_rank.independent_rows(L)
        invertible = keep is not None and bool(keep.all())
    if not invertible:
        raise ParameterError(
            f"trust model {trust!r} needs an invertible noise correlation L (a singular L is "
            "accounted under 'ldp' only)"
        )


def gossip_block(W, target: int, obs: Observation, T: int, *, method: str, max_memory,
                 progress) -> TargetBlock:
    """DP-D-SGD under PNDP: the innovation form (``method="innovations"``, or ``"auto"`` where
    :func:`sparsedp.mf.innovations.preferred`), else the gossip engine (module docstring)."""
    if method == "innovations" or (method == "auto" and innovations.preferred(
            W.shape[0], W.nnz, obs.observed.size, T, scope_queries())):
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
    """AntiPGD / MF-D-SGD (K = 1) and Muffliato-SGD (K > 1) under PNDP (module docstring).

    Only ``A_u`` depends on the target: the kept rows, ``B B^T`` on them, its certified
    ``lambda_min`` and Cholesky factor are formed once per (W, observation, T, K, L) and
    shared by every target and participation pattern inside a
    :func:`sparsedp.linalg.matrix_facts.reuse_scope` (:func:`shared_noise`)."""
    key = (obs.observed.tobytes(), obs.known_noise.tobytes(), int(T), int(K),
           np.ascontiguousarray(L).tobytes())
    shared = query_memo("mf shared noise", W, key, lambda: shared_noise(
        MFSystem(W, obs.observed, obs.known_noise, T, K, L), obs.trust))
    if shared.rows.size == 0:
        return TargetBlock(T=T, closed_form="zero", notes=("every observation is redundant",))
    batch = batched.batch_for(target, T)
    if batch is not None and shared.rows.size >= batched.BATCH_MIN_ROWS:
        # the scope's targets, a group at a time, from the one factor
        bound = query_memo("mf batched certificate", W, key,
                           lambda: batched.certificate(shared))
        if bound is not None:
            return query_memo("mf batched blocks", W, key + (batch,),
                              lambda: batched.target_blocks(shared, bound, batch))[target]
    system = shared.system
    G = system.A_target(target, shared.lags)[shared.rows]
    sandwich, lam = _certified_dense_sandwich(shared.K, G, shared.dK, shared.G_rounding * G,
                                              shared.tau, shared.factor, shared.K_norm,
                                              K_error_abs=shared.K_error)
    info = {"observed_rows": int(system.R * system.m), "rows_kept": int(shared.rows.size),
            "rows_decided_by": shared.decided_by, "lambda_min_lower_bound": lam,
            "estimate": shared.estimate}
    return TargetBlock(T=T, closed_form=None, sandwich=sandwich, upper_certified=lam > 0,
                       method=shared.method, solver=info, notes=shared.notes)


@dataclass(frozen=True)
class SharedNoise:
    """What does not depend on the target: the kept rows (flat indices into ``R m``),
    ``K = B B^T`` on them, ``dK >= ||fl(K) - K||_2``, the certified ``lambda_min(fl(K)) >=
    tau`` with K's Cholesky factor and ``||K||_F``, the observer lags (Toeplitz L) and how
    the rows were decided (``"structure"``, ``"exact"`` or ``"float"``: then ``estimate``),
    the system and the relative rounding of ``A_u`` (``depth``: K's rounding depth N, as
    :meth:`MFSystem.assemble_K`); ``K_error``: the entrywise bound
    ``gamma_N (1 + 2 gamma_N) fl(K_abs)`` on ``|fl(K) - K|`` (``K_abs = K`` when L >= 0,
    else :meth:`MFSystem.assemble_K_abs`), charged by the sandwich as ``|Y|^T K_error |Y|``
    instead of ``dK ||Y||^2``: 9x tighter on an ill-conditioned K (MF-D-SGD with K = 3
    rounds on Florentine keeps Theorem 7's sum within 1e-8 of exact arithmetic,
    ``tests/test_mf_thm7_precision.py``)."""

    rows: np.ndarray
    K: np.ndarray | None
    dK: float
    tau: float
    factor: np.ndarray | None
    K_norm: float
    lags: np.ndarray | None
    decided_by: str
    estimate: bool
    method: str
    notes: tuple[str, ...]
    system: MFSystem
    G_rounding: float
    depth: int

    @functools.cached_property
    def K_error(self) -> np.ndarray | None:
        """The entrywise bound on ``|fl(K) - K|`` (class docstring), formed on first use:
        the batched route (:mod:`sparsedp.mf.batched`) needs only ``dK``."""
        if self.K is None:
            return None
        K_abs = (self.K if bool(np.all(self.system.L >= 0))
                 else self.system.assemble_K_abs()[np.ix_(self.rows, self.rows)])
        g = gamma(self.depth)
        K_error = np.abs(K_abs) * (g * (1 + 2 * g))
        K_error.flags.writeable = False
        return K_error


def assembly_fits(n: int, rows: int, toeplitz: bool) -> bool:
    """Whether :func:`shared_noise` assembles ``B B^T`` on ``rows`` observation rows of an
    n-node system (a Toeplitz L: the Gram of the lags, within its size and lag memory)."""
    if toeplitz:
        return rows <= gram.GRAM_MAX_DIM and 8 * n * rows <= gram.GRAM_MAX_LAG_BYTES
    return rows <= OPERATOR_ASSEMBLY_MAX_DIM


def shared_noise(system: MFSystem, trust: str) -> SharedNoise:
    """The target-independent part of :func:`operator_block`.

    Rows: K = 1, the exact decision of :meth:`GossipSystem.redundant_rows` (B has H's row
    dependencies, L invertible).  K > 1: first the rows proven dependent by the recursion
    (:func:`sparsedp.mf.exact_rows.structural_observations`); when ``B B^T`` on the rest is
    certified positive definite they are independent and the decision is certified without
    rational arithmetic.  Otherwise exact rational elimination of B
    (:func:`~sparsedp.mf.exact_rows.independent_observations`) within its work limit, and
    beyond it the float fallback: the rows a pivoted Cholesky of the computed ``B B^T``
    keeps (LAPACK ``pstrf``, its default tolerance), the upper bounds then estimates (fewer
    rows can only lower M: the lower bounds stay certified)."""
    R, m, n = system.R, system.m, system.n
    size = R * m
    toeplitz = system.toeplitz_noise() is not None
    limit = gram.GRAM_MAX_DIM if toeplitz else OPERATOR_ASSEMBLY_MAX_DIM
    lag_bytes = 8 * n * size if toeplitz else 0
    if not assembly_fits(n, size, toeplitz):
        raise ParameterError(
            f"this algorithm under {trust!r} assembles B B^T densely: {m} observed rows x "
            f"{R} rounds = {size} exceeds {limit}"
            + (f" (or its lags, {lag_bytes} bytes, exceed {gram.GRAM_MAX_LAG_BYTES})"
               if toeplitz else ""))
    K_all, depth, lags = system.assemble_K()
    abs_sums = system.abs_row_sums()
    G_rounding = system.G_rounding()
    method = "Gram assembly of B B^T" if toeplitz else "dense operator assembly"
    W, observed, known = system.gossip.W, system.gossip.observers, system.gossip.known_noise

    def factorised(keep: np.ndarray, decided_by: str, estimate: bool = False,
                   notes: tuple[str, ...] = ()) -> SharedNoise:
        rows = np.flatnonzero(keep)
        if rows.size == 0:
            return SharedNoise(rows, None, 0.0, 0.0, None, 0.0, lags, decided_by, estimate,
                               method, notes, system, G_rounding, depth)
        Kmat = np.ascontiguousarray(K_all[np.ix_(rows, rows)])
        dK = gamma(depth) * float(abs_sums[rows].max())  # ||K_abs||_inf >= ||.||_2
        tau, factor = certified.certified_lambda_min_and_factor(Kmat)
        for array in (rows, Kmat) + tuple(a for a in (factor,) if a is not None):
            array.flags.writeable = False
        return SharedNoise(rows, Kmat, dK, tau, factor, frobenius(Kmat), lags, decided_by,
                           estimate, method, notes, system, G_rounding, depth)

    if system.K == 1:
        return factorised(~system.gossip.redundant_rows().ravel(), "exact")
    shared = factorised(structural_observations(W, observed, known, system.T, system.K),
                        "structure")
    if shared.rows.size == 0 or shared.tau > shared.dK:
        return shared
    keep = independent_observations(W, observed, known, system.T, system.K)
    if keep is not None:
        return factorised(keep, "exact")
    K_kept = np.array(shared.K)
    _, pivots, rank, _ = scipy.linalg.lapack.dpstrf(K_kept, lower=1)
    keep = np.zeros(size, dtype=bool)
    keep[shared.rows[np.sort(pivots[:rank] - 1)]] = True
    dropped = shared.rows.size - int(rank)
    return factorised(keep, "float", estimate=dropped > 0, notes=(
        f"{dropped} observation rows dropped as numerically dependent (pivoted Cholesky of "
        "the computed B B^T; not certified for the exact B): upper bounds other than |pi| "
        "are estimates; lower bounds remain certified",) if dropped else ())
