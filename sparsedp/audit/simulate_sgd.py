"""DP-D-SGD and Muffliato-SGD(K) run literally, node by node, recording what a PNDP attacker
set receives.

Written from the pseudo-code of Bellet et al. (Algorithm 1, lines 4-8; App. A.2 for
DP-D-SGD, ``C = I``; App. A.4 for Muffliato-SGD, K gossip rounds per gradient step), not
from :mod:`sparsedp.mf`'s matrices.  Every node ``u`` starts at ``x_u = 0`` and, for each
gradient step ``t = 0..T-1``:

1. local update (line 5, step size ``eta = 1``: gradients and noise scale alike, the
   sensitivity does not depend on it): ``x_u <- x_u - (g_t^u + z_t^u)``,
   ``z_t^u ~ N(0, sigma^2)`` drawn by ``u``;
2. K gossip rounds (lines 6-8; K = 1 is DP-D-SGD): ``u`` sends ``x_u`` to every neighbour,
   receives ``x_v`` from every neighbour ``v`` and averages, ``x_u <- sum_v W[u, v] x_v``.

The gradients are the inputs: neighbouring inputs differ in the target's gradients
``g_t^target`` at the steps of a participation pattern (scalar gradients ``c_t`` in
{-1, +1}; every other node's gradients are the same in both and do not move the attacker's
records, so they are 0 here).  Neighbours are the graph's edges, read from W's nonzero
pattern in either direction (Definition 2: ``W[u, v] > 0`` only for neighbours).

What the attacker set records (:data:`TRUST`):

``pndp`` (App. A.2)  every message an attacker receives from a neighbour (``x_v`` of each
    ``v != a`` adjacent to an attacker ``a``, each gossip round), and the noise
    ``z_t^a`` each attacker draws.  Its own gradients are its own (the same under both
    inputs) and its own messages are computed from these records, so they add nothing.
``pndp-eq12`` (eq. 12, ``B_a = P_a W_T``)  the received messages only: the neighbours'
    and, when ``W[a, a] > 0``, its own message as one of the terms it averages; the
    attacker does not use its own noise.

The protocol is linear: a run with gradients is a noise-only run plus a run with the
gradients only, computed by the same code (:func:`simulate`, :func:`gradient_responses`).
Only the messages that can reach the records are computed (:mod:`sparsedp.audit.cone`), with
the same records as a run on the whole graph.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from sparsedp import validation
from sparsedp.audit.cone import LightCone, light_cone
from sparsedp.errors import ParameterError

__all__ = ["TRUST", "Attackers", "attackers_cone", "attackers_view", "gradient_responses",
           "noise_responses", "simulate"]

TRUST = ("pndp", "pndp-eq12")


@dataclass(frozen=True)
class Attackers:
    """The attacker set, the nodes whose messages it receives (``senders``) and whether it
    records its own noise."""

    trust: str
    attackers: np.ndarray
    senders: np.ndarray
    own_noise: bool

    def features(self, T: int, K: int) -> int:
        """Recorded numbers per run: each round the senders' messages, each step the noise
        of every attacker (``pndp``)."""
        return T * (K * self.senders.size + (self.attackers.size if self.own_noise else 0))


def attackers_view(W: sp.csr_matrix, attackers, trust: str, target: int) -> Attackers:
    """The :class:`Attackers` of ``trust`` (module docstring)."""
    if trust not in TRUST:
        raise ParameterError(f"unknown trust model {trust!r}; the SGD audit simulates: "
                             f"{', '.join(TRUST)}")
    n = W.shape[0]
    given = np.atleast_1d(np.asarray(attackers, dtype=object)).ravel()
    if given.size == 0:
        raise ParameterError("the attacker set is empty")
    chosen = np.unique(validation.node_set(given, n, "attacker"))
    validation.not_among(target, chosen, "target", "attackers")
    edges = (abs(W) + abs(W).T).tocsr()
    senders = []
    for a in chosen.tolist():
        neighbours = edges[a].indices
        senders.append(neighbours[neighbours != a])
        if trust == "pndp-eq12" and W[a, a] != 0:
            senders.append(np.array([a]))
    received = np.unique(np.concatenate(senders)).astype(np.int64)
    return Attackers(trust, chosen, received, trust == "pndp")


def attackers_cone(W: sp.csr_matrix, T: int, K: int, view: Attackers) -> LightCone:
    """The :class:`~sparsedp.audit.cone.LightCone` of ``view``'s records over ``T`` steps of
    ``K`` gossip rounds: each round records the senders' messages before the product, and
    each step's first round the attackers' noise (``pndp``)."""
    empty = np.empty(0, dtype=np.int64)
    noise = view.attackers if view.own_noise else empty
    return light_cone([W] * (T * K), [view.senders] * (T * K), [empty] * (T * K),
                      [noise if r % K == 0 else empty for r in range(T * K)])


def _run(cone: LightCone, T: int, K: int, view: Attackers, draw, target: int,
         gradients: np.ndarray | None, runs: int) -> np.ndarray:
    """Records ``(features, runs)`` of ``runs`` runs: per step, the K rounds' received
    messages, then the attackers' noise.  ``draw(t, nodes)``: the step's noise on ``nodes``
    (``(len(nodes), runs)``; None: no noise); ``gradients``: ``(T, runs)``, the target's
    gradient per step and run (None: none).  Round ``r = t K + k`` runs on
    ``cone.nodes[r]`` (:mod:`sparsedp.audit.cone`)."""
    per_step = view.features(1, K)
    out = np.zeros((T * per_step, runs))
    x = np.zeros((cone.nodes[0].size, runs))
    for t in range(T):
        first = t * K
        nodes = cone.nodes[first]
        update = np.zeros((nodes.size, runs))
        if gradients is not None:
            at = np.searchsorted(nodes, target)
            if at < nodes.size and nodes[at] == target:  # else it reaches no record
                update[at] = gradients[t]
        if draw is not None:
            noise = draw(t, nodes)
            update += noise
            if view.own_noise:
                start = t * per_step + K * view.senders.size
                out[start:start + view.attackers.size] = noise[cone.drawn[first]]
        x = x - update  # line 5: x_u <- x_u - eta (g_t^u + z_t^u), eta = 1
        for k in range(K):
            row = t * per_step + k * view.senders.size
            out[row:row + view.senders.size] = x[cone.before[first + k]]  # lines 6-7
            _, x = cone.advance(first + k, x)  # line 8: x_u <- sum_v W[u, v] x_v
    return out


def simulate(W: sp.csr_matrix, T: int, K: int, view: Attackers, sigma: float, runs: int,
             rng: np.random.Generator, cone: LightCone | None = None) -> np.ndarray:
    """Records ``(features, runs)`` of ``runs`` independent runs with noise only (noise drawn
    in single precision, the protocol run in double; ``cone``: ``attackers_cone(W, T, K,
    view)``, computed when not given)."""
    sigma32 = np.float32(sigma)
    if cone is None:
        cone = attackers_cone(W, T, K, view)
    return _run(cone, T, K, view,
                lambda t, nodes: sigma32 * rng.standard_normal((nodes.size, runs),
                                                               dtype=np.float32),
                0, None, runs)


def gradient_responses(W: sp.csr_matrix, T: int, K: int, view: Attackers, target: int,
                       cone: LightCone | None = None) -> np.ndarray:
    """``(features, T)``: column ``t`` holds the records of a noiseless run in which only the
    target has a gradient, 1 at step ``t``; the mean shift of gradients ``c`` is
    ``responses @ c``.  ``cone`` as in :func:`simulate`."""
    if cone is None:
        cone = attackers_cone(W, T, K, view)
    return _run(cone, T, K, view, None, target, np.eye(T), T)


def noise_responses(W: sp.csr_matrix, T: int, K: int, view: Attackers) -> np.ndarray:
    """``(features, n T)``: column ``t n + u`` holds the records of a run without gradients in
    which only node ``u`` draws noise, 1 at step ``t``.  The records' covariance is
    ``sigma^2 J J^T`` exactly (linearity), a check of the sampled estimate without sampling
    (small ``n T`` only: one column per noise variable)."""
    n = W.shape[0]
    unit = np.eye(n * T)
    return _run(attackers_cone(W, T, K, view), T, K, view,
                lambda t, nodes: unit[t * n + nodes], 0, None, n * T)
