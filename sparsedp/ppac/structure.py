"""Structure of PPAC's leakage: generalised leaves, privacy certificates, informative sequence.

Generalised leaf (paper Def. 6.7): ``j`` is a generalised leaf with *head* ``j`` and *tail*
``i`` (``i != j``) when every ``s in N_j \\ {i}`` has degree 2 and is a neighbour of ``i``.
Then ``i`` recovers ``u_j`` exactly from the first messages (see
:func:`generalised_leaf_attack`): infinite leakage at every horizon.

Privacy certificate (the step of the proof of Thm 6.8): if some ``s in N_j \\ {i}`` has a
neighbour ``b`` outside ``{i, j}``, the column of ``u_j`` in the attacker's observation matrix
is a combination of the columns of ``u_b``, ``Gamma_bs`` and ``Gamma_js`` (paper eqs. 96, 103,
110, 118), for every horizon and every W supported on the graph, so ``i`` can never solve for
``u_j``: finite leakage.

A pair can have neither (e.g. ``N_j = {i, s}`` with ``s`` a leaf of ``j``): the paper's
Theorem 6.8 only covers graphs with no generalised leaf at all (a leaf is itself one, with the
leaf as head), and for such pairs recovery can happen later than the first round (this
module's tests show ``j``'s value recovered at ``t = 1`` for that example).  They are reported
as ``"undetermined"`` by :func:`victim_status`.  :func:`delayed_recovery` settles most of them:
there every ``s in N_j \\ {i}`` is a leaf of ``j`` (set ``L``, non-empty) or a degree-2 common
neighbour of ``i`` and ``j`` (set ``D``), and ``i`` recovers ``u_j`` from round 1 (``j ~ i``) or
round 2 (otherwise) when W gives all the leaves of ``j`` the same nonzero weight.  The rest are
decided by exact arithmetic (:func:`informative_sequence`) or, at scale, numerically.

Both tests run over all pairs at once in O(n + m): for a degree-2 node ``s`` with neighbours
``{j, x}``, the "other" neighbour ``x = (sum of N_s) - j`` is one array operation.

Nodes are named by their labels (networkx nodes, edge-list ids) in every argument and result;
the private helpers work on positions (row indices).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sparsedp import validation
from sparsedp.errors import ParameterError
from sparsedp.graphs.graph import Graph, as_graph
from sparsedp.linalg.exact_rank import IntegerEchelon
from sparsedp.linalg.stochastic import as_square_sparse
from sparsedp.ppac.exact import exact_observation_rows, rational_matrix
from sparsedp.ppac.protocol import AttackerView, PPACLayout

__all__ = [
    "InformativeSequence",
    "delayed_recovery",
    "generalised_leaf_attack",
    "generalised_leaves",
    "informative_sequence",
    "is_generalised_leaf",
    "pair_status",
    "victim_status",
]


def _edge_arrays(g: Graph) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(head j, neighbour s, deg(s), other neighbour of s when deg(s) = 2 else -1) per directed
    edge ``(j, s)`` in CSR order."""
    A = g.adjacency
    deg = g.degrees
    j = np.repeat(np.arange(g.n, dtype=np.int64), np.diff(A.indptr))
    s = A.indices.astype(np.int64)
    nbr_sum = np.bincount(j, weights=s.astype(np.float64), minlength=g.n).astype(np.int64)
    other = np.where(deg[s] == 2, nbr_sum[s] - j, -1)
    return j, s, deg[s], other


def victim_status(graph: Any, attacker: Any) -> dict[Any, str]:
    """Status of every victim ``j`` against ``attacker`` (O(n + m)): ``{label: status}`` in
    node order, with the statuses

    ``"recoverable"`` (``j`` is a generalised leaf with tail ``attacker``), ``"private"`` (the
    Thm 6.8 certificate exists), ``"undetermined"`` (neither), ``"attacker"`` (``j = i``).
    """
    g = as_graph(graph)
    return g.per_node(status_by_position(g, g.index_of(attacker, "attacker")))


