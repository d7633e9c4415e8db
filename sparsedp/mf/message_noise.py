"""Zip-DL (Biswas et al. 2025; Bellet et al. App. A.6): message-wise noise, one independent
Gaussian per message, i.e. one virtual noise source per directed edge (``2|E|`` of them,
never the paper's ``n^2`` virtual nodes).

Model (written down here because App. A.6 as printed is not consistent: ``(M~ W~)^k`` of an
``n x n^2`` matrix, an LDP ``B`` with mismatched dimensions, zero-sum noise under LDP but
independent noise under PNDP).  With ``x_t = theta_t + g_t`` (gradients clipped, step size
and sign absorbed) node i sends to every j with ``W[j, i] > 0``, ``j != i``, the message

    m_(i->j, t) = x_(i, t) + zeta_(i->j, t),          zeta i.i.d. N(0, sigma^2),

and j updates ``theta_(j, t+1) = W[j, j] x_(j, t) + sum_(i != j) W[j, i] m_(i->j, t)`` (its own
copy is not a message and carries no noise; ``own_copy_noise=True`` adds an independent
``zeta_(j->j, t)`` to it, the reading of App. A.6 where the self slot ``n j + j`` is a virtual
node too: one more unobserved source per node with ``W[j, j] > 0``, known to j itself).
Hence ``theta_(t+1) = W x_t + P zeta_t`` with ``P[q, f] = W[q, p]`` for the source
``f = (p -> q)``, and, with ``R_s = W^s``,

    m_(e, t) = sum_(k <= t) (R_(t-k) g_k)_i + zeta_(e, t) + sum_(k < t) (R_(t-1-k) P zeta_k)_i

for ``e = (i -> j)``: ``A`` has block ``(t, k) = S R_(t-k)`` (S selects the senders of the
observed edges) and ``B`` block ``(t, k) = S R_(t-1-k) P`` for ``k < t`` and the identity on
the observed edges for ``k = t``.  The zero-sum correlation of the original Zip-DL is not
offered: under LDP it is infinitely sensitive (the sum of a node's messages reveals
``x_i``), and App. A.6's PNDP part assumes independent noise.

Trust models (the attackers a colluding set; the target never an attacker):

``"ldp"``        every message observed, no noise known.
``"pndp"``       the messages the attackers receive from non-attackers; the attackers' own
                 gradients (Lemma 11) and the noise of every message they send known.
                 Messages sent by an attacker are left out: with its own noise known each is
                 a function of what the coalition already knows (its model is a function of
                 the messages it received and of its own gradients).
``"pndp-eq12"``  the messages the attackers receive from any other node, no noise known.
``"pndp-eq12-no-own"``  the messages the attackers receive from non-attackers, no noise known.
``"secldp"``     every message sent by a non-attacker observed; the attackers' own gradients
                 and their messages' noise known (their messages are then functions, as above).

Every observed message carries its own unknown noise ``zeta_(e, t)``, which no earlier
observation contains, so ``B`` has full row rank (block unit lower-triangular on those
columns): the range condition always holds, ``A = B C`` with ``C = B^+ A`` (Theorem 5), and
``K = B B^T`` is positive definite:

    K = I + F F^T + X + X^T,
    F[(t, e), (k, q)] = [k < t] R_(t-1-k)[i, q] sqrt(d_q),   d_q = sum_(unknown f -> q) W[q, p_f]^2,
    X[(t', e'), (t, e)] = [t < t'] R_(t'-1-t)[i', j] W[j, i],

and ``A_u[(t, e), k] = [k <= t] R_(t-k)[i, u]``.  Every entry is a sum of non-negative
products, so ``|fl(K) - K| <= gamma_k K`` entrywise; ``lambda_min`` is certified numerically
and ``M = A_u^T K^{-1} A_u`` gets a certified sandwich (``_certified_dense_sandwich``).
Assembled densely on ``m T`` observed rows (at most ``OPERATOR_ASSEMBLY_MAX_DIM``).

Zip-DL can reveal more than local DP: under LDP the target's ``x_u`` is seen through ``s_u``
messages with independent noise, so ``M`` is not bounded by ``I`` (no ``|pi|`` bound).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from sparsedp.errors import ParameterError
from sparsedp.gossip.certified_solve import OPERATOR_ASSEMBLY_MAX_DIM, _certified_dense_sandwich
from sparsedp.gossip.target_block import TargetBlock
from sparsedp.linalg.certified import gamma

DENSE_ENTRIES_MAX = 60_000_000  # entries of F (m T x n T) assembled densely


def directed_edges(W: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray]:
    """``(senders, receivers)`` of every message: ``i -> j`` for ``W[j, i] != 0``, ``i != j``
    (receiver-major order)."""
    coo = sp.coo_matrix(W)
    off = coo.row != coo.col
    receivers, senders = coo.row[off], coo.col[off]
    order = np.lexsort((senders, receivers))
    return senders[order].astype(np.int64), receivers[order].astype(np.int64)


def observed_edges(trust: str, W: sp.csr_matrix, attackers: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Bool masks over :func:`directed_edges`: ``(observed, known_noise)`` (module docstring)."""
    senders, receivers = directed_edges(W)
    from_attacker = np.isin(senders, attackers)
    to_attacker = np.isin(receivers, attackers)
    if trust == "ldp":
        return np.ones(senders.size, dtype=bool), np.zeros(senders.size, dtype=bool)
    if trust == "pndp":
        return to_attacker & ~from_attacker, from_attacker
    if trust == "pndp-eq12":
        return to_attacker, np.zeros(senders.size, dtype=bool)
    if trust == "pndp-eq12-no-own":
        return to_attacker & ~from_attacker, np.zeros(senders.size, dtype=bool)
    if trust == "secldp":
        return ~from_attacker, from_attacker
    raise ParameterError(f"Zip-DL has no trust model {trust!r}")


