"""Cyffers et al. (2022)'s PNDP bound for Muffliato-SGD with one gossip round per gradient step
(DP-D-SGD), the dashed lines of Bellet et al.'s Fig. 2, with the conventions of the code
that drew them (MFDL, ``simulations/muffliato_accounting.py``, ``epsilon_upper_bound``).

With T gradient steps, each followed by one gossip round with W, noise multiplier sigma,
clipping ``Delta`` and a fixed W, the RDP loss of source u towards receiver v at order alpha
is taken as

    eps_T(u -> v) = (alpha Delta^2 / (2 sigma^2)) min(T, S),
    S = sum_{s=0}^{T-1} (T - s) sum_{w in N(v)} (W^s)_(u w) / ||W^s e_w||^2,

``N(v)`` the open neighbourhood of v (W's pattern, either direction, v excluded) and
``||W^s e_w||`` the norm of column w of ``W^s``.  This is MFDL's change of variable
(``s = j - t``) of the double sum ``sum_{t=1}^T sum_{j=t}^T`` of Thm 11 of the arXiv version
of Muffliato (2206.05091), which MFDL's docstring calls the corrected formula, different
from the NeurIPS version; the numerator is ``(W^s)_(u w)``, **not squared** (the averaging
bound, :func:`sparsedp.randomwalk.muffliato_rdp`, squares it), and the clip at T (local DP,
by composition) is MFDL's.  Neither paper is in ``../shared/papers``: the formula is
reproduced from MFDL, not re-derived, and the indices (``(W^s)_(u w)`` with column norms) are
MFDL's literally; with a symmetric W they are the row convention.

**Kind: estimate.**  It is a published bound that composes the messages one by one as if
their noises were independent; the messages of DP-D-SGD all carry the same accumulated
noise, and the averaging counterpart of this composition is below the joint Renyi divergence
on some instances (``docs/mf.md``).  It is not certified here; the certified accounting of
the same view is :func:`sparsedp.mf.mf_sensitivity` (``trust_model="pndp"``).

Cost: ``|N(v)|`` columns propagated through ``T - 1`` sparse products with W (never an n x n
matrix).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from sparsedp import validation
from sparsedp.linalg.stochastic import check_gossip_matrix
from sparsedp.randomwalk.pairwise import renyi_order
from sparsedp.reprs import short_repr

NOTE = ("kind estimate: Cyffers et al. (2022)'s Muffliato-SGD bound as MFDL computes it "
        "(messages composed as if their noises were independent); not a certified bound")


@dataclass(frozen=True)
class MuffliatoSGDBound:
    """``rdp[u]``: the Muffliato-SGD estimate of the RDP loss of source u towards the receiver
    (``nan`` at the receiver itself), clipped at ``local_dp = alpha Delta^2 T / (2 sigma^2)``
    (``clipped[u]`` says where); ``kind`` is always ``"estimate"``."""

    receiver: int
    T: int
    alpha: float
    sigma: float
    rdp: np.ndarray
    local_dp: float
    clipped: np.ndarray
    kind: str = "estimate"
    note: str = NOTE

    __repr__ = short_repr


def muffliato_sgd_rdp(W, receiver: int, T: int, *, sigma: float = 1.0, alpha: float = 2.0,
                      clipping: float = 1.0) -> MuffliatoSGDBound:
    """The Muffliato-SGD estimate (module docstring) of every source towards ``receiver``.

    Parameters
    ----------
    W : gossip matrix (sparse or dense, non-negative, row-stochastic).
    receiver : the attacker v (a row of W).
    T : gradient steps (one gossip round each).
    sigma, alpha, clipping : noise multiplier, Renyi order, l2 clipping ``Delta``.

    Examples
    --------
    >>> import networkx as nx, sparsedp
    >>> W = sparsedp.gossip_matrix(nx.path_graph(4), scheme="row-normalised-self-loops")
    >>> b = muffliato_sgd_rdp(W, 0, 3)
    >>> float(b.rdp[1]), bool(b.clipped[1]), b.kind   # a neighbour: clipped at local DP
    (3.0, True, 'estimate')
    """
    W = check_gossip_matrix(W, require=("nonnegative", "row_stochastic"))
    n = W.shape[0]
    v = validation.node_index(receiver, n, "receiver")
    T = validation.rounds(T)
    sigma = validation.sigma(sigma)
    alpha = renyi_order(alpha)
    clipping = validation.real("clipping", clipping)
    pattern = (abs(W) + abs(W).T).tocsr()
    neighbours = np.setdiff1d(pattern[v].indices, [v])
    total = np.zeros(n)
    columns = np.zeros((n, neighbours.size))
    columns[neighbours, np.arange(neighbours.size)] = 1.0
    Wcsr = sp.csr_matrix(W)
    for s in range(T):
        if s:
            columns = Wcsr @ columns  # W^s e_w
        norms = np.einsum("ij,ij->j", columns, columns)
        total += (T - s) * (columns / norms).sum(axis=1)
    clipped = total > T
    scale = alpha * clipping * clipping / (2.0 * sigma * sigma)
    rdp = scale * np.minimum(total, T)
    rdp[v] = np.nan
    clipped[v] = False
    return MuffliatoSGDBound(receiver=v, T=T, alpha=alpha, sigma=sigma, rdp=rdp,
                             local_dp=scale * T, clipped=clipped)
