"""Threat models: which messages the attacker sees, as the row selector ``S`` and the power of W.

Rounds ``theta_(t+1) = W_t (theta_t + x_t + u_t)`` (t = 0..T-1, ``theta_0 = 0``), messages
``s_t = theta_t + x_t + u_t``.  Every view is a linear map ``y = H_T z`` of the noise and
data ``z_t = x_t + u_t`` with block lower-triangular ``H_T`` (mT x nT):

``secure-summation`` (v2 Lemma 10; v2 Remark 11 with ``S = e_i^T``; a colluding set when
    several observers are given)
        ``H[t, k] = S W_(t-1) ... W_k``: the observers see their own aggregated messages.
``secure-summation-v1`` (v1 eq. 3.2, Thm 8)
        ``H[t, k] = S W_t W_(t-1) ... W_k``: the observers see ``theta_(t+1)`` (one more
        power of W, the form of the first version of the paper).
``neighbourhood`` (v2 Remark 11, no secure summation)
        ``S = S(closed neighbourhood of the observers)``, blocks as in secure-summation: a
        node sees the plain messages of its neighbours.
``adaptive-v1`` (v1 Thm 9: adaptive compositions with secure summation)
        ``S = S(closed neighbourhood of the target)``, blocks as in secure-summation-v1: the
        target's closed neighbourhood as one colluding set.  It bounds every sub-coalition of
        that set (a larger coalition can compute a smaller one's view), but **not** every
        observer: v1 Thm 9's post-processing claim fails against coalitions outside the
        neighbourhood (docs/closed_forms.md, counterexample 5); no observers are given.
``target-v1`` (v1 Thm 10: adaptive, no secure summation)
        ``S = e_j^T``, blocks as in secure-summation: the target's own messages (the same
        matrices as ``secure-summation`` with ``observers=[target]``).  v1 Thm 10 claims it
        bounds every observer; it does not (a neighbour also knows its own messages, whose
        noise is part of what hides the target: K2, T = 2 gives 1.8 here and 2.0 for the
        neighbour's neighbourhood view; docs/closed_forms.md, counterexample 4); no
        observers are given.
``local-dp``
        ``S = I``: the attacker sees every message; ``H`` is invertible, ``M_T = I`` and the
        squared sensitivity is exactly T.

``noise_removed`` (v2 Sec. 3.3 / Thm 16, v1 Sec. 3.5, SecLDP; Bellet et al.'s PNDP,
App. A.2): the attacker knows the noise it injected itself, so the columns of that noise are
deleted from every block, ``H[t, k] -> H[t, k] S_2`` with ``S_2`` selecting the other nodes.
Whose noise: the given observers' (``known_noise``) — in the neighbourhood view the attacking
nodes, not the neighbours whose messages they read; for the views without observers the
whole observed set.  Some observations then become exact functions of others (the first
block row, for instance, is the attacker's own data for the secure-summation forms);
:meth:`sparsedp.linalg.operators.GossipSystem.redundant_rows` finds them and the solve drops them.
When the target's noise is among the known (the attacker is the target), no finite
sensitivity is reported: the sensitivity is infinite by convention, since a node holds its
own data (for the v2 forms the linear algebra agrees, ``G c`` leaves the range of ``H``; for
the v1 forms it does not, and a finite number would model an attacker that knows its noise
but not its data).

Neighbourhoods are read from the sparsity pattern of W (both directions; for time-varying W,
the union over the rounds, which can only enlarge the view and so stays sound).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from sparsedp.errors import ParameterError
from sparsedp.linalg.matrix_facts import query_memo

VIEWS = (
    "secure-summation",
    "secure-summation-v1",
    "neighbourhood",
    "adaptive-v1",
    "target-v1",
    "local-dp",
)
VIEWS_WITHOUT_OBSERVERS = ("adaptive-v1", "target-v1", "local-dp")
POWER_OFFSET = {"secure-summation-v1": 1, "adaptive-v1": 1}
VIEW_NOTES = {  # what a view bounds, where a paper claims more
    "adaptive-v1": "view adaptive-v1: the target's closed neighbourhood as one coalition; it "
    "bounds that coalition and its sub-coalitions, not every observer (v1 Thm 9's claim is "
    "false: docs/closed_forms.md)",
    "target-v1": "view target-v1: the target's own messages; not a bound for other observers "
    "(v1 Thm 10's claim is false: docs/closed_forms.md)",
}


@dataclass(frozen=True)
class ObservationModel:
    """The resolved view: observer rows of ``S``, the power offset and the noise model.

    ``power_offset`` p: ``H[t, k] = S W_(t-1+p) ... W_k`` (p = 1 adds the round's own W).
    ``known_noise``: the nodes whose noise the attacker knows (``R``, a subset of the rows
    of ``S``; empty unless ``noise_removed``): the attacker's own nodes, not every node whose
    messages it reads.
    """

    view: str
    observers: np.ndarray
    power_offset: int
    noise_removed: bool
    known_noise: np.ndarray

    @property
    def observes_everything(self) -> bool:
        return self.view == "local-dp"


def resolve_view(
    view: str, pattern: sp.csr_matrix, target: int, observers, noise_removed: bool
) -> ObservationModel:
    """The :class:`ObservationModel` of a named view.

    ``pattern``: a sparse matrix with the sparsity pattern of the gossip matrices (its
    off-diagonal non-zeros are the edges); ``observers``: validated node indices, or ``None``
    for the views that fix their own observers.
    """
    if view not in VIEWS:
        raise ParameterError(f"unknown view {view!r}; choose one of {VIEWS}")
    if not isinstance(noise_removed, (bool, np.bool_)):
        raise ParameterError(f"noise_removed must be True or False, got {noise_removed!r}")
    if view in VIEWS_WITHOUT_OBSERVERS:
        if observers is not None:
            raise ParameterError(
                f"view {view!r} fixes its own observers; pass observers=None"
            )
    elif observers is None:
        raise ParameterError(f"view {view!r} needs observers")
    n = pattern.shape[0]
    if view == "neighbourhood":
        rows = closed_neighbourhood(pattern, observers)
    elif view == "adaptive-v1":
        rows = closed_neighbourhood(pattern, [target])
    elif view == "target-v1":
        rows = np.array([target], dtype=np.int64)
    elif view == "local-dp":
        rows = np.arange(n, dtype=np.int64)
    else:
        rows = np.asarray(observers, dtype=np.int64)
    attackers = rows if observers is None else np.asarray(observers, dtype=np.int64)
    return ObservationModel(
        view=view,
        observers=rows,
        power_offset=POWER_OFFSET.get(view, 0),
        noise_removed=bool(noise_removed),
        known_noise=np.sort(attackers) if noise_removed else np.zeros(0, dtype=np.int64),
    )


def closed_neighbourhood(pattern: sp.csr_matrix, nodes) -> np.ndarray:
    """Sorted ``nodes`` together with every node adjacent to one of them (either direction);
    formed once per (pattern, nodes) inside a
    :func:`~sparsedp.linalg.matrix_facts.reuse_scope` (every target of an attacker set)."""
    nodes = np.asarray(nodes, dtype=np.int64)
    return query_memo("closed neighbourhood", pattern, (nodes.tobytes(),),
                      lambda: _closed_neighbourhood(pattern, nodes))


def _closed_neighbourhood(pattern: sp.csr_matrix, nodes: np.ndarray) -> np.ndarray:
    out_neighbours = pattern[nodes].indices
    in_neighbours = pattern.T.tocsr()[nodes].indices
    return np.unique(np.concatenate([nodes, out_neighbours, in_neighbours])).astype(np.int64)