def zip_dl_block(W: sp.csr_matrix, target: int, trust: str, attackers: np.ndarray,
                 T: int, own_copy_noise: bool = False) -> TargetBlock:
    """The certified sandwich of ``M`` for Zip-DL (module docstring)."""
    n = W.shape[0]
    W = sp.csr_matrix(W, dtype=np.float64)
    senders, receivers = directed_edges(W)
    observed, known = observed_edges(trust, W, attackers)
    obs = np.flatnonzero(observed)
    m = obs.size
    if m == 0:
        return TargetBlock(T=T, closed_form="zero", notes=("the attackers observe no message",))
    if m * T > OPERATOR_ASSEMBLY_MAX_DIM or m * T * n * T > DENSE_ENTRIES_MAX:
        raise ParameterError(
            f"Zip-DL under {trust!r} assembles B B^T densely: {m} observed messages x {T} steps "
            f"= {m * T} rows exceeds {OPERATOR_ASSEMBLY_MAX_DIM} (or F is too large)")
    rows_i, rows_j = senders[obs], receivers[obs]
    # R[s] = rows rows_i of W^s, s = 0..T-1  (m x n each)
    R = np.zeros((T, m, n))
    R[0, np.arange(m), rows_i] = 1.0
    WT = W.T.tocsr()
    for s in range(1, T):
        R[s] = (WT @ R[s - 1].T).T
    unknown = ~known
    weights = np.asarray(W[receivers[unknown], senders[unknown]]).ravel()
    d = np.bincount(receivers[unknown], weights=weights * weights, minlength=n)
    self_sources = 0
    if own_copy_noise:  # the own copies' noise: unknown except an attacker's own (pndp, secldp)
        own = W.diagonal().copy()
        if trust in ("pndp", "secldp"):
            own[attackers] = 0.0
        d += own * own
        self_sources = int(np.count_nonzero(own))
    F = np.zeros((T, m, T, n))
    for t in range(1, T):
        for k in range(t):
            F[t, :, k, :] = R[t - 1 - k]
    F = (F * np.sqrt(d)[None, None, None, :]).reshape(T * m, T * n)
    Kmat = F @ F.T
    w_obs = np.asarray(W[rows_j, rows_i]).ravel()  # W[j, i] of each observed edge
    X = np.zeros((T, m, T, m))
    for t in range(T):
        for t2 in range(t + 1, T):
            X[t2, :, t, :] = R[t2 - 1 - t][:, rows_j] * w_obs[None, :]
    X = X.reshape(T * m, T * m)
    Kmat += X + X.T + np.eye(T * m)
    Kmat = 0.5 * (Kmat + Kmat.T)
    G = np.zeros((T, m, T))
    for t in range(T):
        for k in range(t + 1):
            G[t, :, k] = R[t - k][:, target]
    G = G.reshape(T * m, T)
    depth = int(np.diff(W.indptr).max())
    k_terms = 2 * (T + 1) * (depth + 2) + T * n + 16  # R (T (d + 1)), sqrt(d_q), F F^T (n T)
    dK = gamma(k_terms) * float(np.abs(Kmat).sum(axis=1).max())
    G_error = gamma(T * (depth + 2) + 2) * G
    sandwich, lam = _certified_dense_sandwich(Kmat, G, dK, G_error)
    info = {"observed_messages": int(m), "noise_sources": int(unknown.sum()),
            "own_copy_sources": self_sources, "lambda_min_lower_bound": lam}
    return TargetBlock(T=T, closed_form=None, sandwich=sandwich, upper_certified=lam > 0,
                       method="dense message-noise assembly", solver=info,
                       notes=(f"Zip-DL: {int(unknown.sum())} unknown message-noise sources "
                              f"(one per directed edge), {m} observed messages per step",))
