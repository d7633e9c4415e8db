"""Accounting for a user-supplied linear mechanism ``O = A G + B Z`` (Bellet et al., Def. 6
and Thm 7), A and B given as dense or sparse matrices or as linear operators.

The target's record enters through T given columns ``A_u`` of A (one per step, in step
order), Z is standard Gaussian, and the attacker sees O (rows already restricted to what it
observes, its own gradients already removed: Lemma 11 is the caller's, as is any known noise,
whose columns of B are simply left out).  Then, as in :mod:`sparsedp.mf.sensitivity`,

    M = A_u^T (B B^T)^+ A_u,     sens^2 = max_pi max_x sum_(s,t in pi) M_st <x_s, x_t>,

infinite when a participating column of ``A_u`` is not in range(B).

How (``m`` rows, ``q`` noise columns; dense assembly, ``m <= OPERATOR_ASSEMBLY_MAX_DIM``):

* ``K = B B^T`` formed from B (a sparse product, or B materialised from an operator by
  ``B^T I``: at most ``DENSE_ENTRIES_MAX`` entries), with ``|fl(K) - K| <= gamma_q |B| |B|^T``
  entrywise; ``lambda_min`` certified numerically and the sandwich of M certified
  (:func:`sparsedp.gossip.certified_solve._certified_dense_sandwich`).  A certified
  ``lambda_min > 0`` proves B of full row rank: the range condition holds.
* Otherwise the rows of B are reduced in exact rational arithmetic (every float is a
  rational: :mod:`sparsedp.linalg.exact_rank`): a column ``a_t`` is in range(B) exactly when
  ``rank([B a_t]) = rank(B)``.  A participating column outside it makes the result infinite;
  else the dependent rows are dropped (the same combination holds on ``A_u``, so M is
  unchanged) and the sandwich is certified on the kept rows.  When the exact reduction is too
  large only lower bounds remain (upper infinite, with a note).

Operators are materialised and taken as the mechanism (their own rounding is theirs: a note
says so); explicit matrices are exact inputs.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator

from sparsedp.errors import ParameterError
from sparsedp.gossip.certified_solve import OPERATOR_ASSEMBLY_MAX_DIM, _certified_dense_sandwich
from sparsedp.gossip.target_block import TargetBlock
from sparsedp.hints import ExactSearch
from sparsedp.linalg import exact_rank
from sparsedp.linalg.certified import gamma
from sparsedp.linalg.threads import limit_blas_threads
from sparsedp.mf import participation, sensitivity
from sparsedp.mf.algorithms import Algorithm
from sparsedp.mf.result import MFResult
from sparsedp.mf.trust import Observation

DENSE_ENTRIES_MAX = 60_000_000  # entries of B materialised (an operator, the exact reduction)


@limit_blas_threads
def linear_mechanism_sensitivity(
    A: np.ndarray | sp.spmatrix | sp.sparray | LinearOperator,
    B: np.ndarray | sp.spmatrix | sp.sparray | LinearOperator,
    columns: Sequence[int] | np.ndarray,
    *,
    participation_scheme: str | participation.Participation = "user-level",
    gradients: str = "vector",
    exact: ExactSearch = "auto",
) -> MFResult:
    """Certified bounds on ``sens^2`` of the target whose gradients enter ``O = A G + B Z``
    through the columns ``columns`` of A (module docstring).

    Parameters
    ----------
    A : array, sparse matrix or ``scipy.sparse.linalg.LinearOperator`` (m x p): the gradient
        part of what the attacker observes.
    B : array, sparse matrix or LinearOperator (m x q): the noise part (Z standard Gaussian).
    columns : the target's T columns of A, one per step, in step order.
    participation_scheme : as :func:`sparsedp.mf.mf_sensitivity` (``"user-level"``,
        ``"single"``, ``(k, b)`` or a :class:`sparsedp.mf.Participation`).
    gradients : ``"vector"`` (default) or ``"scalar"``.
    exact : ``"auto"``, ``True`` or ``False``: the exhaustive sign search (scalar gradients).

    Returns
    -------
    MFResult
        Bounds on ``sens^2`` with their kinds (``target`` is -1 and ``attackers`` empty: the
        target is given by its columns, the observation by A and B; ``observed`` lists the
        rows of O); infinite when the range condition fails.

    Raises
    ------
    ParameterError
        A and B with different row counts, a column outside A, repeated columns, non-finite
        entries, more than ``OPERATOR_ASSEMBLY_MAX_DIM`` rows or an operator too large to
        materialise; a bad scheme, gradients or exact.

    Examples
    --------
    Two steps, one node, noise ``z_0`` then ``z_1 - z_0`` (AntiPGD), the sums released:
    ``M = C^T C`` with C the lower-triangular ones.

    >>> import numpy as np
    >>> from sparsedp.mf.linear_mechanism import linear_mechanism_sensitivity
    >>> A = np.tril(np.ones((2, 2)))
    >>> r = linear_mechanism_sensitivity(A, A @ np.array([[1.0, 0.0], [-1.0, 1.0]]), [0, 1],
    ...                                  gradients="scalar")
    >>> round(r.lower, 9), round(r.upper, 9), r.range_condition
    (5.0, 5.0, True)
    """
    scheme = participation.resolve(participation_scheme)
    if gradients not in sensitivity.GRADIENTS:
        raise ParameterError(f"gradients must be one of {sensitivity.GRADIENTS}, got "
                             f"{gradients!r}")
    m = _rows(A, "A")
    if _rows(B, "B") != m:
        raise ParameterError(f"A and B must have the same rows (the observations): A has {m}, "
                             f"B has {B.shape[0]}")
    if m > OPERATOR_ASSEMBLY_MAX_DIM:
        raise ParameterError(f"the linear mechanism is assembled densely: {m} observed rows "
                             f"exceed {OPERATOR_ASSEMBLY_MAX_DIM}")
    columns = _columns(columns, A.shape[1])
    T = columns.size
    patterns = scheme.patterns(T)
    do_exact = sensitivity._resolve_exact(exact, gradients, max(p.size for p in patterns))
    notes = []
    if isinstance(A, LinearOperator) or isinstance(B, LinearOperator):
        notes.append("operators materialised and taken as the mechanism (their own rounding "
                     "is not charged)")
    G = _target_columns(A, columns)
    Bm = _explicit(B)
    block = _block(Bm, G, patterns, T, notes)
    per_pattern = [sensitivity._pattern_bounds(block, p, do_exact, gradients, False)
                   for p in patterns]
    empty = np.zeros(0, dtype=np.int64)
    observation = Observation("linear-mechanism", empty, np.arange(m, dtype=np.int64), empty)
    return sensitivity._assemble(per_pattern, block, -1, observation, T,
                                 Algorithm(name="linear-mechanism", correlation="user"),
                                 scheme, gradients, "linear-mechanism", len(patterns))


def _rows(X, name: str) -> int:
    if not (isinstance(X, (np.ndarray, LinearOperator)) or sp.issparse(X)) or \
            len(X.shape) != 2:
        raise ParameterError(f"{name} must be a 2-d array, sparse matrix or LinearOperator, got "
                             f"{type(X).__name__}")
    return int(X.shape[0])


def _columns(columns, p: int) -> np.ndarray:
    cols = np.asarray(columns)
    if cols.ndim != 1 or cols.size == 0 or not np.issubdtype(cols.dtype, np.integer):
        raise ParameterError(f"columns must be a non-empty list of column indices of A, got "
                             f"{columns!r}")
    if cols.min() < 0 or cols.max() >= p:
        raise ParameterError(f"columns must lie in 0..{p - 1} (A has {p} columns), got "
                             f"{cols.tolist()}")
    if np.unique(cols).size != cols.size:
        raise ParameterError(f"columns must be distinct, got {cols.tolist()}")
    return cols.astype(np.int64)


def _target_columns(A, columns: np.ndarray) -> np.ndarray:
    if isinstance(A, LinearOperator):
        E = np.zeros((A.shape[1], columns.size))
        E[columns, np.arange(columns.size)] = 1.0
        G = np.asarray(A.matmat(E), dtype=np.float64)
    elif sp.issparse(A):
        G = sp.csc_matrix(A)[:, columns].toarray().astype(np.float64)
    else:
        G = np.asarray(A, dtype=np.float64)[:, columns]
    if not np.all(np.isfinite(G)):
        raise ParameterError("A has non-finite entries in the target's columns")
    return G


def _explicit(B):
    """B as a CSR or dense float matrix (an operator materialised by ``B^T I``)."""
    if isinstance(B, LinearOperator):
        m, q = B.shape
        if m * q > DENSE_ENTRIES_MAX:
            raise ParameterError(f"B as an operator is materialised densely: {m} x {q} entries "
                                 f"exceed {DENSE_ENTRIES_MAX}")
        B = np.asarray(B.rmatmat(np.eye(m)), dtype=np.float64).T
    B = sp.csr_matrix(B, dtype=np.float64) if sp.issparse(B) else np.asarray(B, np.float64)
    data = B.data if sp.issparse(B) else B
    if not np.all(np.isfinite(data)):
        raise ParameterError("B has non-finite entries")
    return B


def _gram(B) -> tuple[np.ndarray, float]:
    """``fl(B B^T)`` (dense, symmetrised) and a bound on ``||fl(K) - K||_2``:
    ``gamma_q || |B| |B|^T ||_inf``."""
    if sp.issparse(B):
        K = (B @ B.T).toarray()
        absB = abs(B)
        K_abs = (absB @ absB.T).toarray()
    else:
        K = B @ B.T
        K_abs = np.abs(B) @ np.abs(B).T
    return 0.5 * (K + K.T), gamma(B.shape[1] + 2) * float(K_abs.sum(axis=1).max())


def _block(B, G: np.ndarray, patterns, T: int, notes: list) -> TargetBlock:
    K, dK = _gram(B)
    sandwich, lam = _certified_dense_sandwich(K, G, dK)
    if lam > 0:
        return _certified(sandwich, lam, K.shape[0], K.shape[0], T, notes)
    keep, in_range = None, None
    if B.shape[0] * B.shape[1] <= DENSE_ENTRIES_MAX:
        dense = B.toarray() if sp.issparse(B) else np.asarray(B)
        keep = exact_rank.independent_rows(dense)
        in_range = None if keep is None else _in_range(dense, G, int(keep.sum()))
    if keep is None or in_range is None:
        notes.append("B B^T is singular to working precision and the exact row reduction is "
                     "too large: lower bounds only")
        return TargetBlock(T=T, closed_form=None, sandwich=sandwich, upper_certified=False,
                           method="dense linear mechanism", notes=tuple(notes))
    if any(not in_range[p].all() for p in patterns):
        return TargetBlock(T=T, closed_form="infinite", notes=tuple(notes) + (
            "range condition fails: a participating column of A is not in range(B) (decided "
            "exactly)",))
    rows = np.flatnonzero(keep)
    if rows.size == 0:
        return TargetBlock(T=T, closed_form="zero", notes=tuple(notes) + ("B = 0 and A_u = 0",))
    kept = B[rows]
    K, dK = _gram(kept)
    sandwich, lam = _certified_dense_sandwich(K, G[rows], dK)
    notes.append(f"{B.shape[0] - rows.size} dependent rows of B dropped (exact); A_u is "
                 "consistent with them")
    return _certified(sandwich, lam, B.shape[0], rows.size, T, notes)


def _certified(sandwich, lam: float, rows: int, kept: int, T: int, notes: list) -> TargetBlock:
    return TargetBlock(T=T, closed_form=None, sandwich=sandwich, upper_certified=lam > 0,
                       method="dense linear mechanism",
                       solver={"observed_rows": rows, "rows_kept": kept,
                               "lambda_min_lower_bound": lam}, notes=tuple(notes))


def _in_range(B: np.ndarray, G: np.ndarray, rank: int) -> np.ndarray | None:
    """Bool (T,): column t of G in range(B), exactly (``rank([B g_t]) = rank(B)``); ``None``
    when an exact reduction is too large."""
    whole = exact_rank.independent_rows(np.hstack([B, G]))
    if whole is None:
        return None
    if int(whole.sum()) == rank:
        return np.ones(G.shape[1], dtype=bool)
    out = np.empty(G.shape[1], dtype=bool)
    for t in range(G.shape[1]):
        keep = exact_rank.independent_rows(np.hstack([B, G[:, [t]]]))
        if keep is None:
            return None
        out[t] = int(keep.sum()) == rank
    return out
