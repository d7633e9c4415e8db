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
        ``S = S(closed neighbourhood of the target)``, blocks as in secure-summation-v1.  Every
        node's view is a post-processing of this one, so the bound holds against every
        observer; no observers are given.
``target-v1`` (v1 Thm 10: adaptive, no secure summation)
        ``S = e_j^T`` (the target's own view), blocks as in secure-summation.  Holds against
        every observer; no observers are given.
``local-dp``
        ``S = I``: the attacker sees every message; ``H`` is invertible, ``M_T = I`` and the
        squared sensitivity is exactly T.

``noise_removed`` (v2 Sec. 3.3 / Thm 16, v1 Sec. 3.5, SecLDP): the observers know the noise
they injected themselves, so the columns of their noise are deleted from every block,
``H[t, k] -> H[t, k] S_2`` with ``S_2`` selecting the other nodes.  ``K = H S_2 S_2^T H^T`` is
then singular (the first block row of H vanishes for the secure-summation forms) but
consistent whenever the target is not an observer; when it is, the attacker sees the target's
data without noise and no guarantee exists (the sensitivity is infinite).

Neighbourhoods are read from the sparsity pattern of W (both directions; for time-varying W,
the union over the rounds, which can only enlarge the view and so stays sound).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .errors import ParameterError

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


@dataclass(frozen=True)
class ObservationModel:
    """The resolved view: observer rows of ``S``, the power offset and the noise model.

    ``power_offset`` p: ``H[t, k] = S W_(t-1+p) ... W_k`` (p = 1 adds the round's own W).
    """

    view: str
    observers: np.ndarray
    power_offset: int
    noise_removed: bool

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
    return ObservationModel(
        view=view,
        observers=rows,
        power_offset=POWER_OFFSET.get(view, 0),
        noise_removed=bool(noise_removed),
    )


def closed_neighbourhood(pattern: sp.csr_matrix, nodes) -> np.ndarray:
    """Sorted ``nodes`` together with every node adjacent to one of them (either direction)."""
    nodes = np.asarray(nodes, dtype=np.int64)
    out_neighbours = pattern[nodes].indices
    in_neighbours = pattern.T.tocsr()[nodes].indices
    return np.unique(np.concatenate([nodes, out_neighbours, in_neighbours])).astype(np.int64)