def status_by_position(g: Graph, i: int) -> np.ndarray:
    """:func:`victim_status` by position: an object array of the statuses."""
    j, s, deg_s, other = _edge_arrays(g)
    # certificate: s != i and s has a neighbour outside {i, j}
    witness = (s != i) & ((deg_s >= 3) | ((deg_s == 2) & (other != i)))
    # generalised leaf: every s != i has degree 2 and is adjacent to i
    leafy = (s == i) | ((deg_s == 2) & (other == i))
    has_witness = np.bincount(j, weights=witness, minlength=g.n) > 0
    all_leafy = np.bincount(j, weights=~leafy, minlength=g.n) == 0
    status = np.where(all_leafy, "recoverable",
                      np.where(has_witness, "private", "undetermined")).astype(object)
    status[i] = "attacker"
    return status


def pair_status(graph: Any, attacker: Any, victim: Any) -> str:
    """``"recoverable"``, ``"private"`` or ``"undetermined"`` for one pair of labels (see
    :func:`victim_status`); ``ParameterError`` when ``attacker == victim``."""
    g = as_graph(graph)
    return _pair_status(g, *_pair(g, attacker, "attacker", victim, "victim"))


def _pair(g: Graph, a: Any, role_a: str, b: Any, role_b: str) -> tuple[int, int]:
    """Positions of two distinct nodes given by label (``ParameterError`` when equal)."""
    i, j = g.index_of(a, role_a), g.index_of(b, role_b)
    validation.not_among(j, i, role_b, role_a, label=g.id_of(j))
    return i, j


def _pair_status(g: Graph, i: int, j: int) -> str:
    return str(status_by_position(g, i)[j])


def delayed_recovery(graph: Any, W: Any, attacker: Any, victim: Any, horizon: int) -> bool:
    """Whether an ``"undetermined"`` pair is provably recovered by round ``horizon``.

    With ``L`` the leaves of ``j`` (``v_l(0) = Gamma_jl``) and ``D = N_j \\ ({i} | L)`` (degree
    2, adjacent to ``i``), ``u_j = [Gamma_ji] + sum_D Gamma_js + sum_L Gamma_jl``.  The
    attacker knows ``Gamma_ji`` (if ``j ~ i``), ``Gamma_js = v_s(0) - Gamma_is`` for ``s in D``,
    and every ``v_i(tau)`` (it computes them).  It observes ``v_j(0), v_j(1)`` directly when
    ``j ~ i``; otherwise ``v_s(tau + 1) = W_ss v_s(tau) + W_si v_i(tau) + W_sj v_j(tau)`` for an
    ``s in D`` with ``W_sj != 0`` yields ``v_j(tau)`` one round late.  Then

        v_j(1) - W_jj v_j(0) - W_ji v_i(0) - sum_D W_js v_s(0) = sum_L W_jl Gamma_jl,

    which is ``w sum_L Gamma_jl`` when ``W_jl = w != 0`` for every leaf ``l``.  So recovery holds
    for ``horizon >= 1`` (``j ~ i``) or ``>= 2``.  Returns False when these conditions fail
    (which does not prove privacy).  ``attacker`` and ``victim`` are labels; ``W`` is in the
    graph's node order.
    """
    g = as_graph(graph)
    i, j = _pair(g, attacker, "attacker", victim, "victim")
    return delayed_recovery_by_position(g, W, i, j, horizon)


def delayed_recovery_by_position(g: Graph, W: Any, i: int, j: int, horizon: int) -> bool:
    """:func:`delayed_recovery` by position."""
    if _pair_status(g, i, j) != "undetermined":
        return False
    M = as_square_sparse(W).tocsr()
    A = g.adjacency
    deg = g.degrees
    nbrs = A.indices[A.indptr[j]:A.indptr[j + 1]]
    leaves = nbrs[deg[nbrs] == 1]
    common = nbrs[(deg[nbrs] == 2) & (nbrs != i)]
    weights = np.array([M[j, leaf] for leaf in leaves])
    if weights.size == 0 or weights[0] == 0 or np.any(weights != weights[0]):
        return False
    if A[i, j] != 0:
        return horizon >= 1
    return horizon >= 2 and any(M[s, j] != 0 for s in common)


