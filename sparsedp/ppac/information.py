"""Information-theoretic leakage of PPAC: ``pi_i^(j)(t) = I(D_i(t); u_j)`` in nats.

With Gaussian sources ``g ~ N(mu, diag(s^2))`` and the attacker's data ``D_i(t) = R_i(t) g``
(paper eq. 17), Theorem 6.6 reads

    pi = 1/2 log(1 + s_j^2 a^T Sigma^{-1} a),   a = R e_j,   Sigma = R_{-j} S_{-j} R_{-j}^T

on the informative rows (``R`` of full row rank, Case 1), and ``pi = inf`` when ``e_j`` lies
in the row span of ``R`` (Case 2: the attacker solves for ``u_j``).

Leverage form (used by :func:`leakage`).  Let ``Y = S^{1/2} R^T`` (sources x observations).
The leverage of source ``j`` is ``h_j = ||P_{col(Y)} e_j||^2 = y_j^T (Y^T Y)^+ y_j`` with
``y_j`` row ``j`` of ``Y``, and ``1 + s_j^2 a^T Sigma^{-1} a = 1 / (1 - h_j)`` (rank-one
update of ``Sigma``), so

    pi_j = -1/2 log1p(-h_j),     h_j = 1  <=>  infinite leakage.

One factorisation gives every victim.  ``Y = [F X, Lam]`` with ``F`` sparse (2 entries per
row), ``X`` a well-conditioned (block Arnoldi) basis of the message vectors and ``Lam`` the
received fragments that carry a value.  The Gram matrix ``Y^T Y = X^T (F^T F) X ...`` costs
O(n k^2); after equilibration, ``h_j = y_j^T (Y^T Y)^{-1} y_j`` from its eigendecomposition
is accurate to about ``k eps kappa(Y)^2``, so it is used only when ``kappa(Y) <= 1e5``.
Otherwise (or when the exact rank is below ``k``) ``Y = Q R_f`` by Householder QR
accumulated over blocks of rows (``Y`` is never stored whole), ``R_f = U diag(sv) V^T`` and
``h_j = ||diag(sv_r)^{-1} V_r^T y_j||^2`` over the ``r`` retained singular values: accuracy
``k eps kappa(Y)``.  No covariance matrix is inverted.

Reductions before factorising.  Sources the attacker holds exactly (``u_i``, its own pure
noises ``Gamma_il``, the pure noises ``Gamma_li`` it received) are independent of the rest, so
conditioning on them removes their columns: ``I(D; u_j) = I(R_U g_U; u_j)``.  The message rows
are ``p_l(tau) = C^T (W^T)^tau e_l``: the ``deg(i) (t + 1)`` vectors ``(W^T)^tau e_l`` come from
``t`` sparse products, and row ``u_k`` of ``Y`` is ``s_k x[m_k]``, row ``Gamma_kl`` is
``s_kl (x[l] - x[m_k])``.

Nodes.  Attackers and victims are node labels, in the arguments and in the results; ``W``
and the per-node standard deviations are in the graph's node order (see
:mod:`sparsedp.ppac.protocol`).

Kinds.  Infinite values are ``"exact"`` when proved (a generalised leaf, or exact integer
arithmetic); finite values are floating-point ``"estimate"``\\ s.  Which victims are finite is
decided exactly (exact arithmetic on small graphs; otherwise the structural tests of
:mod:`sparsedp.ppac.structure`, with a labelled numerical decision for the rare
``"undetermined"`` pairs).  ``relative_accuracy`` bounds the rounding error of the finite
values for the float span of the observations; it is ``inf`` when that span is not decided in
floating point (a Krylov direction of borderline size, or a float basis whose width differs
from the exact rank): the leakage depends on the span only, so no accuracy can be claimed.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.linalg.lapack import dgeqrf, dpocon, dpotrf, dtrcon

from sparsedp import defaults, resources, validation
from sparsedp.errors import ParameterError
from sparsedp.linalg.exact_rank import IntegerEchelon
from sparsedp.linalg.kernels import is_symmetric, spmm
from sparsedp.linalg.threads import limit_blas_threads
from sparsedp.plain import plain
from sparsedp.ppac.protocol import PPACLayout, check_consensus_matrix, simulated_data
from sparsedp.ppac.structure import (
    basis_pursuit,
    delayed_recovery_by_position,
    resolve_horizon,
    status_by_position,
    with_labels,
)
from sparsedp.progress import progress_bar, progress_mode
from sparsedp.reprs import short_repr
from sparsedp.tables import Tabular

__all__ = [
    "LeakageResult",
    "leakage",
    "leakage_flops",
    "leakage_memory",
    "leakage_monte_carlo",
    "leakage_noise_limit",
    "leakage_theorem_6_6",
]

EXACT_AUTO_MAX_SOURCES = 400  # exact="auto" runs exact arithmetic up to this many sources (2m)
FLOAT_INFINITE_MAX_ROWS = 20_000  # t = inf without exact arithmetic: at most deg(i) n rows
NUMERICAL_RECOVERY = 1e-9  # float decision for undetermined pairs: 1 - h_j below this
BLOCK_ROWS = 1 << 16  # rows of Y per Householder QR block (fewer for wide Y)
QR_BLOCK_ENTRIES = 1 << 24  # entries of one Householder block (128 MiB)
KRYLOV_DROP = 1e-10  # relative norm below which a new Krylov direction is dropped
KRYLOV_CLEAR = 1e3 * KRYLOV_DROP  # a direction (kept or dropped) smaller than this is borderline
KRYLOV_ROUNDING = 1e-13  # ... unless it is below this (rounding residue of a dependent one)
REORTHOGONALISE = 0.5  # a second Gram-Schmidt pass when a column keeps less of its norm
VICTIM_CHUNK = 4096  # victims' rows of Y formed at a time
SPARSE_BYTES = 400  # per source: the sparse factors C, F, Lam, F^T F and their index arrays
ESTIMATE_SECONDS = 5.0  # runs estimated longer than this say so before starting
GRAM_MIN_SV_RATIO = 1e-5  # use the Gram matrix when sv_min / sv_max of Y is above this
SKETCH_COLUMNS = 8  # fixed random combinations of the basis that watch the Lanczos blocks
LANCZOS_ORTHOGONALITY = 1e-11  # a Lanczos block overlapping the basis more is re-orthogonalised
GRAM_BLOCK = 1024  # columns of the Gram matrix formed at a time (upper block triangle)


@dataclass(frozen=True)
class LeakageResult(Tabular):
    """Leakage of every victim in ``victims`` to one attacker, in nats.

    ``attacker`` and ``victims`` are node labels (``victims`` an array, in the order asked
    for, default node order); ``nats[k]`` is the leakage of ``victims[k]``, ``inf`` for exact
    recovery; ``kind[k]`` is ``"exact"`` (proved) or
    ``"estimate"`` (floating point); ``status[k]`` says how finiteness was decided:
    ``"recoverable"`` / ``"private"`` (structure or exact arithmetic) or
    ``"numerical"`` (float decision, see ``notes``).  :meth:`to_pandas` and :meth:`to_arrow`
    give one row per victim (``victim``, ``nats``, ``kind``, ``status``).
    """

    attacker: Any
    horizon: int | None
    victims: np.ndarray
    nats: np.ndarray
    kind: np.ndarray
    status: np.ndarray
    method: str
    rank: int
    smallest_singular_ratio: float
    relative_accuracy: float
    informative: Any = None
    notes: tuple[str, ...] = ()
    seconds: float = 0.0
    extra: dict = field(default_factory=dict)

    categorical = ("kind", "status")
    __repr__ = short_repr

    def table_columns(self) -> dict:
        """One row per victim: ``victim``, ``nats`` (inf: exact recovery), ``kind`` and
        ``status``."""
        return {"victim": self.victims, "nats": self.nats, "kind": self.kind,
                "status": self.status}

    def value(self, victim: Any) -> float:
        """The leakage of the victim labelled ``victim``."""
        for k, label in enumerate(self.victims.tolist()):
            if label == victim:
                return float(self.nats[k])
        raise ParameterError(f"node {victim!r} is not among the victims")

    def per_victim(self) -> dict[Any, float]:
        """``{victim label: nats}``."""
        return dict(zip(self.victims.tolist(), self.nats.tolist(), strict=True))

    def to_dict(self) -> dict:
        """Plain data, strict JSON (:func:`sparsedp.plain.plain`: infinite leakage and an
        infinite horizon are the string ``"infinity"``)."""
        return plain({
            "attacker": self.attacker,
            "horizon": math.inf if self.horizon is None else self.horizon,
            "victims": self.victims.tolist(),
            "nats": self.nats,
            "kind": self.kind.tolist(),
            "status": self.status.tolist(),
            "method": self.method,
            "rank": self.rank,
            "smallest_singular_ratio": self.smallest_singular_ratio,
            "relative_accuracy": self.relative_accuracy,
            "informative": None if self.informative is None else self.informative.to_dict(),
            "notes": list(self.notes),
            "seconds": self.seconds,
        })


# --------------------------------------------------------------------------------------------
# The attacker's observations in float: message vectors, known sources, whitened rows of Y
# --------------------------------------------------------------------------------------------

def _neighbours(layout: PPACLayout, i: int) -> np.ndarray:
    A = layout.graph.adjacency
    return A.indices[A.indptr[i]:A.indptr[i + 1]].astype(np.int64)


def leakage_memory(n: int, degree: int, rounds: int, victims: int, *,
                   edges: int | None = None) -> float:
    """Upper estimate of the peak bytes of :func:`leakage` (float path), before any work.

    With ``k = min(n, degree (rounds + 1))`` columns of the message basis and ``2m`` sources
    (``edges = m``; default ``n degree / 2``, a regular graph): the basis ``X`` (``n x k``), one
    Arnoldi block and its products (``4 n degree + 2 k degree``), ``(F^T F) X`` (``n k``), the
    ``k x k`` Gram matrix and its Cholesky factor, the victims' rows in chunks of
    ``VICTIM_CHUNK`` (three ``chunk x k`` arrays), the sparse factors (``SPARSE_BYTES`` per
    source), and, for the Householder fallback, the R factor with one block of rows
    (:func:`_qr_block_rows`) and its copy.  Float64 throughout.

    Parameters
    ----------
    n, degree, rounds, victims : int
        Nodes, the attacker's degree, the horizon ``t`` and the number of victims.
    edges : int, optional
        Undirected edges ``m`` of the graph.

    Returns
    -------
    float
        Bytes.

    Examples
    --------
    >>> from sparsedp.ppac.information import leakage_memory
    >>> round(leakage_memory(10_000, 713, 10, 9_999, edges=99_857) / 2**30, 2)
    4.13
    """
    m = n * degree / 2.0 if edges is None else float(edges)
    k = float(min(n, degree * (rounds + 1)))
    chunk = float(min(victims, VICTIM_CHUNK))
    arnoldi = 4.0 * n * degree + 2.0 * k * degree
    gram = n * k + 2.0 * k * k + 3.0 * chunk * k
    rows = float(_qr_block_rows(int(k)))
    householder = 2.0 * k * k + 2.0 * (rows + k) * k + 3.0 * chunk * k
    return 8.0 * (n * k + max(arnoldi, gram, householder)) + SPARSE_BYTES * 2.0 * m


def leakage_flops(n: int, degree: int, rounds: int, victims: int, *,
                  edges: int | None = None, symmetric: bool = True) -> float:
    """Floating-point operations of :func:`leakage` (float path, Gram route), ``k = min(n,
    degree (rounds + 1))``: the message basis (symmetric ``W``: block Lanczos, ``12 n
    degree^2`` a round for the two projections and the block QR; otherwise block Arnoldi with
    its re-orthogonalisation, ``4 n k^2 + 4 n degree k``), the upper block triangle of the Gram
    matrix (``n k^2 + n k GRAM_BLOCK`` and a sparse product), its Cholesky factor
    (``k^3 / 3``) and the victims' leverages (``victims k^2``).  For a hub the Gram matrix
    and the leverages dominate: ``n k^2`` grows like ``n degree^2 rounds^2`` until ``k``
    reaches ``n``.

    Parameters
    ----------
    n, degree, rounds, victims : int
        Nodes, the attacker's degree, the horizon ``t`` and the number of victims.
    edges : int, optional
        Undirected edges ``m`` of the graph (default ``n degree / 2``).
    symmetric : bool, default True
        Whether ``W`` is symmetric (the Lanczos basis).

    Returns
    -------
    float
        Operations.

    Examples
    --------
    >>> from sparsedp.ppac.information import leakage_flops
    >>> round(leakage_flops(10_000, 713, 10, 9_999, edges=99_857) / 1e12, 2)
    2.09
    """
    m = n * degree / 2.0 if edges is None else float(edges)
    k = float(min(n, degree * (rounds + 1)))
    width = float(min(degree, k))
    if symmetric:
        basis = 12.0 * n * width * width * max(math.ceil(k / max(width, 1.0)) - 1, 0)
    else:
        basis = 4.0 * n * k * k + 4.0 * n * degree * k
    return (basis + n * k * k + n * k * GRAM_BLOCK + 8.0 * m * k + k ** 3 / 3.0
            + victims * k * k)


def _qr_block_rows(k: int) -> int:
    """Rows of ``Y`` per Householder block: ``BLOCK_ROWS``, fewer for wide ``Y`` so that a
    block holds at most ``QR_BLOCK_ENTRIES`` entries, never fewer than ``k``."""
    return max(k, min(BLOCK_ROWS, QR_BLOCK_ENTRIES // max(k, 1)))


def _attacker_deflation(layout: PPACLayout, i: int) -> np.ndarray:
    """Positions whose unit vectors are removed from the message space: the attacker ``i`` and
    its leaf neighbours.

    Both are observations of sources the attacker already holds: ``v_i(0) = sum_l Gamma_li``
    is its known pure noises plus its received designated fragments (the columns ``Lam``),
    so ``F e_i = Lam 1``; a leaf ``l`` of ``i`` starts from ``v_l(0) = Gamma_il``, the
    attacker's own fragment, so ``F e_l = 0``.  ``e_i`` and ``e_l`` lie in
    ``span{(W^T)^tau e_l} + span{e_i}`` (``W^T e_i`` is a combination of ``e_i`` and the
    ``e_l``), and adding ``e_i`` adds no information, so the basis is built on the coordinates
    other than these: ``Y = [F X, Lam]`` then has full column rank, and the Gram matrix is not
    singular merely because the attacker sees its own state.
    """
    nbrs = _neighbours(layout, i)
    leaves = nbrs[layout.graph.degrees[nbrs] == 1]
    return np.concatenate([[i], leaves]).astype(np.int64)


@limit_blas_threads
def _message_vectors(W: sp.csr_matrix, nbrs: np.ndarray, rounds: int,
                     deflated: np.ndarray, bar=None) -> tuple[np.ndarray, np.ndarray]:
    """``(X, borderline)``: ``X`` a basis (n x k, orthonormal up to ``LANCZOS_ORTHOGONALITY``) of
    ``span{(W^T)^tau e_l : tau <= rounds, l in nbrs} + span{e_d : d in deflated}`` with the
    coordinates ``deflated`` removed (zero rows; see :func:`_attacker_deflation`, the unit
    vectors ``e_d`` must lie in that span).

    The message rows ``p_l(tau) = C^T (W^T)^tau e_l`` enter the leakage only through their
    span, and the monomial Krylov vectors ``(W^T)^tau e_l`` are nearly dependent (their
    condition number grows exponentially with ``tau``), so the span is built block by block,
    each new block ``A Q_tau`` (``A``: ``W^T`` with the coordinates ``deflated`` zeroed)
    orthogonalised against the earlier blocks and then within itself.

    * Symmetric ``W`` (the paper's ``I - L/c``, Metropolis weights): ``A`` is symmetric, so in
      exact arithmetic ``A Q_tau`` is already orthogonal to every block before ``Q_{tau-1}``
      (block Lanczos): the block is orthogonalised against ``Q_tau`` and ``Q_{tau-1}`` only,
      ``O(n deg^2)`` a round instead of ``O(n deg k)``.  Rounding makes Lanczos blocks lose
      orthogonality once Ritz values converge (and always when the space fills ``R^n``), so
      the new orthonormal columns are checked against ``SKETCH_COLUMNS`` fixed random
      combinations ``X Omega`` of the whole basis (``O(n deg)``; ``||Omega^T X^T q||`` estimates
      ``sqrt(SKETCH_COLUMNS) ||X^T q||``): a block with a column whose overlap with the basis is
      estimated above ``LANCZOS_ORTHOGONALITY`` is orthogonalised against the whole basis
      instead.  The next block tries Lanczos again (its two predecessors are orthogonal to
      the basis to the level the check accepts), so a lost block costs one full pass, not
      the rest of the basis: a hub of degree 713 on a 10^4-node graph at ``t = 10`` had its
      blocks 5, 7 and 8 re-orthogonalised and 6, 9 and 10 accepted by Lanczos (1.0e12
      operations instead of 2.1e12 with Gram-Schmidt from block 5 on).
    * Otherwise (and for such blocks) block classical Gram-Schmidt against all previous
      blocks, a second time when the first pass removed more than half of a column's norm
      (Kahan's rule: "twice is enough"; one pass leaves directions that are not new, and a
      hub's basis then outgrew ``n``).  A rejected Lanczos block has already lost its large
      components along the last two blocks, so one pass usually suffices.

    Within the block: Householder QR (:func:`_full_rank_qr`); when its R factor is not clearly
    well conditioned, the block goes the Gram-Schmidt way above (a Lanczos block too: a
    decision to drop is never taken on a partly orthogonalised block) and pivoted QR decides
    what to drop: a direction whose norm after orthogonalisation is below ``KRYLOV_DROP`` times
    its norm before is dropped (the space is numerically invariant).  ``bar`` advances by the
    operations of each block.

    ``borderline``: the relative norms (pivoted QR's ``|R_kk|`` over the block's largest norm
    before orthogonalisation) of the directions, kept or dropped, between ``KRYLOV_ROUNDING``
    and ``KRYLOV_CLEAR``.  Such a direction may be a genuine new direction of the exact span
    or the rounding residue of a dependent one: the dimension, and the span built on it, are
    then not decided by floating point (the leakage depends on the span only, not on the size
    of its directions).  Blocks accepted by :func:`_full_rank_qr` have every direction above
    ``1e3 KRYLOV_DROP = KRYLOV_CLEAR``.
    """
    n = W.shape[0]
    WT = W.T.tocsr()
    lanczos = is_symmetric(WT)
    start = _start_coordinates(nbrs, deflated)
    X = np.zeros((n, min(n - deflated.size, start.size * (rounds + 1))))
    X[start, np.arange(start.size)] = 1.0
    probes = np.random.default_rng(0).standard_normal((X.shape[1], SKETCH_COLUMNS))
    sketch = X[:, :start.size] @ probes[:start.size]  # X Omega, grown with X
    done, last, previous = start.size, slice(0, start.size), slice(0, 0)
    borderline: list[float] = []
    for _ in range(rounds):
        if last.stop == last.start or done == X.shape[1]:
            break
        V = spmm(WT, np.ascontiguousarray(X[:, last]))
        V[deflated] = 0.0
        before = np.linalg.norm(V, axis=0)
        flops = 4.0 * n * V.shape[1] ** 2
        drop = KRYLOV_DROP * before.max(initial=0.0)
        Qv = None
        if lanczos:
            for block in (last, previous):
                V -= X[:, block] @ (X[:, block].T @ V)
            flops += 4.0 * n * V.shape[1] * (last.stop - previous.start)
            Qv = _full_rank_qr(V, drop)
            if Qv is not None and np.any(np.linalg.norm(sketch.T @ Qv, axis=0)
                                         > LANCZOS_ORTHOGONALITY * math.sqrt(SKETCH_COLUMNS)):
                Qv = None  # this block only: the next one tries Lanczos again
        if Qv is not None:
            width = Qv.shape[1]
        else:
            for _ in range(2):
                norms = np.linalg.norm(V, axis=0)
                V -= X[:, :done] @ (X[:, :done].T @ V)
                flops += 4.0 * n * V.shape[1] * done
                if np.all(np.linalg.norm(V, axis=0) >= REORTHOGONALISE * norms):
                    break
            Qv = _full_rank_qr(V, drop)
            if Qv is not None:
                width = Qv.shape[1]
            else:
                Qv, R, _ = sla.qr(V, mode="economic", pivoting=True, check_finite=False)
                sizes = np.abs(np.diag(R)) / max(before.max(), np.finfo(float).tiny)
                width = int(np.sum(sizes > KRYLOV_DROP))
                borderline += sizes[(sizes > KRYLOV_ROUNDING)
                                    & (sizes < KRYLOV_CLEAR)].tolist()
        width = min(width, X.shape[1] - done)
        X[:, done:done + width] = Qv[:, :width]
        X[deflated, done:done + width] = 0.0  # zero in exact arithmetic; rounding made them not
        sketch += X[:, done:done + width] @ probes[done:done + width]
        if bar is not None:
            bar.update(flops / 1e9)
        previous, last = last, slice(done, done + width)
        done += width
    return X[:, :done], np.array(borderline)


def _start_coordinates(nbrs: np.ndarray, deflated: np.ndarray) -> np.ndarray:
    """The coordinates of the first block of :func:`_message_vectors`: the neighbours not
    deflated; its first columns are exactly their unit vectors, in this order."""
    return nbrs[~np.isin(nbrs, deflated)]


def _full_rank_qr(V: np.ndarray, drop: float) -> np.ndarray | None:
    """Householder QR (BLAS-3) of ``V``: its orthonormal ``Q`` when ``sigma_min(V)`` is
    clearly above ``drop`` (its lower bound ``||R||_1 rcond_1 / sqrt(b)`` from LAPACK's
    ``dtrcon``, with a margin of ``10^3`` for the estimate), else ``None``: pivoted QR (half
    BLAS-2, several times slower) then decides which directions to drop."""
    b = V.shape[1]
    Q, R = sla.qr(V, mode="economic", check_finite=False)
    if b == 0:
        return Q
    rcond, info = dtrcon(R, norm="1", uplo="U")
    if info == 0 and np.abs(R).sum(axis=0).max() * rcond / math.sqrt(b) > 1e3 * drop:
        return Q
    return None


def _known_and_designated(layout: PPACLayout, i: int) -> tuple[np.ndarray, sp.csr_matrix]:
    """(mask of the sources node ``i`` holds exactly, sources x q matrix of the received rows
    ``u_l - sum_{s != i} Gamma_ls`` for the neighbours ``l`` with ``m_l = i``)."""
    A = layout.graph.adjacency
    src_of = layout.edge_source
    known = np.zeros(layout.num_sources, dtype=bool)
    known[i] = True
    own = src_of[A.indptr[i]:A.indptr[i + 1]]
    known[own[own >= 0]] = True
    rows, cols, vals = [], [], []
    q = 0
    for nb in _neighbours(layout, i):
        e = A.indptr[nb] + np.searchsorted(A.indices[A.indptr[nb]:A.indptr[nb + 1]], i)
        if src_of[e] >= 0:
            known[src_of[e]] = True
        else:
            fs = src_of[A.indptr[nb]:A.indptr[nb + 1]]
            fs = fs[fs >= 0]
            rows += [int(nb)] + fs.tolist()
            cols += [q] * (1 + fs.size)
            vals += [1.0] + [-1.0] * fs.size
            q += 1
    return known, sp.csr_matrix((vals, (rows, cols)), shape=(layout.num_sources, q))


def _whitened_parts(layout: PPACLayout, i: int, std: np.ndarray):
    """``(unknown, F, Lam)``: the sources node ``i`` does not hold, and the two sparse factors
    of ``Y = [F X, Lam]`` restricted to them: ``F = S_U^{1/2} C_U^T`` (row ``u_k`` is
    ``s_k e_{m_k}^T``, row ``Gamma_kl`` is ``s_kl (e_l - e_{m_k})^T``) and the whitened
    received rows ``Lam`` (see :func:`_known_and_designated`)."""
    known, designated_rows = _known_and_designated(layout, i)
    unknown = np.flatnonzero(~known)
    scale = sp.diags(std[unknown])
    F = (scale @ layout.source_matrix().T.tocsr()[unknown]).tocsr()
    Lam = (scale @ designated_rows[unknown]).tocsr()
    return unknown, F, Lam


@limit_blas_threads
def _gram(F: sp.csr_matrix, Lam: sp.csr_matrix, X: np.ndarray, units: np.ndarray,
          bar=None) -> np.ndarray:
    """``Y^T Y`` from the sparse structure: ``X^T (F^T F) X`` etc. (O(n k^2), not O(m k^2);
    the ``2m x k`` matrix ``Y`` is never formed).  ``X^T (F^T F) X`` is symmetric: it is
    formed ``GRAM_BLOCK`` columns at a time, the blocks on and above the diagonal by BLAS
    products (about ``n k^2`` operations, half of a full product) and the blocks below
    mirrored; ``(F^T F) X`` is never held whole.  The first ``units.size`` columns of ``X``
    are the unit vectors ``e_units`` (:func:`_start_coordinates`): their rows of the Gram
    matrix are rows of ``(F^T F) X``, gathered, not multiplied (a hub's neighbours are 9 %
    of its basis: about ``2 n deg k`` operations saved, the same values)."""
    FtF = (F.T @ F).tocsr()
    FtL = (F.T @ Lam).toarray()
    k1, q, u = X.shape[1], Lam.shape[1], units.size
    G = np.empty((k1 + q, k1 + q))
    for first in range(0, k1, GRAM_BLOCK):
        cols = slice(first, min(k1, first + GRAM_BLOCK))
        MX = spmm(FtF, np.ascontiguousarray(X[:, cols]))
        top = min(u, cols.stop)
        G[:top, cols] = MX[units[:top]]
        if cols.stop > u:
            G[u:cols.stop, cols] = X[:, u:cols.stop].T @ MX
        G[cols, :first] = G[:first, cols].T
        if bar is not None:
            bar.update((2.0 * X.shape[0] * max(cols.stop - u, 0) + 2.0 * FtF.nnz)
                       * MX.shape[1] / 1e9)
    G[:k1, k1:] = X.T @ FtL
    G[k1:, :k1] = G[:k1, k1:].T
    G[k1:, k1:] = (Lam.T @ Lam).toarray()
    return G


def _victim_rows(F: sp.csr_matrix, Lam: sp.csr_matrix, X: np.ndarray, pos: np.ndarray):
    """``(rows, scale, index)`` such that the victims' rows ``Y[pos] = [F[pos] X, Lam[pos]]``
    are ``scale[a] * rows-chunk-row index[a]``, and a generator of the chunks of the distinct
    rows (``VICTIM_CHUNK`` at a time).

    A victim's value ``u_j`` has the row ``s_j e_{m_j}^T`` in ``F`` and, unless ``m_j`` is the
    attacker, none in ``Lam``: such victims share the unit row ``[X[m], 0]`` of their
    designated neighbour ``m`` (about ``n (1 - 1/e)`` distinct ones for ``n`` victims), so a
    leverage is computed once per distinct row and scaled by ``s_j^2``."""
    Fv, Lv = F[pos], Lam[pos]
    unit = (np.diff(Fv.indptr) == 1) & (np.diff(Lv.indptr) == 0)
    first = Fv.indptr[:-1]
    columns, inverse = np.unique(Fv.indices[first[unit]], return_inverse=True)
    other = np.flatnonzero(~unit)
    RF = sp.vstack([sp.csr_matrix((np.ones(columns.size), (np.arange(columns.size), columns)),
                                  shape=(columns.size, F.shape[1])), Fv[other]]).tocsr()
    RL = sp.vstack([sp.csr_matrix((columns.size, Lam.shape[1])), Lv[other]]).tocsr()
    scale = np.ones(pos.size)
    scale[unit] = Fv.data[first[unit]]
    index = np.empty(pos.size, dtype=np.int64)
    index[unit] = inverse
    index[other] = columns.size + np.arange(other.size)

    def chunks():
        for start in range(0, RF.shape[0], VICTIM_CHUNK):
            rows = slice(start, start + VICTIM_CHUNK)
            yield start, np.hstack([RF[rows] @ X, RL[rows].toarray()])

    return RF.shape[0], scale, index, chunks()


@limit_blas_threads
def _r_factor(F: sp.csr_matrix, Lam: sp.csr_matrix, X: np.ndarray, bar=None) -> np.ndarray:
    """Householder R factor of ``Y = [F X, Lam]``, accumulated over blocks of rows
    (:func:`_qr_block_rows`)."""
    k = X.shape[1] + Lam.shape[1]
    R = np.zeros((0, k))
    step = _qr_block_rows(k)
    for start in range(0, F.shape[0], step):
        rows = slice(start, start + step)
        block = np.hstack([F[rows] @ X, Lam[rows].toarray()])
        qr, _, _, _ = dgeqrf(np.vstack([R, block]), overwrite_a=True)
        R = np.triu(qr[:k])
        if bar is not None:
            bar.update(2.0 * (block.shape[0] + k) * k * k / 1e9)
    return R


def _leverages_from_r(R: np.ndarray, rows_of_y, victims: int, rank: int | None,
                      rows: int) -> tuple[np.ndarray, int, float]:
    """``h = ||diag(sv_r)^{-1} V_r^T y||^2`` for each victim row ``y`` (``rows_of_y``: chunks
    from :func:`_victim_rows`), from the SVD ``R = U diag(sv) V^T`` of the R factor of ``Y``
    (``rows`` rows).

    ``rank=None`` keeps the singular values above ``sv_max * max(rows, k) * eps`` (numpy's
    matrix_rank rule for ``Y``); a given rank (known exactly) keeps that many, at most ``k``
    (the float basis may lack directions of the exact span; the caller reports it).  Returns
    ``(h, rank, sv_rank / sv_max)``.
    """
    h = np.zeros(victims)
    if R.shape[1] == 0:
        return h, 0, 1.0
    _, sv, Vt = sla.svd(R, full_matrices=False, check_finite=False)
    if sv[0] == 0:
        return h, 0, 0.0
    if rank is None:
        rank = int(np.sum(sv > sv[0] * max(rows, R.shape[1]) * np.finfo(float).eps))
    rank = min(rank, sv.size)
    for first, Yv in rows_of_y:
        Z = (Yv @ Vt[:rank].T) / sv[:rank]
        h[first:first + Yv.shape[0]] = np.einsum("ij,ij->i", Z, Z)
    return h, rank, float(sv[rank - 1] / sv[0]) if rank else 1.0


@limit_blas_threads
def _leverages_from_gram(G: np.ndarray, rows_of_y, victims: int,
                         bar=None) -> tuple[np.ndarray | None, float]:
    """``h = y^T G^{-1} y`` for each victim row ``y`` by a Cholesky factor of the equilibrated
    Gram matrix ``D G D = L L^T`` (``D = diag(G)^{-1/2}``), ``h = ||L^{-1} D y||^2``.

    Returns ``(h, ratio)`` with ``ratio = sqrt(1 / kappa_1(D G D))`` from LAPACK's condition
    estimate (``dpocon``), an estimate of the singular-value ratio of the equilibrated ``Y``
    that sets the accuracy (relative error about ``k eps / ratio^2``); ``(None, 0.0)`` when
    ``D G D`` is not numerically positive definite.
    """
    d = 1.0 / np.sqrt(np.diag(G))
    A = G * d[:, None] * d[None, :]
    norm_1 = float(np.abs(A).sum(axis=0).max())
    L, info = dpotrf(A, lower=1, clean=1, overwrite_a=1)
    if info != 0:
        return None, 0.0
    rcond, info = dpocon(L, norm_1, uplo="L")
    if bar is not None:
        bar.update(G.shape[0] ** 3 / 3e9)
    if info != 0 or not rcond > 0:
        return None, 0.0
    h = np.empty(victims)
    for first, Yv in rows_of_y:
        Z = sla.solve_triangular(L, (Yv * d).T, lower=True, check_finite=False)
        h[first:first + Yv.shape[0]] = np.einsum("ij,ij->j", Z, Z)
        if bar is not None:
            bar.update(Yv.shape[0] * float(G.shape[0]) ** 2 / 1e9)
    return h, math.sqrt(min(rcond, 1.0))


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------

def _use_exact(exact: Any, layout: PPACLayout) -> bool:
    if exact == "auto":
        return layout.num_sources <= EXACT_AUTO_MAX_SOURCES
    if isinstance(exact, bool):
        return exact
    raise ParameterError(f"exact must be 'auto', True or False, got {exact!r}")


def leakage(layout: PPACLayout, W: Any, attacker: Any,
            horizon: Any = defaults.PPAC_HORIZON, *, value_std: Any = defaults.PPAC_VALUE_STD,
            noise_std: Any = defaults.PPAC_NOISE_STD, victims: Any = None,
            exact: Any = defaults.EXACT, progress: bool | None = None,
            max_memory: Any = None) -> LeakageResult:
    """``pi_i^(j)(t)`` in nats for one attacker and many victims (default: every other node).

    ``attacker`` and ``victims`` are node labels; ``W`` (and per-node ``value_std``) are in
    the graph's node order.

    ``horizon``: last consensus round ``t`` observed (``math.inf``: all rounds, evaluated at
    ``n - 1`` by Prop. 6.3).  ``value_std`` (scalar or per node) and ``noise_std`` (scalar or
    per directed edge, CSR order) are the standard deviations of the Gaussian sources; means do
    not affect mutual information.  ``exact``: ``True`` decides recoverability and the rank by
    exact integer arithmetic (small graphs), ``False`` uses floats and the structural tests,
    ``"auto"`` picks exact arithmetic up to ``EXACT_AUTO_MAX_SOURCES`` sources (2m).
    ``max_memory``: the budget (:func:`sparsedp.resources.memory_budget`); a request whose
    :func:`leakage_memory` exceeds it is refused before any work.

    Cost (float path, :func:`leakage_flops`): ``t`` sparse products with ``deg(i)`` columns,
    a basis of ``k <= min(n, deg(i)(t + 1))`` columns (block Lanczos for symmetric ``W``,
    O(n deg(i)^2) a round, with full Gram-Schmidt, O(n k deg(i)), for the rounds whose blocks
    lose orthogonality; block Arnoldi, O(n k^2), otherwise), the upper block triangle of the
    ``k x k`` Gram matrix from sparse products (about ``n k^2``) and its Cholesky factor
    (O(k^3)), and O(k^2) per distinct victim row for the leverages; the ``2m x k``
    observation matrix is never formed (its blocked Householder QR, O(m k^2), is the fallback
    when the Gram matrix is too ill-conditioned).  A run estimated longer than
    ``ESTIMATE_SECONDS`` shows a progress bar with the estimate (``progress="auto"``; the
    estimate is also ``extra["estimated_seconds"]``).

    Parameters
    ----------
    layout : PPACLayout
        The graph and its designated neighbours (:func:`sparsedp.ppac_layout`).
    W : array_like or scipy.sparse matrix
        Consensus matrix in node order (:func:`sparsedp.laplacian_consensus_matrix`).
    attacker : node label
        The observing node i.
    horizon : int or math.inf, default math.inf (every round)
        Last consensus round observed.
    value_std, noise_std : float or array_like, default 1.0
        Standard deviations of the private values (per node) and of the noise fragments
        (per directed edge).
    victims : label or sequence of labels, optional
        Default: every node but the attacker.
    exact : {"auto", True, False}, default "auto"
    progress : bool, optional
        Progress reporting (:mod:`sparsedp.progress`).
    max_memory : int or str, optional

    Returns
    -------
    LeakageResult
        ``nats`` per victim (``inf``: exact recovery), with ``kind`` and ``status``.

    Raises
    ------
    GraphError
        If the attacker or a victim is not a node.
    GossipMatrixError
        If W does not match the graph or is not a consensus matrix.
    ParameterError
        For a victim equal to the attacker, a bad horizon or ``exact``, or an infinite horizon
        too large for floating point.
    ResourceLimitError
        If the computation would exceed the memory budget.

    Examples
    --------
    >>> import math, networkx as nx, sparsedp
    >>> G = nx.cycle_graph(6)
    >>> layout = sparsedp.ppac_layout(G, {k: (k + 1) % 6 for k in range(6)})
    >>> W = sparsedp.laplacian_consensus_matrix(G, scale=3)
    >>> r = sparsedp.ppac_leakage(layout, W, attacker=0, horizon=3)
    >>> {v: round(x, 4) for v, x in r.per_victim().items()}
    {1: 0.4904, 2: 0.5493, 3: 0.3466, 4: 0.5493, 5: 0.4904}

    On a path the centre node recovers every value exactly:

    >>> P = nx.path_graph(5)
    >>> layout = sparsedp.ppac_layout(P, [1, 2, 3, 4, 3])
    >>> W = sparsedp.laplacian_consensus_matrix(P, scale=3)
    >>> sparsedp.ppac_leakage(layout, W, attacker=2, horizon=math.inf).per_victim()
    {0: inf, 1: inf, 3: inf, 4: inf}
    """
    start = time.perf_counter()
    n, g = layout.n, layout.graph
    i = g.index_of(attacker, "attacker")
    Wc = check_consensus_matrix(W, n)
    rounds, reported = resolve_horizon(horizon, n)
    std = layout.source_std(value_std, noise_std)
    if victims is None:
        victims = np.delete(np.arange(n), i)
    else:
        if isinstance(victims, (str, bytes)) or not isinstance(victims, Iterable) or (
                isinstance(victims, tuple) and victims in g):  # one victim (a tuple label)
            victims = [victims]
        victims = g.indices_of(victims, "victim")
        validation.not_among(i, victims, "attacker", "victims", label=g.id_of(i))
    notes = []
    nbrs = _neighbours(layout, i)
    informative = None
    use_exact = _use_exact(exact, layout)
    if use_exact:
        try:
            informative = basis_pursuit(layout, Wc, i, horizon)
        except ParameterError as exc:
            if exact is True:
                raise
            notes.append(f"exact arithmetic unavailable ({exc}); floating point used")
            use_exact = False
    if not use_exact and reported is None and nbrs.size * n > FLOAT_INFINITE_MAX_ROWS:
        raise ParameterError(
            f"horizon = infinity needs deg(i) n = {nbrs.size * n} message rows in floating "
            f"point (limit {FLOAT_INFINITE_MAX_ROWS}); give a finite horizon")
    deflated = _attacker_deflation(layout, i)
    sizes = (n, nbrs.size, rounds, victims.size)
    resources.require_within(
        leakage_memory(*sizes, edges=g.num_edges), resources.memory_budget(max_memory),
        f"PPAC leakage at horizon {rounds} (attacker degree {nbrs.size}, {n} nodes)",
        "give a smaller horizon (the information stops growing by the last informative round, "
        "at most n - 1)")
    flops = leakage_flops(*sizes, edges=g.num_edges, symmetric=is_symmetric(Wc))
    estimate = flops / resources.dense_product_rate()
    mode = progress_mode(progress)
    bar = progress_bar("always" if mode == "auto" and estimate > ESTIMATE_SECONDS else mode,
                       total=round(flops / 1e9, 1), unit="Gflop",
                       desc=f"PPAC leakage (attacker degree {nbrs.size}, estimated "
                            f"{estimate:.0f} s)")
    X, borderline = _message_vectors(Wc, nbrs, rounds, deflated, bar)
    if informative is not None:  # exact arithmetic ran
        recoverable = np.isin(victims, informative.recoverable)
        status = np.where(recoverable, "recoverable", "private").astype(object)
        method = "exact rank (integer arithmetic) + float leverage"
    else:
        status = status_by_position(g, i)[victims]
        for k in np.flatnonzero(status == "undetermined"):
            if delayed_recovery_by_position(g, Wc, i, int(victims[k]), rounds):
                status[k] = "recoverable"
        method = "float (structural finiteness tests)"
    unknown, F, Lam = _whitened_parts(layout, i, std)
    pos = np.searchsorted(unknown, victims)
    k = X.shape[1] + Lam.shape[1]
    exact_rank = (informative.rank - (layout.num_sources - unknown.size)
                  if informative is not None else None)
    h, ratio, rank = None, 0.0, k
    if exact_rank is None or exact_rank == k:
        G = _gram(F, Lam, X, _start_coordinates(nbrs, deflated), bar)
        if np.all(np.diag(G) > 0):
            count, scale, index, rows_of_y = _victim_rows(F, Lam, X, pos)
            h, ratio = _leverages_from_gram(G, rows_of_y, count, bar)
            if ratio >= GRAM_MIN_SV_RATIO:
                method += "; leverages from the Cholesky factor of the equilibrated Gram matrix"
                accuracy = k * np.finfo(float).eps / ratio**2
            else:
                h = None
        del G  # before the Householder fallback allocates
    if h is None:
        R = _r_factor(F, Lam, X, bar)
        count, scale, index, rows_of_y = _victim_rows(F, Lam, X, pos)
        h, rank, ratio = _leverages_from_r(R, rows_of_y, count, exact_rank, unknown.size)
        method += "; leverages from a blocked Householder QR"
        accuracy = k * np.finfo(float).eps / max(ratio, np.finfo(float).tiny)
    h = scale**2 * h[index]  # the distinct rows' leverages, per victim
    if bar is not None:
        bar.close()
    nats = np.empty(victims.size)
    kind = np.full(victims.size, "estimate", dtype=object)
    infinite = status == "recoverable"
    undetermined = status == "undetermined"
    numerically_recovered = undetermined & (1.0 - h <= NUMERICAL_RECOVERY)
    if undetermined.any():
        notes.append(f"{int(undetermined.sum())} victim(s) are neither generalised leaves nor "
                     "certified private by structure; recoverability decided in floating point "
                     f"(1 - h <= {NUMERICAL_RECOVERY:g} counts as recovery)")
        status = np.where(undetermined, "numerical", status)
    with np.errstate(divide="ignore"):
        nats[:] = -0.5 * np.log1p(-np.clip(h, 0.0, 1.0))
    nats[infinite | numerically_recovered] = np.inf
    kind[infinite] = "exact"
    suspicious = (~infinite) & (~undetermined) & (1.0 - h <= NUMERICAL_RECOVERY)
    if suspicious.any():
        notes.append(f"{int(suspicious.sum())} finite leakage(s) are too large to resolve in "
                     "floating point (1 - h at rounding level): their values are unreliable")
    if borderline.size or (exact_rank is not None and exact_rank != k):
        accuracy = math.inf
        notes.append(_undecided_span_note(borderline, exact_rank, k))
    elif accuracy > 1e-3:
        notes.append(f"the observation matrix is ill-conditioned (sv_min / sv_max = {ratio:.1e}):"
                     f" finite values may be inaccurate (relative error about {accuracy:.0e})")
    if informative is not None:  # by label, as informative_sequence returns it
        informative = with_labels(informative, g)
    return LeakageResult(g.id_of(i), reported, g.ids_of(victims), nats, kind,
                         status.astype(str), method, rank, ratio, accuracy, informative,
                         tuple(notes), time.perf_counter() - start,
                         {"estimated_seconds": estimate, "flops": flops,
                          "basis_columns": k, "borderline_directions": borderline.tolist()})


def _undecided_span_note(borderline: np.ndarray, exact_rank: int | None, k: int) -> str:
    """Why the finite values carry no accuracy: the float message span is not certified."""
    why = []
    if borderline.size:
        why.append(f"{borderline.size} Krylov direction(s) of relative size "
                   f"{borderline.min():.0e} to {borderline.max():.0e}, between "
                   f"{KRYLOV_ROUNDING:g} and {KRYLOV_CLEAR:g}, may be genuine or rounding")
    if exact_rank is not None and exact_rank != k:
        why.append(f"the float basis has {k} columns, exact arithmetic says {exact_rank}")
    return ("the span of the attacker's observations is not decided in floating point ("
            f"{'; '.join(why)}); the leakage depends on that span only, so the finite values "
            "are uncertified estimates (relative_accuracy = inf) that may change with the "
            "scale of W")


def _attacker_and_victim(layout: PPACLayout, attacker: Any, victim: Any) -> tuple[int, int]:
    """Positions of the attacker and the victim (labels; ``ParameterError`` when equal)."""
    g = layout.graph
    i, j = g.index_of(attacker, "attacker"), g.index_of(victim, "victim")
    validation.not_among(j, i, "victim", "attacker", label=g.id_of(j))
    return i, j


def _dense_rows(layout: PPACLayout, W: sp.csr_matrix, rows) -> np.ndarray:
    """The informative rows of ``R_i^r`` in float, literally from eq. 13 for messages."""
    n = layout.n
    C = layout.source_matrix().toarray()
    Wd = W.toarray()
    out = []
    for label, row in rows:
        if label[0] == "message":
            _, nb, tau = label
            out.append(np.linalg.matrix_power(Wd, tau)[nb] @ C)
        else:
            out.append(np.array([float(x) for x in row]))
    return np.array(out).reshape(-1, C.shape[1]) if out else np.zeros((0, n))


@limit_blas_threads
def leakage_theorem_6_6(layout: PPACLayout, W: Any, attacker: Any, victim: Any,
                        horizon: Any = math.inf, *, value_std: Any = 1.0,
                        noise_std: Any = 1.0) -> float:
    """Reference: the paper's formula (eq. 25) with dense matrices, for small graphs
    (``attacker``, ``victim``: labels).

    The informative rows ``R_i^r`` come from exact basis pursuit; Case 2 (exact recovery,
    decided exactly) returns ``inf``; otherwise ``Sigma = R_{-j} S_{-j} R_{-j}^T`` is
    Cholesky-factorised (never inverted) and ``1/2 log1p(s_j^2 a^T Sigma^{-1} a)`` returned.

    Its accuracy is limited by the monomial powers ``W^tau`` and by ``Sigma`` squaring the
    conditioning of the rows: against exact rational arithmetic it is off by up to about
    ``1e-7`` (relative) at ``t = inf`` on 10-node graphs, and by ``2e-6`` at noise/value ratio
    ``1.5e5`` on the paper's example, where :func:`leakage` stays within ``1e-12``.
    """
    i, j = _attacker_and_victim(layout, attacker, victim)
    Wc = check_consensus_matrix(W, layout.n)
    seq = basis_pursuit(layout, Wc, i, horizon)
    if j in seq.recoverable:
        return math.inf
    R = _dense_rows(layout, Wc, seq.rows)
    var = layout.source_std(value_std, noise_std) ** 2
    a = R[:, j]
    R_minus = np.delete(R, j, axis=1)
    Sigma = (R_minus * np.delete(var, j)) @ R_minus.T
    q = var[j] * a @ sla.cho_solve(sla.cho_factor(Sigma), a)
    return 0.5 * math.log1p(q)


def leakage_monte_carlo(layout: PPACLayout, W: Any, attacker: Any, victim: Any, horizon: int,
                        *, value_std: Any = 1.0, noise_std: Any = 1.0, samples: int = 20_000,
                        seed: int | None = None) -> tuple[float, float]:
    """Monte-Carlo estimate of ``pi_i^(j)(t)`` from simulated runs: ``(estimate, std error)``
    (``attacker``, ``victim``: labels).

    ``samples`` independent runs of the simulator (values and noises Gaussian); the attacker's
    data ``D_i(t)`` (:func:`sparsedp.ppac.protocol.attacker_view`) is regressed on by least
    squares.  For jointly Gaussian data ``I(D; u_j) = 1/2 log(Var u_j / Var(u_j | D))``; the
    estimate uses the unbiased variances ``TSS / (N - 1)`` and ``RSS / (N - p - 1)`` (``p`` the
    numerical rank of the centred data), and the standard error
    ``1/2 sqrt(2 / (N - 1) + 2 / (N - p - 1))`` (delta method, ignoring their correlation,
    which only makes it conservative).
    """
    _attacker_and_victim(layout, attacker, victim)
    F, u = simulated_data(layout, W, attacker, victim, horizon, value_std=value_std,
                          noise_std=noise_std, runs=samples, seed=seed)
    F = F - F.mean(axis=0)
    u = u - u.mean()
    coef, _, p, _ = np.linalg.lstsq(F, u, rcond=None)
    rss = float(np.sum((u - F @ coef) ** 2))
    N = samples
    est = 0.5 * math.log((u @ u / (N - 1)) / (rss / (N - p - 1)))
    se = 0.5 * math.sqrt(2.0 / (N - 1) + 2.0 / (N - p - 1))
    return est, se


def leakage_noise_limit(layout: PPACLayout, W: Any, attacker: Any, victim: Any,
                        horizon: Any = math.inf, *, value_std: Any = 1.0) -> float:
    """Limit of ``pi_i^(j)(t)`` when every noise variance grows without bound (same scale;
    ``attacker``, ``victim``: labels).

    The observations whose noise coefficients all vanish, ``F = {c^T R : c^T R_Gamma = 0}``,
    keep their information, the others lose it (their noise covariance dominates), so the
    limit is ``I(F u; u_j)``.  ``F`` is found exactly (echelon form with the noise columns
    first); the leverage of ``u_j`` among the rows of ``F diag(value_std)`` is then computed
    in floating point.  Returns ``inf`` for exact recovery.
    """
    i, j = _attacker_and_victim(layout, attacker, victim)
    Wc = check_consensus_matrix(W, layout.n)
    seq = basis_pursuit(layout, Wc, i, horizon)
    if j in seq.recoverable:
        return math.inf
    n = layout.n
    order = np.concatenate([np.arange(n, layout.num_sources), np.arange(n)])
    echelon = IntegerEchelon(layout.num_sources)
    for _, row in seq.rows:
        echelon.add(row[order])
    free = [row[-n:] for row, p in zip(echelon.rows, echelon.pivots, strict=True)
            if p >= layout.num_sources - n]
    if not free:
        return 0.0
    scale = [max(abs(int(x)) for x in row) for row in free]
    F = np.array([[float(int(x)) / s for x in row] for row, s in zip(free, scale, strict=True)])
    sv = layout.source_std(value_std, 1.0)[:n]
    Q = sla.qr((F * sv).T, mode="economic")[0]
    h = float(Q[j] @ Q[j])
    return -0.5 * math.log1p(-min(h, 1.0))

