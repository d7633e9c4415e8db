"""Pairwise network DP (PNDP) results: Renyi-DP losses of one source against many receivers.

Both the random-walk bounds (:mod:`sparsedp.randomwalk`) and the Muffliato gossip bound
(:mod:`sparsedp.randomwalk.muffliato`) are linear in the Renyi order alpha and in ``1 / sigma^2``:
``eps(u -> v)(alpha) = alpha * k_v`` for every alpha at which the bound holds.  A
:class:`PairwiseLoss` stores ``k_v`` through the RDP value at the requested order, the
local-DP value it was clipped to, and the largest order for which the bound holds (the
random-walk theorem needs ``sigma^2 >= 2 alpha (alpha - 1)``); beyond that order only the
local-DP composition ``alpha * N / (2 sigma^2)`` is used.  The conversion to
(epsilon, delta)-DP reuses :func:`sparsedp.privacy.rdp_to_dp` and optimises over alpha.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sparsedp import validation
from sparsedp.errors import ParameterError
from sparsedp.privacy.gaussian import DEFAULT_ALPHAS, rdp_to_dp
from sparsedp.reprs import short_repr
from sparsedp.tables import Tabular

__all__ = ["KINDS", "PairwiseLoss", "loss_by_distance", "renyi_order"]

KINDS = ("upper", "estimate")


def renyi_order(alpha: object) -> float:
    """A Renyi order: a finite real > 1."""
    a = validation.real("alpha", alpha)
    if not (math.isfinite(a) and a > 1.0):
        raise ParameterError(f"alpha (Renyi order) must be > 1 and finite, got {a!r}")
    return a


@dataclass(frozen=True)
class PairwiseLoss(Tabular):
    """RDP loss of ``source`` towards each receiver at order ``alpha``.

    ``rdp[j]`` is the loss towards ``receivers[j]`` (already including any numerical error
    bound and clipped at ``local_dp``, the local-DP loss of the same contributions).
    ``kind``: ``"upper"`` (a certified upper bound under the stated theorem and its
    assumptions) or ``"estimate"`` (e.g. the expected number of contributions was used
    instead of a cap).  ``alpha_max``: the largest order at which the bound holds.
    :meth:`to_pandas` and :meth:`to_arrow` give one row per receiver (``receiver``, ``rdp``,
    ``clipped``; :meth:`table_columns`).
    ``numerical_error``: the largest numerical error bound that was added.

    Attributes
    ----------
    mechanism : str
        ``"random walk"``, ``"muffliato (plain)"``, ... (variant included).
    source : int
        The node whose data is protected (a row of W).
    receivers : numpy.ndarray
        The receivers (rows of W); for a coalition, its members.
    alpha : float
        The Renyi order.
    sigma : float
        The noise standard deviation (units of the l2 sensitivity).
    rdp : numpy.ndarray
        RDP loss towards each receiver (one value for a coalition).
    local_dp : float
        The local-DP loss of the same contributions (the clip level).
    clipped : numpy.ndarray
        Whether each value was clipped at ``local_dp``.
    kind : str
        ``"upper"`` or ``"estimate"``.
    alpha_max : float
        Largest order at which the bound holds.
    numerical_error : float
        Largest numerical error bound added.
    method : str
        How the values were computed.
    notes : tuple of str
        Assumptions and choices.

    Examples
    --------
    >>> import networkx as nx, sparsedp
    >>> W = sparsedp.gossip_matrix(nx.cycle_graph(8))
    >>> loss = sparsedp.random_walk_rdp(W, source=0, T=40, sigma=10.0, alpha=4.0,
    ...                                 contributions=5)
    >>> loss.kind, loss.receivers.tolist()
    ('upper', [1, 2, 3, 4, 5, 6, 7])
    >>> loss.rdp.round(4).tolist()
    [0.1, 0.0795, 0.0518, 0.0448, 0.0518, 0.0795, 0.1]
    >>> loss.clipped.tolist()
    [True, False, False, False, False, False, True]
    >>> float(loss.epsilon(delta=1e-5).max().round(4))
    0.8966
    """

    mechanism: str
    source: int
    receivers: np.ndarray
    alpha: float
    sigma: float
    rdp: np.ndarray
    local_dp: float
    clipped: np.ndarray
    kind: str
    alpha_max: float
    numerical_error: float
    method: str
    notes: tuple[str, ...] = ()

    __repr__ = short_repr

    def table_columns(self) -> dict:
        """One row per receiver: ``receiver``, ``rdp`` and ``clipped``; for a coalition (one
        loss for several receivers) one row whose ``receivers`` lists its members."""
        if self.rdp.size == self.receivers.size:
            return {"receiver": self.receivers, "rdp": self.rdp, "clipped": self.clipped}
        members = np.empty(1, dtype=object)
        members[0] = self.receivers.tolist()
        return {"receivers": members, "rdp": self.rdp, "clipped": self.clipped}

    def rdp_at(self, alpha: float) -> np.ndarray:
        """RDP losses at another order: ``rdp * alpha / self.alpha`` where the bound holds
        (``alpha <= alpha_max``), the local-DP value ``local_dp * alpha / self.alpha`` above."""
        a = renyi_order(alpha)
        per_unit = self.rdp if a <= self.alpha_max else np.full_like(self.rdp, self.local_dp)
        return per_unit * (a / self.alpha)

    def epsilon(self, delta: float, alphas: np.ndarray | None = None) -> np.ndarray:
        """(epsilon, delta)-DP of each pair, minimised over the orders ``alphas`` (default
        :data:`sparsedp.privacy.DEFAULT_ALPHAS`) with :func:`sparsedp.privacy.rdp_to_dp`."""
        orders = DEFAULT_ALPHAS if alphas is None else np.asarray(alphas, dtype=float)
        per_unit = self.rdp / self.alpha
        ldp_unit = self.local_dp / self.alpha
        valid = orders <= self.alpha_max
        out = np.empty(len(self.rdp))
        for j, k in enumerate(per_unit):
            curve = orders * np.where(valid, k, ldp_unit)
            out[j] = rdp_to_dp(curve, delta, orders)[0]
        return out

    def as_dict(self) -> dict:
        """JSON-ready record (lists instead of arrays)."""
        return {
            "mechanism": self.mechanism,
            "source": int(self.source),
            "receivers": [int(v) for v in self.receivers],
            "alpha": self.alpha,
            "sigma": self.sigma,
            "rdp": [float(x) for x in self.rdp],
            "local_dp": self.local_dp,
            "clipped": [bool(x) for x in self.clipped],
            "kind": self.kind,
            "alpha_max": self.alpha_max if math.isfinite(self.alpha_max) else None,
            "numerical_error": self.numerical_error,
            "method": self.method,
            "notes": list(self.notes),
        }


def loss_by_distance(distances: np.ndarray, values: np.ndarray) -> list[dict]:
    """Min / mean / max of ``values`` grouped by integer ``distances`` (increasing), with the
    number of nodes at each distance."""
    d = np.asarray(distances)
    v = np.asarray(values, dtype=float)
    if d.shape != v.shape:
        raise ParameterError(f"distances and values differ in shape: {d.shape} vs {v.shape}")
    rows = []
    for k in np.unique(d):
        sel = v[d == k]
        rows.append({"distance": int(k), "count": int(sel.size), "min": float(sel.min()),
                     "mean": float(sel.mean()), "max": float(sel.max())})
    return rows
