"""Closed-form results of Koskela & Kulkarni (v2, Sec. 4-5) as checked calculators.

Every function returns a :class:`ClosedForm` (plain data: ``value``, ``kind``, the theorem's
``assumptions`` as text, and the ``terms`` that add up to ``value``).  ``kind`` is one of
:data:`KINDS`:

``"upper"``
    an upper bound that holds under the theorem and its stated assumptions (the same meaning as
    ``"upper"`` in :class:`sparsedp.PairwiseLoss`; it is not numerically certified like the
    ``"certified upper"`` bounds of :func:`sparsedp.squared_sensitivity`, it rests on the
    paper's proof);
``"limit"``
    the exact value of a limit as ``T -> inf`` (no finite-T statement);
``"asymptotic upper"``
    an upper bound on a ``limsup`` as ``T -> inf`` (no finite-T statement);
``"estimate"``
    an order-of-magnitude value (constants hidden by ``O~`` set to 1): neither a lower nor an
    upper bound.

Results (Delta^2 denotes the squared sensitivity ``Delta_T(j -> A)^2`` of
:func:`sparsedp.squared_sensitivity`; rho = max(|lambda_2|, |lambda_n|)):

* Thm 13 (:func:`thm13_rate`): single observer i != j, ``lim Delta^2 / T = 1/n``.
* Thm 15 (:func:`thm15_bound`): ``Delta^2 <= (m/n) T + 2/(1-rho)^2 sqrt(mT/n) + 2/(1-rho)^4``
  for j not in A.  The printed statement has ``Delta^2 / T`` on the left: a stray factor T
  (the proof, App. H, bounds ``Delta^2`` itself; with ``Delta^2 / T`` the bound would grow
  like T while ``Delta^2 <= T``).
* Thm 16 (:func:`thm16_rate`): observers' own noise removed, ``limsup Delta^2 / T <= m/(n-m)``,
  for j not in A and -- an extra condition added here -- j adjacent to no observer.
* eq. 5.4 (:func:`eq54_bound`): Thm 15 with m = 1 and ``gamma = 1 - rho``.
* eq. 5.5 (:func:`eq55_sigma`): classical Gaussian-mechanism calibration, eps < 1 only.
* eq. 5.6 (:func:`eq56_sigma`): eq. 5.5 applied to the bound (5.4).
* Thm 17 (:func:`thm17_utility_estimate`): the O~ utility bound with constants set to 1, an
  estimate; the consensus parameter is ``p = 1 - rho^2`` (Lemma J.1; eq. 5.3 and App. J.3
  write ``1 - gamma^2``).

The number forms live in :mod:`sparsedp.gossip.closed_forms_numeric` (re-exported here).
The ``*_for`` functions take a gossip matrix W, check the theorem's assumptions (W symmetric,
doubly stochastic and primitive; the target not an observer; for Thm 16 the target adjacent
to no observer) and raise :class:`~sparsedp.errors.GossipMatrixError` /
:class:`~sparsedp.errors.ParameterError` with the reason.  Where an assumption is missing
from the paper but needed (j != i in Thm 13, j not adjacent to A in Thm 16), the refusal cites
the counterexample in ``tests/test_gossip_closed_forms.py``; ``docs/closed_forms.md`` has the
measured numbers.
"""

from __future__ import annotations

import numpy as np

from sparsedp import validation
from sparsedp.errors import GossipMatrixError, ParameterError
from sparsedp.gossip.closed_forms_numeric import (
    KINDS,
    ClosedForm,
    eq54_bound,
    eq55_sigma,
    eq56_sigma,
    thm13_rate,
    thm15_bound,
    thm16_rate,
    thm17_utility_estimate,
)
from sparsedp.hints import GossipMatrix, Nodes
from sparsedp.linalg.spectral import RhoBound, rho_bound, spectral_info
from sparsedp.linalg.stochastic import as_square_sparse, check_gossip_matrix

__all__ = [
    "KINDS",
    "ClosedForm",
    "certified_rho",
    "eq54_bound",
    "eq55_sigma",
    "eq56_sigma",
    "thm13_rate",
    "thm13_rate_for",
    "thm15_bound",
    "thm15_bound_for",
    "thm16_rate",
    "thm16_rate_for",
    "thm17_utility_estimate",
]

THEOREM_PROPERTIES = ("nonnegative", "symmetric", "doubly_stochastic", "primitive")
_TESTS = "tests/test_gossip_closed_forms.py"


# --------------------------------------------------------------------------------------------
# Closed forms for a given gossip matrix
# --------------------------------------------------------------------------------------------

