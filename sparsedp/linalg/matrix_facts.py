"""Facts about one gossip matrix, each computed at most once, remembered within a query and,
for a read-only ("locked") matrix, for as long as the matrix lives.

A privacy map or a sweep asks millions of questions of the same W.  Each check of W (row and
column sums, sign, symmetry, connected components, the period) is a full pass over its
stored entries, as expensive as a sparse product; :class:`MatrixFacts` computes each of them
lazily and keeps it.  A plain scipy matrix gets fresh facts for each query (it may have been
changed in place since): within one query (:func:`one_query`) they are shared by every step
that checks W.  A *locked* matrix — canonical CSR float64 whose three arrays are read-only,
locked by :func:`register` — carries its facts for as long as it lives: its values cannot
change in place without first making an array writeable again or replacing it, and
:func:`locked_facts` checks both (O(1)) before reusing anything.  What it cannot see is an
array made writeable, changed and made read-only again: that defeats the lock (use
``W.copy()`` to change a locked matrix).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from functools import cached_property

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components, shortest_path

from sparsedp.linalg import kernels

__all__ = ["MatrixFacts", "array_view", "is_locked", "locked_facts", "one_query", "query_memo",
           "register", "registered_facts", "remember_for_query", "reuse_scope"]


class MatrixFacts:
    """Lazily computed, atol-free facts about one canonical CSR float64 matrix ``W``.

    Thresholded properties (row sums within ``atol`` of 1, ...) are decided from these by
    :func:`sparsedp.linalg.stochastic.check_gossip_matrix`, which memoises its verdicts in
    :attr:`verdicts` keyed by ``(property, atol)``.
    """

    def __init__(self, W: sp.csr_matrix) -> None:
        self.W = W
        self.verdicts: dict[tuple[str, float], str | None] = {}
        self.input_dtype = W.dtype  # the type W was given in (float32: coarser rounding)
        self.locked: tuple | None = None  # (W's arrays, its shape) when W was locked
        self.array_view: sp.csr_array | None = None  # locked W as a csr_array (array_view)

    @cached_property
    def longest_row(self) -> int:
        """``d_max``: the largest number of stored entries in a row."""
        return int(np.diff(self.W.indptr).max())

    @cached_property
    def line_sums(self) -> tuple[np.ndarray, np.ndarray]:
        """Row and column sums (:func:`sparsedp.linalg.kernels.csr_line_sums`)."""
        return kernels.csr_line_sums(self.W)

    @cached_property
    def absolute_line_sums(self) -> tuple[np.ndarray, np.ndarray]:
        """Row and column sums of ``|W|`` (the same arrays as :attr:`line_sums` when W has
        no negative entry)."""
        if (self.W.data >= 0).all():
            return self.line_sums
        return kernels.csr_line_sums(self.W, absolute=True)

    @cached_property
    def row_sum_deviation(self) -> float:
        """``rho >= max_i |sum_j W_ij - 1|`` for the exact sums of the stored values.

        Exact when every stored value is a multiple of ``2^-52``, every row's absolute sum
        is at most 1.5 and every row sum at least 0.5 (Metropolis weights as
        :func:`sparsedp.gossip_matrix` builds them): every partial sum is then a multiple
        of ``2^-52`` below 2 in absolute value, hence a float64, so the float64 row sums
        have no rounding, nor has ``sum - 1`` (Sterbenz: the sum is in [0.5, 2]).
        Otherwise the sums in extended precision (``np.longdouble``; ``|error| <=
        gamma'_(d+1) sum_j |W_ij|`` with that type's unit roundoff, charged) instead of the
        float64 sums' own rounding, which for weights built in float64 is about as large as
        the deviation itself."""
        W = self.W
        if W.dtype == np.float64 and W.nnz and np.diff(W.indptr).min() > 0:
            scaled = W.data * 2.0**52  # exact: a power of two
            if np.array_equal(scaled, np.floor(scaled)):
                sums = np.add.reduceat(W.data, W.indptr[:-1])
                absolute_sums = (sums if (W.data >= 0).all()
                                 else np.add.reduceat(np.abs(W.data), W.indptr[:-1]))
                if absolute_sums.max() <= 1.5 and sums.min() >= 0.5:
                    return float(np.abs(sums - 1.0).max())
        u = float(np.finfo(np.longdouble).eps) / 2
        k = (self.longest_row + 2) * u
        starts = W.indptr[:-1][np.diff(W.indptr) > 0]
        sums = np.add.reduceat(W.data.astype(np.longdouble), starts)
        absolute = np.add.reduceat(np.abs(W.data).astype(np.longdouble), starts)
        empty_rows = W.shape[0] - starts.size  # an empty row sums to 0: deviation 1
        deviation = float(np.abs(sums - 1).max()) if sums.size else 1.0
        error = k / (1 - k) * float(absolute.max()) if sums.size else 0.0
        return max(deviation + error, 1.0 if empty_rows else 0.0) * (1 + 8 * 2.0**-53)

    @cached_property
    def symmetric(self) -> bool:
        """``W == W^T`` entry for entry (:func:`sparsedp.linalg.kernels.is_symmetric`)."""
        return kernels.is_symmetric(self.W)

    @cached_property
    def symmetry_defect(self) -> tuple[float, tuple[int, int]]:
        """``max |W - W^T|`` and the first entry attaining it
        (:func:`sparsedp.linalg.kernels.symmetry_defect`)."""
        return (0.0, (0, 0)) if self.symmetric else kernels.symmetry_defect(self.W)

    @cached_property
    def n_strong_components(self) -> int:
        return int(connected_components(self.W, directed=True, connection="strong")[0])

    @cached_property
    def weak_components(self) -> np.ndarray:
        """The label of each node's weakly connected component of the pattern of W (one
        pass over W when W is symmetric, else a transpose too)."""
        if self.symmetric:
            return connected_components(self.W, directed=False)[1]
        return connected_components(self.W, directed=True, connection="weak")[1]

    @cached_property
    def period(self) -> int | None:
        """Period of the chain (``None`` when W is reducible).

        1 if some ``W_ii > 0``.  Otherwise, with ``level`` the BFS distance from node 0 along
        the arcs ``u -> v`` (``W_uv != 0``), the period is ``gcd_{u -> v} (level_u + 1 - level_v)``.
        """
        if self.n_strong_components != 1:
            return None
        if np.any(self.W.diagonal() > 0):
            return 1
        level = shortest_path(self.W, directed=True, unweighted=True, indices=0).astype(np.int64)
        rows = np.repeat(np.arange(self.W.shape[0]), np.diff(self.W.indptr))
        return int(np.gcd.reduce(np.abs(level[rows] + 1 - level[self.W.indices])))


_ATTRIBUTE = "_sparsedp_facts"  # a locked matrix carries its facts: they die with it


def _arrays(W: sp.csr_matrix) -> tuple[np.ndarray, ...]:
    return (W.data, W.indices, W.indptr)


def register(W: sp.csr_matrix, facts: MatrixFacts | None = None) -> sp.csr_matrix:
    """Lock ``W`` in place (its three arrays made read-only) and attach its facts to it, for
    as long as it lives.  ``W`` must be canonical CSR float64.  An array that is a view of
    another (``base`` set) is replaced by a copy first, since its base would stay writeable;
    a caller holding another writeable view *into* an array W owns could still change it
    (:func:`sparsedp.lock_gossip_matrix` copies when in doubt)."""
    for name in ("data", "indices", "indptr"):
        array = getattr(W, name)
        if array.base is not None:  # a view: its base would stay writeable behind the lock
            array = array.copy()
            setattr(W, name, array)
        array.flags.writeable = False
    facts = facts if facts is not None else MatrixFacts(W)
    facts.locked = (_arrays(W), W.shape)
    setattr(W, _ATTRIBUTE, facts)
    return W


def array_view(W: sp.csr_matrix) -> sp.csr_array:
    """The locked ``W`` (:func:`register`) as a ``scipy.sparse.csr_array`` over the same
    read-only arrays, locked with the same facts: what a caller who works with scipy's sparse
    arrays gets back (the engine keeps computing on ``W``)."""
    facts = locked_facts(W)
    if facts is None:
        raise ValueError("array_view needs a locked matrix")
    if facts.array_view is None:
        view = sp.csr_array(W.shape, dtype=W.dtype)
        view.data, view.indices, view.indptr = W.data, W.indices, W.indptr
        setattr(view, _ATTRIBUTE, facts)
        facts.array_view = view
    return facts.array_view


def registered_facts(W) -> MatrixFacts | None:
    """The remembered facts of W: a locked W (:func:`locked_facts`), or any W seen earlier in
    the current query (:func:`one_query`); else ``None``."""
    facts = locked_facts(W)
    if facts is not None:
        return facts
    scope = _QUERY.get()
    if scope is not None and id(W) in scope and scope[id(W)][0] is W:
        return scope[id(W)][1]
    return None


def locked_facts(W) -> MatrixFacts | None:
    """The facts of a locked W that is still intact (the same read-only arrays and shape as
    when it was locked), else ``None``.  A copy or an unpickled W is not locked."""
    facts = getattr(W, _ATTRIBUTE, None)
    if not isinstance(facts, MatrixFacts) or facts.locked is None or (
            W is not facts.W and W is not facts.array_view):
        return None
    arrays, shape = facts.locked
    current = _arrays(W)
    intact = (W.shape == shape and all(a is b for a, b in zip(current, arrays, strict=True))
              and not any(a.flags.writeable or a.base is not None for a in current))
    return facts if intact else None


# Facts of the matrices seen in the current query: id -> (the object, its facts).  The
# object is held so that its id cannot be reused while the query runs.
_QUERY: contextvars.ContextVar[dict | None] = contextvars.ContextVar("sparsedp_query",
                                                                     default=None)


def remember_for_query(W, facts: MatrixFacts) -> None:
    """Share ``facts`` with the rest of the current query, under W and under its canonical
    form ``facts.W`` (no-op outside :func:`one_query`)."""
    scope = _QUERY.get()
    if scope is not None:
        scope[id(W)] = (W, facts)
        scope[id(facts.W)] = (facts.W, facts)


# Results derived from a matrix inside a reuse scope: kind -> (the matrix, key, value).
_MEMO: contextvars.ContextVar[dict | None] = contextvars.ContextVar("sparsedp_memo",
                                                                    default=None)


# How many queries the current reuse scope expects to share its work (cost models amortise
# the shared setup over them).
_SCOPE_QUERIES: contextvars.ContextVar[int] = contextvars.ContextVar("sparsedp_scope_queries",
                                                                     default=1)


@contextlib.contextmanager
def reuse_scope(queries: int = 1):
    """Within the block, the work that :func:`query_memo` keeps is shared by every query on
    the same locked W (e.g. the lags and K of one attacker set across all its targets); it is
    freed when the block ends.  ``queries``: how many queries are expected to share it
    (:func:`scope_queries`; a speed hint for the cost models, never a change of result)."""
    token = _MEMO.set({})
    count = _SCOPE_QUERIES.set(max(1, int(queries)))
    try:
        yield
    finally:
        _SCOPE_QUERIES.reset(count)
        _MEMO.reset(token)


def scope_queries() -> int:
    """The ``queries`` of the innermost :func:`reuse_scope` (1 outside any scope)."""
    return _SCOPE_QUERIES.get() if _MEMO.get() is not None else 1


def query_memo(kind: str, W, key: tuple, compute):
    """``compute()``, remembered until the end of the current :func:`reuse_scope` under
    ``(W, key)``: a later request of the same kind for the same *locked* W (:func:`register`,
    whose arrays cannot change in place) and an equal key gets the same value.  One entry
    per kind (the latest), so memory stays bounded.  Outside a reuse scope, or for a W that
    is not locked (it may be changed in place between two queries): ``compute()`` each time,
    nothing kept (a single query's peak memory is unchanged).  Arrays in the value are made
    read-only, so no caller can change what the next one reads."""
    memo = _MEMO.get()
    if memo is None or locked_facts(W) is None:  # a plain matrix may change in place
        return compute()
    entry = memo.get(kind)
    if entry is not None and entry[0] is W and entry[1] == key:
        return entry[2]
    value = compute()
    for item in value if isinstance(value, tuple) else (value,):
        if isinstance(item, np.ndarray):
            item.flags.writeable = False
    memo[kind] = (W, key, value)
    return value


def one_query(function):
    """Decorator: the facts of every matrix checked during a call are computed once and
    shared by all its steps (nested calls join the outer query).  W is not expected to
    change while a call that received it runs."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        if _QUERY.get() is not None:
            return function(*args, **kwargs)
        token = _QUERY.set({})
        try:
            return function(*args, **kwargs)
        finally:
            _QUERY.reset(token)

    return wrapper


def is_locked(W) -> bool:
    """Whether W is a locked matrix whose remembered facts are valid."""
    return locked_facts(W) is not None