def is_generalised_leaf(graph: Any, head: Any, tail: Any) -> bool:
    """Def. 6.7: every ``s in N_head \\ {tail}`` has degree 2 and is adjacent to ``tail``
    (``head`` and ``tail``: distinct labels)."""
    g = as_graph(graph)
    j, i = _pair(g, head, "head", tail, "tail")
    return _is_generalised_leaf(g, j, i)


def _is_generalised_leaf(g: Graph, j: int, i: int) -> bool:
    A = g.adjacency
    deg = g.degrees
    for s in A.indices[A.indptr[j]:A.indptr[j + 1]]:
        if s == i:
            continue
        if deg[s] != 2:
            return False
        row = A.indices[A.indptr[s]:A.indptr[s + 1]]
        if i not in row:
            return False
    return True


def generalised_leaf_attack(view: AttackerView, graph: Any, victim: Any) -> np.ndarray:
    """Recover ``u_j`` exactly from the attacker's data when ``j`` is a generalised leaf with
    tail ``i`` (paper Def. 6.7 and the argument after it).

    Every ``s in N_j \\ {i}`` has ``N_s = {i, j}``, so ``v_s(0) = Gamma_is + Gamma_js`` and
    ``Gamma_js = v_s(0) - Gamma_is``; if ``j ~ i`` the attacker also received ``Gamma_ji``:

        u_j = sum_{s in N_j} Gamma_js.

    Raises ``ParameterError`` when the pair is not a generalised leaf (then this attack does
    not apply).  Uses only ``view`` (no hidden state of the simulation).
    """
    g = as_graph(graph)
    j, i = _pair(g, victim, "victim", view.attacker, "attacker")
    if not _is_generalised_leaf(g, j, i):
        raise ParameterError(f"node {g.id_of(j)!r} is not a generalised leaf with tail "
                             f"{g.id_of(i)!r}: the generalised-leaf attack does not apply")
    A = g.adjacency
    position = {int(nb): k for k, nb in enumerate(g.indices_of(view.neighbours, "neighbour"))}
    total = np.zeros_like(view.own_value)
    for s in A.indices[A.indptr[j]:A.indptr[j + 1]]:
        if s != i:
            k = position[int(s)]
            total += view.messages[0, k] - view.sent[k]
    if j in position:
        total += view.received[position[j]]
    return total


def generalised_leaves(graph: Any) -> list[tuple[Any, Any]]:
    """All ``(head, tail)`` pairs of Def. 6.7 as labels, in O(n + m); sorted (in node order
    when the labels cannot be compared).

    For each head ``j``: let ``bad`` be its neighbours of degree != 2.  With two or more there
    is no tail.  With one, the tail must be that neighbour and every other neighbour must point
    to it (its other neighbour).  With none, a tail ``i`` is either a neighbour that all the
    others point to, or the common "other" of all the neighbours.
    """
    g = as_graph(graph)
    j, s, deg_s, other = _edge_arrays(g)
    A = g.adjacency
    n_bad = np.bincount(j, weights=deg_s != 2, minlength=g.n).astype(np.int64)
    out = []
    for head in np.flatnonzero(n_bad <= 1):
        lo, hi = A.indptr[head], A.indptr[head + 1]
        nbrs, others = s[lo:hi], other[lo:hi]
        if n_bad[head] == 1:
            candidates = nbrs[deg_s[lo:hi] != 2]
        else:
            candidates = np.unique(np.concatenate([nbrs, others]))
        for tail in candidates.tolist():
            rest = nbrs != tail
            if tail != head and np.all(others[rest] == tail):
                out.append((int(head), int(tail)))
    labelled = [(g.id_of(head), g.id_of(tail)) for head, tail in sorted(out)]
    try:
        return sorted(labelled)
    except TypeError:  # labels of mixed types
        return labelled


