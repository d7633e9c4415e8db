"""Gossip averaging run literally, message by message, recording what an attacker sees.

Written from the protocol of Koskela & Kulkarni (v2, eq. 3.1 and Remark 11; v1 eq. 3.2),
not from the engine's matrices: in round ``t = 0..T-1`` every node ``k``

1. adds its data and fresh noise to its state: the message ``s_k = theta_k + x_t^k + u_t^k``,
   ``u_t^k ~ N(0, sigma^2)``;
2. sends ``W_t[i, k] s_k`` to every node ``i`` with ``W_t[i, k] != 0`` (itself included);
3. and every node ``i`` sums what it received: ``theta_i <- sum_k W_t[i, k] s_k``
   (``theta = 0`` before round 0).

What the attacker records in each round, by threat model (:data:`THREATS`):

``secure-summation``  each observer's own message ``s_a`` (its secure-summation output plus
    its data and noise: v2 Remark 11, ``S = e_a^T``);
``secure-summation-v1``  each observer's state after the round, ``theta_a`` (v1 eq. 3.2);
``neighbourhood``  every message an observer receives in the clear: ``s_k`` for ``k`` in the
    closed neighbourhood of the observers (v2 Remark 11, no secure summation);
``adaptive-v1``  ``theta_k`` after the round for ``k`` in the target's closed neighbourhood;
``target-v1``  the target's own messages ``s_j``;
``local-dp``  every message.

With ``noise_removed`` the attacker also records the noise it drew itself (``u_t^a`` of the
observers; of the whole observed set for the views without observers): its test may use it.
Neighbourhoods come from the nonzero pattern of the ``W_t`` (either direction, any round).

The protocol is linear, so a run with data is the sum of a run with noise only and a run with
data only (superposition of the same message-passing code); :func:`simulate` returns the
noise-only features of many trials and :func:`data_responses` the data-only ones (one run
per round in which the target holds data).

Only the messages that can reach the attacker's records are computed: round ``t`` runs on
the nodes within ``T - 1 - t`` hops of the recorded ones (:mod:`sparsedp.audit.cone`), with
the same records as a run on the whole graph.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from sparsedp.audit.cone import LightCone, light_cone
from sparsedp.errors import ParameterError

__all__ = ["THREATS", "Threat", "data_responses", "simulate", "threat", "threat_cone"]

THREATS = ("secure-summation", "secure-summation-v1", "neighbourhood", "adaptive-v1",
           "target-v1", "local-dp")
_AFTER_ROUND = ("secure-summation-v1", "adaptive-v1")  # theta after the round, not s
_FIXED = ("adaptive-v1", "target-v1", "local-dp")  # views that name their own observed set


@dataclass(frozen=True)
class Threat:
    """What the attacker records: ``recorded`` nodes (their messages, or their states after
    the round when ``after_round``) and the nodes whose own noise it knows (``known_noise``);
    ``observers``: the given observers, or the ones the view fixes."""

    view: str
    observers: np.ndarray
    recorded: np.ndarray
    after_round: bool
    known_noise: np.ndarray

    @property
    def noise_removed(self) -> bool:
        """Whether the attacker knows its own noise."""
        return bool(self.known_noise.size)

    @property
    def features(self) -> int:
        """Recorded numbers per round."""
        return self.recorded.size + self.known_noise.size


def _closed_neighbourhood(Ws: list[sp.csr_matrix], nodes: np.ndarray) -> np.ndarray:
    """``nodes`` and every node that exchanges a message with one of them in some round."""
    pattern = sum((abs(w) + abs(w).T for w in Ws), sp.csr_matrix(Ws[0].shape))
    return np.union1d(nodes, pattern[nodes].indices).astype(np.int64)


def threat(Ws: list[sp.csr_matrix], view: str, target: int, observers, noise_removed: bool
           ) -> Threat:
    """The attacker's records for ``view`` (module docstring); ``observers`` is ignored by
    the views that fix their own observed set and required by the others."""
    n = Ws[0].shape[0]
    if view not in THREATS:
        raise ParameterError(f"unknown view {view!r}; the audit simulates: {', '.join(THREATS)}")
    if view in _FIXED:
        observers = np.arange(n) if view == "local-dp" else np.array([target])
    else:
        observers = np.unique(np.atleast_1d(np.asarray(observers, dtype=np.int64)))
        if observers.size == 0:
            raise ParameterError(f"view {view!r} needs at least one observer")
    if view in ("neighbourhood", "adaptive-v1"):
        recorded = _closed_neighbourhood(Ws, observers)
    else:
        recorded = observers
    known = np.empty(0, dtype=np.int64)
    if noise_removed:
        known = recorded if view in _FIXED else observers
    return Threat(view, observers.astype(np.int64), recorded, view in _AFTER_ROUND, known)


def threat_cone(Ws: list[sp.csr_matrix], T: int, threat_: Threat) -> LightCone:
    """The :class:`~sparsedp.audit.cone.LightCone` of ``threat_``'s records over ``T``
    rounds of ``Ws``: each round records messages before the product or states after it,
    and the known noise."""
    rec, empty = threat_.recorded, np.empty(0, dtype=np.int64)
    return light_cone([Ws[t if len(Ws) > 1 else 0] for t in range(T)],
                      [empty if threat_.after_round else rec] * T,
                      [rec if threat_.after_round else empty] * T,
                      [threat_.known_noise] * T)


def _run(cone: LightCone, T: int, threat_: Threat, draw, data: np.ndarray | None,
         trials: int) -> np.ndarray:
    """Features ``(T * features, trials)`` of one batch: the recorded values of round 0, then
    round 1, ...; per round the recorded nodes, then the known noise.  ``draw(t, nodes)``
    gives the round's noise on ``nodes`` (``(len(nodes), trials)``; or ``draw`` is None: no
    noise); ``data``: ``(T, n, trials)``."""
    rec_size = threat_.recorded.size
    per_round = threat_.features
    out = np.zeros((T * per_round, trials))
    theta = np.zeros((cone.nodes[0].size, trials))
    for t in range(T):
        nodes = cone.nodes[t]
        message = theta
        if data is not None:
            message = message + data[t][nodes]
        if draw is not None:
            noise = draw(t, nodes)
            message = message + noise
            out[t * per_round + rec_size:(t + 1) * per_round] = noise[cone.drawn[t]]
            del noise
        theta = None  # freed before the product: a round holds message, product and copy
        # node i receives W[i, k] s_k from each k and sums them
        after, theta = cone.advance(t, message)
        recorded = (after[cone.after[t]] if threat_.after_round
                    else message[cone.before[t]])
        out[t * per_round:t * per_round + rec_size] = recorded
    return out


def simulate(Ws: list[sp.csr_matrix], T: int, threat_: Threat, sigma: float, trials: int,
             rng: np.random.Generator, cone: LightCone | None = None) -> np.ndarray:
    """Features ``(T * features, trials)`` of ``trials`` independent noise-only runs
    (``cone``: ``threat_cone(Ws, T, threat_)``, computed when not given).

    The noise is drawn in single precision (twice as fast; a normal variate to 2^-24
    relative, far below the statistical resolution of any audit) and the protocol run in
    double precision."""
    sigma32 = np.float32(sigma)
    if cone is None:
        cone = threat_cone(Ws, T, threat_)
    return _run(cone, T, threat_,
                lambda t, nodes: sigma32 * rng.standard_normal((nodes.size, trials),
                                                               dtype=np.float32),
                None, trials)


def data_responses(Ws: list[sp.csr_matrix], T: int, threat_: Threat, target: int,
                   cone: LightCone | None = None) -> np.ndarray:
    """``(T * features, T)``: column ``t`` holds the features of a run without noise in which
    only ``target`` holds data, 1 in round ``t``; the mean shift of contributions ``c`` is
    ``data_responses(...) @ c`` (linearity).  ``cone`` as in :func:`simulate`."""
    n = Ws[0].shape[0]
    data = np.zeros((T, n, T))
    data[np.arange(T), target, np.arange(T)] = 1.0
    if cone is None:
        cone = threat_cone(Ws, T, threat_)
    return _run(cone, T, threat_, None, data, T)