def certified_rho(W: GossipMatrix) -> tuple[float, str]:
    """An upper bound on ``rho = max(|lambda_2|, |lambda_n|)`` of a symmetric W, and a note.

    :func:`sparsedp.spectral_info` reports estimates of lambda_2 and lambda_n together with
    ``tolerance``, a bound on the distance from each estimate to an eigenvalue of W.  For the
    dense method (n <= 2000) the value is ``rho + tolerance``; for the iterative methods the
    estimates are certified by Sylvester's law of inertia where the sparse factorisation is
    affordable, else the value is the estimate and the note says it is not certified
    (:func:`sparsedp.linalg.spectral.rho_bound`; :func:`thm15_bound_for` then reports kind
    ``"estimate"``).

    Parameters
    ----------
    W : array_like or scipy.sparse matrix
        Symmetric row-stochastic gossip matrix (n >= 2).

    Returns
    -------
    rho : float
        An upper bound on ``max(|lambda_2|, |lambda_n|)`` (an estimate when the note says so).
    note : str
        How the bound was obtained (and whether it is certified).

    Raises
    ------
    GossipMatrixError
        If W is not symmetric, not row-stochastic, or 1 x 1.

    Examples
    --------
    >>> import networkx as nx, sparsedp
    >>> W = sparsedp.gossip_matrix(nx.cycle_graph(8), scheme="metropolis")
    >>> rho, note = sparsedp.certified_rho(W)
    >>> round(rho, 6)
    0.804738
    >>> note  # doctest: +ELLIPSIS
    'rho <= 0.804737854124: dense eigenvalues 0.804737854124 + backward-error bound ...'
    """
    bound = _rho(W)
    return bound.value, bound.note


def _rho(W: GossipMatrix) -> RhoBound:
    """:func:`sparsedp.linalg.spectral.rho_bound` of a W that must be symmetric."""
    info = spectral_info(W)
    if not info.symmetric:
        raise GossipMatrixError("W is not symmetric: the closed forms need a symmetric W")
    return rho_bound(W, info)


def _checked_matrix(W):
    M = as_square_sparse(W)
    check_gossip_matrix(M, require=THEOREM_PROPERTIES)
    return M


def _observer_set(M, target, observers) -> tuple[int, np.ndarray]:
    n = M.shape[0]
    j = validation.node_index(target, n, "target")
    A = validation.node_set(observers, n, "observers")
    if j in set(A.tolist()):
        raise ParameterError(
            f"target {j} is one of the observers: the closed forms need j not in A; they are "
            f"false there (the observer sees j's messages, Delta^2 grows like T; see {_TESTS})")
    return j, A


def _adjacent_observers(M, j: int, A: np.ndarray) -> list[int]:
    """Observers a with ``W_aj != 0`` (the sparsity pattern; W symmetric)."""
    col = M[:, [j]].toarray().ravel()
    return [int(a) for a in A if col[a] != 0.0]


def thm13_rate_for(W: GossipMatrix, target: int, observer: int) -> ClosedForm:
    """Thm 13 for a given W: checks W symmetric, doubly stochastic, primitive and
    ``target != observer`` (for ``target == observer`` the slope is close to 1, not 1/n:
    counterexample in the tests), then returns :func:`thm13_rate`.

    Parameters
    ----------
    W : array_like or scipy.sparse matrix
        Gossip matrix: symmetric, doubly stochastic and primitive.
    target : int
        Node j whose data is protected (a row of W).
    observer : int
        The observing node i (``!= target``).

    Returns
    -------
    ClosedForm
        As :func:`thm13_rate` with ``n`` the size of W.

    Raises
    ------
    GossipMatrixError
        If W is not symmetric, doubly stochastic and primitive.
    GraphError
        If ``target`` or ``observer`` is not a node of W.
    ParameterError
        If ``target == observer``.

    Examples
    --------
    >>> import networkx as nx, sparsedp
    >>> W = sparsedp.gossip_matrix(nx.cycle_graph(8), scheme="metropolis")
    >>> sparsedp.thm13_rate_for(W, target=0, observer=4).value
    0.125
    """
    M = _checked_matrix(W)
    _observer_set(M, target, [observer])
    return thm13_rate(M.shape[0])