@dataclass(frozen=True)
class InformativeSequence:
    """The informative sequence of an attacker (paper Def. 6.1), computed exactly.

    ``sequence``: the ``(neighbour, tau)`` whose message ``v_l(tau)`` is not a linear function
    of what the attacker held before (basis pursuit over eq. 17 in time-major order);
    ``last_time`` is ``t_k`` (``-1`` when no message is informative); ``rank`` the rank of the
    attacker's observation matrix ``R_i`` up to ``horizon``; ``recoverable`` the victims whose
    ``e_{u_j}`` lies in the row span of ``R_i`` (Case 2, eq. 23: exact recovery, infinite
    leakage).  ``horizon`` is the last round included (``None``: infinity, evaluated at
    ``n - 1`` rounds, which suffices by Prop. 6.3).  Nodes (``attacker``, the neighbours of
    ``sequence``, ``recoverable``, the tags of ``rows``) are labels; ``rows`` are the exact
    informative rows over the 2m sources (values in node order, then the noise edges).
    """

    attacker: Any
    horizon: int | None
    sequence: tuple[tuple[Any, int], ...]
    rank: int
    recoverable: tuple[Any, ...]
    rows: tuple = field(repr=False, default=())

    @property
    def last_time(self) -> int:
        return self.sequence[-1][1] if self.sequence else -1

    def to_dict(self) -> dict:
        return {"attacker": self.attacker, "horizon": self.horizon,
                "sequence": [list(p) for p in self.sequence], "last_time": self.last_time,
                "rank": self.rank, "recoverable": list(self.recoverable)}


def resolve_horizon(horizon: Any, n: int) -> tuple[int, int | None]:
    """(rounds to evaluate, reported horizon): infinity, and any horizon past ``n - 1``,
    becomes ``n - 1`` rounds (Prop. 6.3: by Cayley-Hamilton each later observation row
    ``e_k^T W^t``, ``t >= n``, is a combination of the rows for ``t < n``, so the attacker's
    information no longer changes; a huge horizon costs no more than infinity)."""
    if horizon is None or (isinstance(horizon, float) and math.isinf(horizon)):
        return n - 1, None
    if isinstance(horizon, bool) or not isinstance(horizon, (int, np.integer)) or horizon < 0:
        raise ParameterError(f"horizon must be an integer >= 0 or math.inf, got {horizon!r}")
    return min(int(horizon), n - 1), int(horizon)


def informative_sequence(layout: PPACLayout, W: Any, attacker: Any,
                         horizon: Any = math.inf) -> InformativeSequence:
    """Exact basis pursuit over the attacker's observations (Def. 6.1, Thm 6.2, Prop. 6.3).

    Exact integer arithmetic on ``D^tau p_l(tau)`` with ``W = W_int / D`` (see
    :func:`sparsedp.ppac.exact.rational_matrix`).  Cost grows with ``n``, the horizon and the
    size of the integers: meant for graphs of up to a few hundred edges.  ``attacker`` is a
    label, ``W`` in the graph's node order.
    """
    g = layout.graph
    return with_labels(basis_pursuit(layout, W, g.index_of(attacker, "attacker"), horizon), g)


def with_labels(seq: InformativeSequence, g: Graph) -> InformativeSequence:
    """A position-based :class:`InformativeSequence` (:func:`basis_pursuit`) by label."""
    return dataclasses.replace(
        seq, attacker=g.id_of(seq.attacker),
        sequence=tuple((g.id_of(nb), tau) for nb, tau in seq.sequence),
        recoverable=tuple(g.id_of(j) for j in seq.recoverable),
        rows=tuple(((tag[0], g.id_of(tag[1]), *tag[2:]), row) for tag, row in seq.rows))


def basis_pursuit(layout: PPACLayout, W: Any, i: int, horizon: Any) -> InformativeSequence:
    """:func:`informative_sequence` by position: every node in the result is a row index."""
    rounds, reported = resolve_horizon(horizon, layout.n)
    W_int, _ = rational_matrix(W)
    if W_int.shape[0] != layout.n:
        raise ParameterError(f"W is {W_int.shape[0]} x {W_int.shape[0]}, the graph has "
                             f"{layout.n} nodes")
    echelon = IntegerEchelon(layout.num_sources)
    sequence, rows = [], []
    for label, row in exact_observation_rows(layout, W_int, i, rounds):
        if echelon.add(row):
            rows.append((label, row))
            if label[0] == "message":
                sequence.append((label[1], label[2]))
    in_span = echelon.unit_vectors_in_span()[:layout.n]
    recoverable = tuple(int(j) for j in np.flatnonzero(in_span) if j != i)
    return InformativeSequence(i, reported, tuple(sequence), echelon.rank, recoverable,
                               tuple(rows))
