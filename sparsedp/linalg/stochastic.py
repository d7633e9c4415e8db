"""Properties of the matrices the accountant relies on: square, finite, non-negative, row-,
column- or doubly stochastic, symmetric, irreducible, aperiodic, primitive — checked with the
failing row or entry named (:func:`check_gossip_matrix`), and normalised to canonical CSR
(:func:`as_square_sparse`).

Every public function accepts any scipy sparse format or a dense array.  The builders of
gossip matrices from graphs are in :mod:`sparsedp.graphs.weights`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsedp.errors import GossipMatrixError, GraphGivenForMatrixError, ParameterError
from sparsedp.linalg import kernels
from sparsedp.linalg.matrix_facts import (
    MatrixFacts,
    array_view,
    is_locked,
    register,
    registered_facts,
    remember_for_query,
)

__all__ = [
    "distance_to_doubly_stochastic",
    "PROPERTIES",
    "as_square_sparse",
    "check_gossip_matrix",
    "gossip_properties",
    "has_property",
    "input_dtype",
    "input_rounding",
    "lock_gossip_matrix",
    "matrix_facts",
    "symmetry_defect",
]

PROPERTIES = (
    "square",
    "finite",
    "nonnegative",
    "row_stochastic",
    "column_stochastic",
    "doubly_stochastic",
    "symmetric",
    "irreducible",
    "aperiodic",
    "primitive",
)


def _fmt(x: float) -> str:
    return f"{x:.12g}"


def _entry(M: sp.csr_matrix, k: int) -> tuple[int, int]:
    """(row, column) of the ``k``-th stored entry of a CSR matrix."""
    return int(np.searchsorted(M.indptr, k, side="right") - 1), int(M.indices[k])


def _refuse_graph(W: Any) -> None:
    """A graph (networkx or :class:`sparsedp.graphs.Graph`) is not a gossip matrix."""
    if hasattr(W, "adj") and hasattr(W, "nodes") or hasattr(W, "adjacency") and hasattr(
        W, "node_ids"
    ):
        raise GraphGivenForMatrixError(
            f"W must be a matrix, got a graph ({type(W).__name__}): build it with "
            "sparsedp.gossip_matrix(G, scheme=...) (row i is the node as_graph(G).id_of(i)) and "
            "name nodes by their rows, as_graph(G).index_of(label)")


def input_rounding(W: Any) -> float:
    """The unit roundoff of W's own floating-point type when it is coarser than float64
    (``2^-24`` for float32), else 0: the rows of a stochastic matrix stored in that type sum
    to 1 only up to its rounding.  Integer and float64 input: 0; a locked matrix
    (:func:`lock_gossip_matrix`) keeps the rounding of the type it was given in."""
    dtype = input_dtype(W)
    if dtype is None or not np.issubdtype(dtype, np.floating):
        return 0.0
    return max(float(np.finfo(dtype).eps) / 2.0 - float(np.finfo(np.float64).eps) / 2.0, 0.0)


def input_dtype(W: Any) -> np.dtype | None:
    """The type W was given in: its own, or for a locked matrix the type it was locked from."""
    facts = registered_facts(W)
    return facts.input_dtype if facts is not None else getattr(W, "dtype", None)


def as_square_sparse(W: Any) -> sp.csr_matrix:
    """``W`` as a float64 CSR matrix in canonical form (sorted indices, no duplicates, no
    explicit zeros), after checking that it is square, non-empty and finite.

    A CSR float64 input already in that form is returned as is (no copy).  Any real dtype is
    accepted (float32, integers: converted to float64 exactly); a list of lists of numbers is
    a dense matrix.  A graph raises :class:`GraphGivenForMatrixError` (a ``TypeError``): the
    functions that take W name nodes by their rows ``0..n-1``, not by the graph's labels.
    """
    _refuse_graph(W)
    if not sp.issparse(W):
        try:
            W = np.asarray(W, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise GossipMatrixError(f"W is not a numeric matrix: {exc}") from None
    if W.ndim != 2 or W.shape[0] != W.shape[1]:
        raise GossipMatrixError(f"W is not square: shape {W.shape}")
    if W.shape[0] == 0:
        raise GossipMatrixError("W is empty (0 x 0)")
    if isinstance(W, sp.csr_matrix) and W.dtype == np.float64:
        M = W
    else:
        M = sp.csr_matrix(W, dtype=np.float64)
    if not M.has_canonical_format or not M.data.all():  # duplicates or explicit zeros
        M = M.copy()
        M.sum_duplicates()
        M.eliminate_zeros()
    if not np.isfinite(M.data).all():
        bad = np.flatnonzero(~np.isfinite(M.data))
        i, j = _entry(M, bad[0])
        raise GossipMatrixError(f"W[{i}, {j}] = {M.data[bad[0]]} is not finite")
    return M


def symmetry_defect(W: Any) -> tuple[float, tuple[int, int]]:
    """``max |W - W^T|`` and the first (row-major) entry ``(i, j)`` where it is attained."""
    return kernels.symmetry_defect(as_square_sparse(W))


def distance_to_doubly_stochastic(W: Any) -> float:
    """An upper bound on ``||W - W'||_2`` for an exactly symmetric ``W'`` with ``W' 1 = 1``.

    The checks accept a gossip matrix symmetric and stochastic to a tolerance (``atol``);
    bounds that assume exact symmetry and unit row sums charge this distance.  With
    ``S = (W - W^T) / 2``, ``W_s = (W + W^T) / 2`` and ``r = W_s 1 - 1``, the matrix
    ``W' = W_s - (r 1^T + 1 r^T) / n + (1^T r / n^2) 1 1^T`` is symmetric with ``W' 1 = 1``,
    and ``||W - W'||_2 <= ||S||_inf + 3 ||r||_2 / sqrt(n) <= ||S||_inf + 3 max_i |r_i|``
    (``||S||_2 <= ||S||_inf`` for a skew-symmetric S), where ``max_i |r_i|`` is at most the
    mean of the row and column sums' deviations from 1 (:attr:`MatrixFacts.row_sum_deviation`,
    of W and of W^T, bounds on the exact sums): a few ulps, or 0, for the package's own
    weights."""
    facts = matrix_facts(W)
    if facts.symmetric:
        return 3.0 * facts.row_sum_deviation
    M = facts.W
    skew = float(np.asarray(abs(0.5 * (M - M.T)).sum(axis=1)).max(initial=0.0))
    columns = matrix_facts(M.T.tocsr()).row_sum_deviation
    r = 0.5 * (facts.row_sum_deviation + columns)
    return (skew * (1.0 + 4.0 * np.finfo(float).eps) + 3.0 * r) * (1.0 + 1e-6)


def matrix_facts(W: Any) -> MatrixFacts:
    """The facts of W: remembered ones for a locked W (:func:`lock_gossip_matrix`) or for a W
    already seen in the current query, else fresh ones of its canonical form
    (:func:`as_square_sparse`)."""
    facts = registered_facts(W)
    if facts is None:
        facts = MatrixFacts(as_square_sparse(W))
        facts.input_dtype = getattr(W, "dtype", facts.input_dtype)
        remember_for_query(W, facts)
    return facts


def lock_gossip_matrix(W: Any, *, copy: bool = True) -> sp.csr_matrix | sp.csr_array:
    """W checked once as a gossip matrix and returned read-only, so that every later query
    on it skips the checks.

    The result is a plain ``scipy.sparse.csr_matrix`` (canonical, float64; a
    ``scipy.sparse.csr_array`` when W is a scipy sparse array) whose arrays are read-only; the
    engine remembers what its checks found (row and column sums, symmetry, connected
    components, ...) and reuses that for as long as the matrix lives, instead of a full pass
    over W per check and per query.  Changing the matrix is refused by numpy (``ValueError:
    assignment destination is read-only``); a matrix whose arrays are writeable again or were
    replaced is simply checked afresh.  Making an array writeable, changing it and making it
    read-only again is not detected and defeats the lock: change a copy (``W.copy()`` is
    writeable and unlocked) instead.
    :func:`sparsedp.gossip_matrix` returns locked matrices.

    Parameters
    ----------
    W : array_like or scipy.sparse matrix
        The gossip matrix: non-negative and row-stochastic (:func:`check_gossip_matrix`).
    copy : bool, default True
        Lock a copy of W's arrays.  ``copy=False`` locks W's own arrays in place (no extra
        memory; W must be canonical CSR float64 and nothing else may hold writeable views of
        its arrays).

    Returns
    -------
    scipy.sparse.csr_matrix or scipy.sparse.csr_array
        The locked matrix (a ``csr_array`` when W is a scipy sparse array).

    Raises
    ------
    GossipMatrixError
        W is not a non-negative, row-stochastic, finite square matrix.

    Examples
    --------
    >>> import networkx as nx, numpy as np, sparsedp
    >>> W = sparsedp.lock_gossip_matrix(nx.to_numpy_array(nx.cycle_graph(4)) / 2)
    >>> W.data.flags.writeable
    False
    >>> r = sparsedp.squared_sensitivity(W, target=0, observers=[2], T=5)  # checks W once
    >>> r = sparsedp.squared_sensitivity(W, target=1, observers=[3], T=5)  # reuses them
    """
    if is_locked(W):
        return W
    diagnosis = _Diagnosis(W, 1e-10)
    for prop in ("nonnegative", "row_stochastic"):
        reason = diagnosis.failure(prop)
        if reason is not None:
            raise GossipMatrixError(reason)
    M = diagnosis.W
    if copy and any(np.shares_memory(a, b) for a in (M.data, M.indices, M.indptr)
                    for b in _arrays_of(W)):
        M = M.copy()
    diagnosis.facts.W = M
    locked = register(M, diagnosis.facts)
    return array_view(locked) if isinstance(W, sp.sparray) else locked


def _arrays_of(W: Any) -> tuple[np.ndarray, ...]:
    if sp.issparse(W):
        return tuple(a for a in (getattr(W, "data", None), getattr(W, "indices", None),
                                 getattr(W, "indptr", None)) if isinstance(a, np.ndarray))
    return (W,) if isinstance(W, np.ndarray) else ()


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------

class _Diagnosis:
    """Facts about a gossip matrix (:class:`MatrixFacts`: remembered for a locked W, fresh
    otherwise) and the verdicts at one tolerance; ``failure(p)`` explains why ``p`` fails."""

    def __init__(self, W: Any, atol: float) -> None:
        """``atol`` is widened to ``(d_max + 1) u`` for W stored in a coarser type with unit
        roundoff ``u`` (:func:`input_rounding`; ``d_max`` the longest row): the rounding of its
        ``d_max + 1`` entries moves a row sum by at most that much."""
        self.facts = matrix_facts(W)
        self.W = self.facts.W
        self.atol = max(atol, 2.0 * (self.facts.longest_row + 1) * input_rounding(W))

    def _sums(self, axis: int, label: str, prop: str) -> str | None:
        sums = self.facts.line_sums[1 - axis]  # (rows, columns)
        bad = np.flatnonzero(np.abs(sums - 1.0) > self.atol)
        if bad.size:
            return f"{label} {bad[0]} of W sums to {_fmt(sums[bad[0]])}, not 1 (not {prop})"
        return None

    def _nonnegative(self) -> str | None:
        bad = np.flatnonzero(self.W.data < 0)
        if bad.size:
            i, j = _entry(self.W, bad[0])
            return f"W[{i}, {j}] = {_fmt(self.W.data[bad[0]])} is negative"
        return None

    def _symmetric(self) -> str | None:
        defect, (i, j) = self.facts.symmetry_defect
        if defect > self.atol:
            return f"W is not symmetric: |W - W^T| max {_fmt(defect)} at ({i}, {j})"
        return None

    def _irreducible(self) -> str | None:
        if self.facts.n_strong_components != 1:
            return (f"W is reducible: its pattern has {self.facts.n_strong_components} strongly "
                    "connected components (not irreducible)")
        return None

    def _aperiodic(self) -> str | None:
        if self.facts.period is None:
            return (f"W is reducible ({self.facts.n_strong_components} strongly connected "
                    "components): aperiodicity is only checked for irreducible W")
        if self.facts.period != 1:
            return f"W is periodic (period {self.facts.period}): the chain is not aperiodic"
        return None

    def _row_stochastic(self) -> str | None:
        return self._sums(1, "row", "row-stochastic")

    def _column_stochastic(self) -> str | None:
        return self._sums(0, "column", "column-stochastic")

    def _doubly_stochastic(self) -> str | None:
        return (self._sums(1, "row", "doubly stochastic")
                or self._sums(0, "column", "doubly stochastic"))

    def _primitive(self) -> str | None:
        return self._irreducible() or self._aperiodic()

    def failure(self, prop: str) -> str | None:
        """``None`` if W has property ``prop`` (one of :data:`PROPERTIES`), else the reason."""
        if prop in ("square", "finite"):  # enforced by as_square_sparse
            return None
        key = (prop, self.atol)
        if key not in self.facts.verdicts:
            self.facts.verdicts[key] = getattr(self, "_" + prop)()
        return self.facts.verdicts[key]


def _check_property_names(props: tuple[str, ...]) -> None:
    unknown = [p for p in props if p not in PROPERTIES]
    if unknown:
        raise ParameterError(f"unknown gossip-matrix property {unknown[0]!r}; valid properties: "
                             + ", ".join(PROPERTIES))


def check_gossip_matrix(W: Any, require: tuple[str, ...] = ("nonnegative", "row_stochastic"),
                        atol: float = 1e-10) -> sp.csr_matrix:
    """Raise ``GossipMatrixError`` naming the first property in ``require`` that W lacks;
    return W in canonical CSR form (:func:`as_square_sparse`) when it has them all.

    Properties (:data:`PROPERTIES`): ``square``, ``finite`` (always enforced), ``nonnegative``,
    ``row_stochastic`` (``|sum_j W_ij - 1| <= atol``), ``column_stochastic``,
    ``doubly_stochastic``, ``symmetric`` (``max |W - W^T| <= atol``), ``irreducible`` (the pattern
    of nonzeros is strongly connected), ``aperiodic`` (irreducible with period 1) and
    ``primitive`` (irreducible and aperiodic).  The message names the failing row or entry.
    W stored in a coarser floating type than float64 (float32) is checked with ``atol``
    widened to its rounding, ``2 (d_max + 1) u`` (:func:`input_rounding`).

    Parameters
    ----------
    W : array_like or scipy.sparse matrix
        The matrix to check (any scipy sparse format or a dense array).
    require : str or tuple of str, default ("nonnegative", "row_stochastic")
        The properties W must have, checked in this order.
    atol : float, default 1e-10
        Absolute tolerance of the row/column sums and of the symmetry.

    Returns
    -------
    scipy.sparse.csr_matrix
        W in canonical CSR form (float64).

    Raises
    ------
    GossipMatrixError
        Naming the first property in ``require`` that W lacks (with the row or entry), or if
        W is not a finite, square, non-empty numeric matrix; a graph given for W raises its
        subclass ``GraphGivenForMatrixError`` (also a ``TypeError``).
    ParameterError
        For an unknown property name.

    Examples
    --------
    >>> import networkx as nx, sparsedp
    >>> W = sparsedp.gossip_matrix(nx.path_graph(3), scheme="row-normalised")
    >>> W.toarray()
    array([[0. , 1. , 0. ],
           [0.5, 0. , 0.5],
           [0. , 1. , 0. ]])
    >>> sparsedp.check_gossip_matrix(W).shape
    (3, 3)
    >>> try:
    ...     sparsedp.check_gossip_matrix(W, require=("row_stochastic", "symmetric"))
    ... except sparsedp.GossipMatrixError as err:
    ...     print(err)
    W is not symmetric: |W - W^T| max 0.5 at (0, 1)
    """
    if isinstance(require, str):
        require = (require,)
    _check_property_names(require)
    diagnosis = _Diagnosis(W, atol)
    for prop in require:
        reason = diagnosis.failure(prop)
        if reason is not None:
            raise GossipMatrixError(reason)
    return diagnosis.W


def gossip_properties(W: Any, atol: float = 1e-10) -> dict[str, Any]:
    """Every property of :data:`PROPERTIES` as a bool, plus ``"period"`` (int, ``None`` when W is
    reducible).  ``square`` and ``finite`` are always True: other input raises
    ``GossipMatrixError`` (see :func:`as_square_sparse`).  ``aperiodic`` is False for reducible W.

    Parameters
    ----------
    W : array_like or scipy.sparse matrix
        The matrix to examine.
    atol : float, default 1e-10
        Absolute tolerance of the row/column sums and of the symmetry.

    Returns
    -------
    dict
        ``{property: bool}`` for every name in :data:`PROPERTIES`, and ``"period"``.

    Raises
    ------
    GossipMatrixError
        If W is not a finite, square, non-empty numeric matrix.

    Examples
    --------
    The random walk on a path is row-stochastic but periodic:

    >>> import networkx as nx, sparsedp
    >>> W = sparsedp.gossip_matrix(nx.path_graph(3), scheme="row-normalised")
    >>> props = sparsedp.gossip_properties(W)
    >>> props["row_stochastic"], props["symmetric"], props["primitive"], props["period"]
    (True, False, False, 2)
    >>> M = sparsedp.gossip_matrix(nx.path_graph(3), scheme="metropolis")
    >>> sparsedp.gossip_properties(M)["primitive"]
    True
    """
    diagnosis = _Diagnosis(W, atol)
    props: dict[str, Any] = {p: diagnosis.failure(p) is None for p in PROPERTIES}
    props["period"] = diagnosis.facts.period
    return props


def has_property(W: Any, prop: str, atol: float = 1e-10) -> bool:
    """Whether W has the single property ``prop`` (see :func:`check_gossip_matrix`)."""
    _check_property_names((prop,))
    return _Diagnosis(W, atol).failure(prop) is None