def thm15_bound_for(W: GossipMatrix, target: int, observers: Nodes, T: int) -> ClosedForm:
    """Thm 15 for a given W, with rho from :func:`certified_rho` (rounded up by the reported
    eigenvalue error, so rho is not under-estimated; kind ``"estimate"`` when that rho is not
    certified, see there).  Checks W symmetric, doubly stochastic,
    primitive and ``target not in observers`` (the bound is false otherwise: counterexample in
    the tests).

    Parameters
    ----------
    W : array_like or scipy.sparse matrix
        Gossip matrix: symmetric, doubly stochastic and primitive.
    target : int
        Node j whose data is protected.
    observers : sequence of int
        The observer set A (``target`` not in it).
    T : int
        Number of gossip rounds (>= 1).

    Returns
    -------
    ClosedForm
        As :func:`thm15_bound`, with the note on rho added to ``notes``.

    Raises
    ------
    GossipMatrixError
        If W fails an assumption, or the rho bound is >= 1.
    GraphError
        If a node is not a row of W.
    ParameterError
        If ``target`` is an observer, the observer set is empty, or ``T < 1``.

    Examples
    --------
    The bound holds, loosely, against the certified sensitivity on a small cycle:

    >>> import networkx as nx, sparsedp
    >>> W = sparsedp.gossip_matrix(nx.cycle_graph(8), scheme="metropolis")
    >>> form = sparsedp.thm15_bound_for(W, target=0, observers=[4], T=50)
    >>> round(form.value, 3)
    1513.197
    >>> r = sparsedp.squared_sensitivity(W, target=0, observers=[4], T=50)
    >>> round(r.upper, 6), r.upper <= form.value
    (4.108838, True)
    """
    M = _checked_matrix(W)
    _, A = _observer_set(M, target, observers)
    T = validation.rounds(T)
    bound = _rho(M)
    rho, note, certified = bound.value, bound.note, bound.certified
    if rho >= 1.0:
        raise GossipMatrixError(f"rho upper bound {rho:.6g} >= 1 (spectral gap below the "
                                "eigensolver's tolerance): the bound is infinite")
    form = thm15_bound(M.shape[0], len(A), T, rho)
    return ClosedForm(form.name, form.value, form.kind if certified else "estimate",
                      form.assumptions, form.terms, (*form.notes, note))


def thm16_rate_for(W: GossipMatrix, target: int, observers: Nodes) -> ClosedForm:
    """Thm 16 for a given W.  Checks W symmetric, doubly stochastic, primitive, target not in
    observers and target adjacent to no observer (``W_aj == 0`` for every a in A).

    The adjacency condition is not in the paper.  It is added because the exact computation
    contradicts the theorem there: ER(40, 0.2), Metropolis weights, observer 0, neighbour 1,
    noise removed: ``Delta-bar_T^2 >= 3.785 (T = 20), 7.838 (T = 40)``, i.e. a slope of about
    0.203 against ``m/(n-m) = 0.0256`` (``tests/test_gossip_closed_forms.py``).

    Parameters
    ----------
    W : array_like or scipy.sparse matrix
        Gossip matrix: symmetric, doubly stochastic and primitive.
    target : int
        Node j whose data is protected.
    observers : sequence of int
        The observer set A: ``target`` not in it and not adjacent to any of it.

    Returns
    -------
    ClosedForm
        As :func:`thm16_rate` with ``n`` the size of W and ``m = len(observers)``.

    Raises
    ------
    GossipMatrixError
        If W fails an assumption.
    GraphError
        If a node is not a row of W.
    ParameterError
        If ``target`` is an observer or adjacent to one.

    Examples
    --------
    >>> import networkx as nx, sparsedp
    >>> W = sparsedp.gossip_matrix(nx.cycle_graph(8), scheme="metropolis")
    >>> round(sparsedp.thm16_rate_for(W, target=0, observers=[4]).value, 6)
    0.142857
    >>> try:
    ...     sparsedp.thm16_rate_for(W, target=0, observers=[1])
    ... except sparsedp.ParameterError as err:
    ...     print(str(err)[:60])
    target 0 is adjacent to observer(s) [1]: Thm 16 is refused t
    """
    M = _checked_matrix(W)
    j, A = _observer_set(M, target, observers)
    adjacent = _adjacent_observers(M, j, A)
    if adjacent:
        raise ParameterError(
            f"target {j} is adjacent to observer(s) {adjacent[:5]}: Thm 16 is refused there. "
            "The exact sensitivity contradicts it for neighbours (ER(40, 0.2): slope about 0.20 "
            f"instead of m/(n-m) = 0.026 with alternating signs c; see {_TESTS} and "
            "docs/closed_forms.md)")
    return thm16_rate(M.shape[0], len(A))
