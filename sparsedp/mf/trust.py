"""Trust models: which messages the attacker set sees and which noise it knows.

``"ldp"`` (local DP)
    every message is public (no attacker set).
``"pndp"`` (PNDP as in App. A.2, the attacker's own noise known)
    each attacker ``a`` sees the messages of its closed neighbourhood (every node adjacent to
    it in W's pattern, either direction, and its own message, which is a function of the
    received messages and of its own gradient and noise), knows its own gradients (removed
    by Lemma 11's reduction: they are not the target's) and its own noise (the columns of that
    noise are deleted from B, which is the same Gaussian mechanism as adding the rows
    ``[0 I 0]`` of App. A.2: condition on the known noise).  A set of attackers colludes.
``"pndp-eq12"`` (eq. 12: ``B_a = P_a W_T``, the attacker's own noise not subtracted)
    each attacker sees the messages it receives, ``P_a``: the nodes ``v != a`` adjacent to
    it and its own message only when ``W[a, a] > 0`` (it is then one of its received
    messages, as with MFDL's ``1/(d+1)`` weights); no noise is known.
``"pndp-eq12-no-own"`` (eq. 12 with ``P_a`` the messages received from the others)
    each attacker sees the messages of the nodes ``v`` adjacent to it that are not attackers,
    never its own message nor another attacker's; no noise is known.  This is MFDL's
    ``build_projection_workload(..., observe_own=False)``: eq. 12 read with ``P_a`` selecting
    the messages *received from neighbours*, whatever ``W[a, a]``.  It observes a subset of
    ``"pndp-eq12"``'s rows (the same rows when no attacker has ``W[a, a] > 0`` and no two
    attackers are adjacent), so its value is at most ``"pndp-eq12"``'s, which is at most
    ``"pndp"``'s (fewer observations and less known noise can only lower ``M``).  It models
    an attacker that discards what it knows of its own message: a convention for
    reproducing MFDL's eq. 12 numbers, not a guarantee against an attacker that uses it.

``"secldp"`` (SecLDP, Allouah et al.)
    every message is public, and the attackers know their own noise and, for DECOR, the
    secrets they share (every edge incident to an attacker).  With node-local noise this is
    local DP for every other node; it differs for DECOR (:mod:`sparsedp.mf.edge_secrets`).

DECOR under ``"pndp"`` also knows the secrets of the attackers' edges (App. A.5).  Zip-DL
observes messages on directed edges, not node rows: :mod:`sparsedp.mf.message_noise` maps
each trust model to observed messages and known message noise.

When every attacker has ``W[a, a] > 0`` the two PNDP models give the same value for
algorithms with independent noise (the own message with the own gradient known reveals the
own noise); they differ when the own message is not observed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from sparsedp import validation
from sparsedp.errors import ParameterError

TRUST_MODELS = ("ldp", "pndp", "pndp-eq12", "pndp-eq12-no-own", "secldp")


@dataclass(frozen=True)
class Observation:
    """The resolved trust model: observed message rows, known noise, attackers."""

    trust: str
    attackers: np.ndarray
    observed: np.ndarray
    known_noise: np.ndarray


def resolve(trust: str, pattern: sp.csr_matrix, target: int, attackers) -> Observation:
    """The :class:`Observation` of a trust model; ``attackers``: node indices (None for LDP)."""
    if trust not in TRUST_MODELS:
        raise ParameterError(f"unknown trust model {trust!r}; choose one of {TRUST_MODELS}")
    n = pattern.shape[0]
    empty = np.zeros(0, dtype=np.int64)
    if trust == "ldp":
        if attackers is not None:
            raise ParameterError("trust model 'ldp' makes every message public: pass "
                                 "attackers=None")
        return Observation(trust, empty, np.arange(n, dtype=np.int64), empty)
    if attackers is None:
        raise ParameterError(f"trust model {trust!r} needs a non-empty attacker set")
    if np.ndim(attackers) == 1 and len(attackers) == 0:
        raise ParameterError("the attacker set is empty")
    attackers = validation.node_set(attackers, n, "attackers")
    validation.not_among(target, attackers, "target", "attackers")
    both = (pattern + pattern.T).tocsr()
    if trust == "secldp":
        return Observation(trust, attackers, np.arange(n, dtype=np.int64), attackers)
    if trust == "pndp":
        rows = np.concatenate([attackers, both[attackers].indices])
        return Observation(trust, attackers, np.unique(rows).astype(np.int64), attackers)
    received = []
    for a in attackers.tolist():
        neighbours = both[a].indices
        received.append(neighbours[neighbours != a])
        if trust == "pndp-eq12" and pattern[a, a] != 0:
            received.append(np.array([a]))
    observed = np.unique(np.concatenate(received)).astype(np.int64)
    if trust == "pndp-eq12-no-own":
        observed = np.setdiff1d(observed, attackers).astype(np.int64)
    return Observation(trust, attackers, observed, empty)
