"""Every target of one attacker set at once on the operator path (:mod:`sparsedp.mf.blocks`):
one shared Cholesky factor of ``K = B B^T``, the targets' columns solved together by level-3
BLAS, and a certificate that costs ``O(N T)`` per target.

Each target's block is ``M = A_u^T K^{-1} A_u = Y^T Y`` with ``Y = L^{-1} A_u`` (T columns,
N kept rows).  The columns of all targets are stacked and solved by a blocked forward
substitution with the factor of :func:`sparsedp.mf.blocks.shared_noise`; a column whose
first ``s`` entries are zero (the target's gradient of step t reaches the observers only
``t + distance`` rounds later) keeps them zero and is solved with the trailing ``N - s``
rows only, which saves about two thirds of the work at T = 20.

The certificate (per column i of one target; ``N`` kept rows; ``gamma_k`` Higham's):

* ``K_hat = fl(K)``: ``||K_hat - K||_2 <= dK`` and ``lambda_min(K_hat) >= tau``, certified
  once (:class:`sparsedp.mf.blocks.SharedNoise`); ``A_hat = fl(A_u)`` with
  ``|A_hat - A_u| <= rho_G |A_hat|`` entrywise.
* Cholesky (Higham, Thm 10.3): ``L L^T = K_hat + E_c`` with ``|E_c| <= g |L| |L^T|``, so
  ``||E_c||_2 <= g l^2`` with ``l >= || |L| ||_2`` (Collatz-Wielandt on the non-negative
  ``|L| |L|^T``, :func:`_abs_norm_bound`).  ``g = gamma_(2N+2)``: Higham's ``gamma_(N+1)``
  doubled, since blocked LAPACK / BLAS kernels group the sums so that the leading term
  (``K_ij``, ``a_i``) is rounded once per block, and moving those roundings onto the other
  terms at most doubles their count.  With ``K_tilde = L L^T``: ``lambda_min(K_tilde) >=
  mu_t = tau - g l^2``, ``lambda_min(K) >= mu_K = tau - dK`` and ``||K_tilde - K||_2 <=
  delta = dK + g l^2``.
* Forward substitution (Higham, Thm 8.5, the same doubling for the blocked substitution of
  :func:`forward_solve`): the computed column ``y_i`` satisfies ``(L + dL_i) y_i = a_i``
  with ``|dL_i| <= g |L|``, so ``z_i = L^{-1} a_i`` has
  ``||z_i - y_i|| = ||L^{-1} dL_i y_i|| <= e_i = g l ||y_i|| / sqrt(mu_t)``.
* With ``rho = delta / mu_t < 1``: ``K >= K_tilde - delta I >= (1 - rho) K_tilde``, so
  ``||K^{-1/2} a_i|| <= q_i = (||y_i|| + e_i) / sqrt(1 - rho)``; the rounding of A gives
  ``||K^{-1/2} (A_u - A_hat) e_i|| <= h_i = rho_G ||a_i|| / sqrt(mu_K)``.

Then, entrywise, ``M - Y^T Y`` splits into the rounding of A, of K and of the factor, of the
solve and of the product, and

    |M_ij - fl(y_i^T y_j)| <= h_i (q_j + h_j) + q_i h_j            (A_u - A_hat)
                            + delta q_i q_j / sqrt(mu_K mu_t)        (K^{-1} - K_tilde^{-1})
                            + e_i (||y_j|| + e_j) + ||y_i|| e_j      (z - y)
                            + gamma_(N+2) ||y_i|| ||y_j||            (the product, symmetrised)

(``K^{-1} - K_tilde^{-1} = K^{-1} (K_tilde - K) K_tilde^{-1}``), the model of the target's
certified sandwich (``low = sym(fl(Y^T Y))``, no solver excess).  Each term is a product of
two column norms: ``O(N T)`` per target after the shared ``O(N^3)``, against the
``O(N^2 T)`` residual of :func:`sparsedp.mf.blocks.operator_block`, whose entrywise charge of
K's rounding is tighter (it stays the route for a single target).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from sparsedp.gossip.target_block import TargetBlock
from sparsedp.linalg.blas_in_place import solve_panel, subtract_panel
from sparsedp.linalg.certified import MatrixSandwich, gamma
from sparsedp.linalg.threads import blas_threads, one_blas_thread
from sparsedp.mf.operators import MFSystem
from sparsedp.reprs import short_repr

BATCH_MIN_TARGETS = 8  # fewer targets in the scope: the per-target route
BATCH_MIN_ROWS = 1000  # fewer kept rows: the per-target route (its O(N^2 T) is then cheap,
# and its entrywise charge of K's rounding keeps Theorem 7's sum within 1e-8 of exact)
BATCH_BYTES = 2**27  # T x T blocks held per group of targets solved together
BLOCK_DOUBLES = 2  # T x T arrays a target's block holds (low and its rounding model)
BATCH_COLUMNS = 2048  # columns solved together (memory: N x BATCH_COLUMNS doubles, twice)
PANEL_ROWS = 512  # rows of one step of the blocked forward substitution
PERRON_STEPS = 6  # power steps for the Collatz-Wielandt bound on || |L| ||_2
METHOD = "batched Cholesky (one shared factor, level-3 block solves)"

_SCOPE_TARGETS: contextvars.ContextVar[tuple[tuple[int, ...], dict[int, int]] | None] = (
    contextvars.ContextVar("mf_scope_targets", default=None))


class Shared(Protocol):
    """What the batched route reads of :class:`sparsedp.mf.blocks.SharedNoise` (the kept
    rows, K with its certified ``lambda_min >= tau``, factor and rounding ``dK``, the
    relative rounding of ``A_u``, the system and its lags, and how the rows were decided)."""

    rows: np.ndarray
    K: np.ndarray | None
    dK: float
    tau: float
    factor: np.ndarray | None
    lags: np.ndarray | None
    decided_by: str
    estimate: bool
    notes: tuple[str, ...]
    system: MFSystem
    G_rounding: float


@contextlib.contextmanager
def scope_targets(targets: Iterable[int]) -> Iterator[None]:
    """Within the block, :func:`sparsedp.mf.blocks.operator_block` may solve the targets in
    ``targets`` together, a group at a time in their order (:func:`batch_for`; inside a
    :func:`sparsedp.linalg.matrix_facts.reuse_scope`, which keeps the latest group's
    blocks): declared by the callers that query many targets of one attacker set
    (:func:`sparsedp.mf.summary.distance_summary`, :func:`sparsedp.maps.mf_map`)."""
    order = tuple(dict.fromkeys(int(u) for u in targets))
    token = _SCOPE_TARGETS.set((order, {u: k for k, u in enumerate(order)}))
    try:
        yield
    finally:
        _SCOPE_TARGETS.reset(token)


def batch_for(target: int, T: int) -> tuple[int, ...] | None:
    """The group of the scope's targets to solve together with ``target`` (None: solve it
    alone): consecutive in the scope's order, as many as hold :data:`BATCH_BYTES` of
    ``T x T`` blocks (at least :data:`BATCH_MIN_TARGETS`); none when the scope has fewer
    than :data:`BATCH_MIN_TARGETS` targets or ``target`` is not among them."""
    scope = _SCOPE_TARGETS.get()
    if scope is None or len(scope[0]) < BATCH_MIN_TARGETS:
        return None
    order, index = scope
    k = index.get(int(target))
    if k is None:
        return None
    size = max(BATCH_MIN_TARGETS, BATCH_BYTES // (BLOCK_DOUBLES * 8 * T * T))
    first = k - k % size
    return order[first:first + size]


@dataclass(frozen=True)
class Certificate:
    """The target-independent factors of the bound in the module docstring (``solve``:
    ``g l / sqrt(mu_t)``, ``contraction``: ``1 / sqrt(1 - rho)``, ``K_term``:
    ``delta / sqrt(mu_K mu_t)``, ``G_term``: ``rho_G / sqrt(mu_K)``, ``product``:
    ``gamma_(N+2)``, ``norm``: the inflation of a computed norm) and ``lambda_min``'s lower
    bound ``min(mu_t, mu_K)``."""

    solve: float
    contraction: float
    K_term: float
    G_term: float
    product: float
    norm: float
    lambda_lb: float

    __repr__ = short_repr

    def model(self, y: np.ndarray, a: np.ndarray) -> np.ndarray:
        """The entrywise bound on ``|M - fl(Y^T Y)|`` from the column norms ``y >= ||y_i||``
        and ``a >= ||a_i||`` (module docstring), inflated for its own rounding."""
        e = self.solve * y
        q = (y + e) * self.contraction
        h = self.G_term * a
        bound = (np.outer(h, q + h) + np.outer(q, h) + self.K_term * np.outer(q, q)
                 + np.outer(e, y + e) + np.outer(y, e) + self.product * np.outer(y, y))
        return bound * (1 + gamma(16))


def certificate(shared: Shared) -> Certificate | None:
    """The shared factors of every target's bound (module docstring); ``None`` when they do
    not apply (no factor, or the rounding of the factor reaches ``lambda_min``)."""
    if shared.factor is None or shared.K is None:
        return None
    N = shared.rows.size
    ell = _abs_norm_bound(shared.factor)
    g = gamma(2 * N + 2)  # module docstring: Higham's gamma_(N+1), doubled for blocking
    chol_error = g * ell * ell
    mu_t, mu_K = shared.tau - chol_error, shared.tau - shared.dK
    delta = shared.dK + chol_error
    if min(mu_t, mu_K) <= 0 or delta >= mu_t:
        return None
    return Certificate(
        solve=g * ell / math.sqrt(mu_t), contraction=1 / math.sqrt(1 - delta / mu_t),
        K_term=delta / math.sqrt(mu_K * mu_t),
        G_term=shared.G_rounding * (1 + gamma(4)) / math.sqrt(mu_K), product=gamma(N + 2),
        norm=1 + gamma(N + 4), lambda_lb=min(mu_t, mu_K))


def target_blocks(shared: Shared, bound: Certificate, targets: tuple[int, ...]
                  ) -> dict[int, TargetBlock]:
    """The blocks of ``targets`` from the shared factor, solved :data:`BATCH_COLUMNS`
    columns at a time, each certified by ``bound`` (module docstring).

    The chunks are independent: :func:`sparsedp.linalg.threads.blas_threads` of them are
    solved at a time, each on one BLAS thread (threads that never wait for each other,
    where one multi-threaded BLAS call waits at every barrier for its slowest thread: on
    the shared 2-core machine two BLAS threads gave no speed-up at all)."""
    system, T, N = shared.system, shared.system.T, shared.rows.size
    factor = shared.factor
    assert factor is not None, "a certificate exists only with the factor"
    info = {"observed_rows": int(system.R * system.m), "rows_kept": int(N),
            "rows_decided_by": shared.decided_by, "lambda_min_lower_bound": bound.lambda_lb,
            "estimate": shared.estimate}
    no_excess = np.zeros((T, T))
    no_excess.flags.writeable = False

    def chunk_blocks(chunk: tuple[int, ...]) -> list[tuple[int, TargetBlock]]:
        if shared.lags is None:  # (no lags: the operator's impulse responses, one by one)
            At = np.concatenate([system.A_target(u)[shared.rows].T for u in chunk])
        else:
            At = system.stacked_A_T(chunk, shared.lags, shared.rows)
        a_norms = np.sqrt(np.einsum("ij,ij->i", At, At)) * bound.norm
        Yt, order = forward_solve(factor, At)
        del At
        where = np.empty_like(order)
        where[order] = np.arange(order.size)  # the row of Yt holding column i of At
        products = [Y @ Y.T for Y in (Yt[where[k * T:(k + 1) * T]] for k in range(len(chunk)))]
        del Yt
        blocks = []
        for k, (u, M) in enumerate(zip(chunk, products, strict=True)):
            y_norms = np.sqrt(np.clip(np.diag(M), 0.0, None)) * bound.norm
            sandwich = MatrixSandwich(low=0.5 * (M + M.T), excess=no_excess, eta_low=0.0,
                                      eta_excess=0.0,
                                      model=bound.model(y_norms, a_norms[k * T:(k + 1) * T]))
            blocks.append((u, TargetBlock(T=T, closed_form=None, sandwich=sandwich,
                                          upper_certified=True, method=METHOD, solver=info,
                                          notes=shared.notes)))
        return blocks

    per_chunk = max(1, min(BATCH_COLUMNS, N) // T)  # a chunk's arrays: <= 2 N^2 doubles
    chunks = [targets[first:first + per_chunk] for first in range(0, len(targets), per_chunk)]
    # (the operator's impulse responses run numba's parallel kernels, which must not be
    # entered from two threads at once: one chunk at a time then)
    workers = min(blas_threads() if shared.lags is not None else 1, len(chunks))
    out: dict[int, TargetBlock] = {}
    with one_blas_thread(), ThreadPoolExecutor(workers) as pool:
        for blocks in pool.map(chunk_blocks, chunks):
            out.update(blocks)
    return out


def _abs_norm_bound(factor: np.ndarray) -> float:
    """``l >= || |L| ||_2`` for the lower triangle L of ``factor`` (its upper triangle is
    ignored): ``l^2 = max_i (P x)_i / x_i >= rho(P) = || |L| ||_2^2`` for the non-negative
    ``P = |L| |L|^T`` and any positive x (Collatz-Wielandt), x from :data:`PERRON_STEPS`
    power steps on P from the ones vector (P has a positive diagonal, so x stays positive);
    the products are sums of non-negative terms, each within ``gamma_N`` of exact, hence
    the inflation."""
    N = factor.shape[0]
    absL = np.abs(np.tril(factor))
    x = np.ones(N)
    for _ in range(PERRON_STEPS):
        y = absL @ (absL.T @ x)
        x = y / y.max()
    rho = float(np.max(absL @ (absL.T @ x) / x))
    return math.sqrt(rho * (1 + gamma(2 * N + 4)))


def forward_solve(factor: np.ndarray, At: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(L^{-1} At^T)^T`` for the lower triangle L of ``factor``, its rows in the order of
    their first non-zero entry: ``(Yt, order)`` with ``Yt[j]`` the solution for
    ``At[order[j]]`` (the columns to solve are the rows of ``At``, c x N, so that reordering
    them moves contiguous memory; the caller reads them where they are).

    Blocked forward substitution (:data:`PANEL_ROWS` unknowns a step: a triangular solve on
    the diagonal block, then one matrix product for the trailing part, both BLAS calls on
    the arrays in place, :mod:`sparsedp.linalg.blas_in_place`), each column touched from the
    panel of its first non-zero entry on: the zeros above it stay exact zeros, so the result
    and its backward error are those of substitution on the trailing rows."""
    c, N = At.shape
    nonzero = At != 0
    starts = np.where(nonzero.any(axis=1), nonzero.argmax(axis=1), N)
    del nonzero
    order = np.argsort(starts, kind="stable")
    Yt = At[order]
    starts = starts[order]
    for top in range(0, N, PANEL_ROWS):
        bottom = min(top + PANEL_ROWS, N)
        active = int(np.searchsorted(starts, bottom, side="left"))  # started by this panel
        solve_panel(factor, Yt, top, bottom, active)
        subtract_panel(factor, Yt, top, bottom, active)
    return Yt, order
