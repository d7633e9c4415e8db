"""MAFALDA-L-SGD: one noise correlation per node (Bellet et al., Sec. 6; MFDL's
``MF_OPTIMAL_DL_variednode``, "MAFALDA-L-SGD").

With node i applying its own ``C_i^+``, the noise enters the workload through the columns
``A_i`` of node i alone, so Lemma 10's utility splits over the nodes,

    ||L C^+||_F^2 = sum_i tr(H_i X_i^{-1}),    H_i = A_i^T A_i,   X_i = C_i^T C_i,

with ``sum_i H_i = H`` (:mod:`sparsedp.mf.utility`).  Under local DP node i's sensitivity
depends on ``C_i`` only, so with every node's sensitivity fixed to 1 the problem separates:
each ``C_i`` is MAFALDA's optimum for ``H_i`` (:func:`sparsedp.mf.optimise.optimise_correlation`).
When every ``H_i`` is the same (a vertex-transitive graph with symmetric weights: ``H_i =
H / n``) every ``C_i`` is MAFALDA's C, since the objective does not depend on H's scale.

``H_i`` exactly: ``H_i[s, s - d] = sum_(a) t_i(a, a + d)`` with ``t_i(a, b) = <W^a e_i,
W^b e_i>`` (the per-node terms of :func:`sparsedp.mf.utility.gram_from_traces`; powers from 1
for the post-average workload, from 0 for the message workload), from Krylov blocks of basis
vectors (``T^2 n^2`` work).  The accounting of the result (any trust model) is
``mf_d_sgd(noise)`` with the ``n x T x T`` stack of the ``C_i^{-1}``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from sparsedp import validation
from sparsedp.errors import ParameterError, ResourceLimitError
from sparsedp.hints import GossipMatrix, Progress
from sparsedp.linalg.stochastic import check_gossip_matrix
from sparsedp.linalg.threads import limit_blas_threads
from sparsedp.mf.algorithms import Algorithm, mf_d_sgd
from sparsedp.mf.optimise import Factorisation, optimise_correlation
from sparsedp.mf.participation import Participation
from sparsedp.mf.utility import EXACT_GENERAL_MAX_WORK, WORKLOADS, gram_from_traces
from sparsedp.progress import progress_bar
from sparsedp.reprs import short_repr

BLOCK = 128  # basis vectors per Krylov block
SAME_GRAM = 1e-12  # nodes whose H_i agree to this (relative, entrywise) share one optimisation


@limit_blas_threads
def node_grams(W, T: int, *, workload: str = "post-average", progress=None) -> np.ndarray:
    """Every node's utility Gram matrix ``H_i = A_i^T A_i`` (n x T x T, module docstring).

    Parameters
    ----------
    W : gossip matrix (n x n, non-negative, row-stochastic; sparse or dense).
    T : gradient steps.
    workload : ``"post-average"`` (the averaged models, Lemma 10) or ``"message"`` (the
        messages).
    progress : tqdm progress bar (``None``: automatic).

    Returns
    -------
    numpy.ndarray
        ``H_i`` for every node i, shape ``(n, T, T)``; their sum is
        ``sparsedp.mf.utility.utility_gram(W, T, workload=workload).H``.

    Raises
    ------
    ParameterError
        An unknown workload, a bad T.
    GossipMatrixError
        W negative or not row-stochastic.
    ResourceLimitError
        ``T^2 n^2`` above the exact limit of :mod:`sparsedp.mf.utility`.

    Examples
    --------
    On a cycle every node has the same share of H:

    >>> import networkx as nx, sparsedp
    >>> from sparsedp.mf.local_correlations import node_grams
    >>> H = node_grams(sparsedp.gossip_matrix(nx.cycle_graph(6)), 4)
    >>> H.shape, bool(abs(H - H[0]).max() < 1e-15)
    ((6, 4, 4), True)
    """
    if workload not in WORKLOADS:
        raise ParameterError(f"workload must be one of {WORKLOADS}, got {workload!r}")
    T = validation.rounds(T)
    W = check_gossip_matrix(W, require=("nonnegative", "row_stochastic"))
    n = W.shape[0]
    if float(T) ** 2 * n * n > EXACT_GENERAL_MAX_WORK:
        raise ResourceLimitError(f"per-node H for n = {n}, T = {T}: T^2 n^2 = "
                                 f"{float(T) ** 2 * n * n:.2g} > {EXACT_GENERAL_MAX_WORK:.0g}")
    out = np.empty((n, T, T))
    bar = progress_bar(progress, total=n, desc="per-node H", unit="node")
    for start in range(0, n, BLOCK):
        width = min(BLOCK, n - start)
        E = np.zeros((n, width))
        E[start + np.arange(width), np.arange(width)] = 1.0
        V = np.empty((T, n, width))
        current = W @ E if workload == "post-average" else E
        for a in range(T):
            V[a] = current
            current = W @ current
        traces = np.einsum("akj,bkj->jab", V, V)
        for j in range(width):
            out[start + j] = gram_from_traces(traces[j])
        if bar is not None:
            bar.update(width)
    if bar is not None:
        bar.close()
    return out


@dataclass(frozen=True)
class LocalCorrelations:
    """One optimised local correlation per node (MAFALDA-L-SGD).

    Attributes
    ----------
    factorisations : tuple of Factorisation
        Node i's ``C_i`` with its recomputed local-DP sensitivity and ``tr(H_i X_i^{-1})``.
    workload : str
        ``"post-average"`` or ``"message"``.
    distinct : int
        Distinct ``H_i`` among the nodes (one optimisation each; ``H_i`` that agree to
        ``SAME_GRAM`` relative, rounding apart, count as one).

    Examples
    --------
    >>> import networkx as nx, sparsedp
    >>> from sparsedp.mf.local_correlations import optimise_local_correlations
    >>> r = optimise_local_correlations(sparsedp.gossip_matrix(nx.cycle_graph(5)), 4, (2, 2),
    ...                                 progress=False)
    >>> r.distinct, r.noise.shape, round(r.sens2, 6)
    (1, (5, 4, 4), 1.0)
    """

    factorisations: tuple
    workload: str
    distinct: int

    __repr__ = short_repr

    @property
    def noise(self) -> np.ndarray:
        """The noise as applied by every node, ``C_i^{-1}`` (n x T x T)."""
        return np.stack([f.noise for f in self.factorisations])

    @property
    def algorithm(self) -> Algorithm:
        """``mf_d_sgd(noise)``: the per-node correlation for :func:`sparsedp.mf.mf_sensitivity`."""
        return mf_d_sgd(self.noise)

    @property
    def sens2(self) -> float:
        """The largest node's certified local-DP ``sens^2``."""
        return max(f.sens2 for f in self.factorisations)

    @property
    def utility(self) -> float:
        """``sum_i tr(H_i X_i^{-1})``."""
        return float(sum(f.utility for f in self.factorisations))

    @property
    def objective(self) -> float:
        """``sens2 * utility`` (Lemma 10 with the largest node sensitivity)."""
        return self.sens2 * self.utility

    def to_dict(self) -> dict:
        return {"workload": self.workload, "distinct": self.distinct, "sens2": self.sens2,
                "utility": self.utility, "objective": self.objective,
                "nodes": [f.to_dict() for f in self.factorisations]}


@limit_blas_threads
def optimise_local_correlations(W: GossipMatrix, T: int,
                                scheme: str | tuple[int, int] | Participation, *,
                                workload: str = "post-average", progress: Progress = None,
                                **options: Any) -> LocalCorrelations:
    """MAFALDA-L-SGD: MAFALDA's optimum for every node's own ``H_i`` (module docstring).

    Parameters
    ----------
    W : gossip matrix (n x n, non-negative, row-stochastic).
    T : gradient steps.
    scheme : participation scheme whose patterns partition the T steps (as
        :func:`sparsedp.mf.optimise.optimise_correlation`).
    workload : ``"post-average"`` (MFDL's MAFALDA-L-SGD) or ``"message"``.
    progress : tqdm progress bar over the nodes (``None``: automatic).
    **options : ``max_iter``, ``tol``, ``memory`` of the optimiser.

    Returns
    -------
    LocalCorrelations
        Every node's factorisation; nodes with the same ``H_i`` (to ``SAME_GRAM`` relative)
        share one optimisation, whose ``utility`` is that of the first such node.

    Raises
    ------
    ParameterError
        An unknown workload, T not a multiple of the scheme's period.
    GossipMatrixError
        W negative or not row-stochastic.
    ResourceLimitError
        The per-node H is too large to compute exactly.

    Examples
    --------
    On a cycle every node's share of H is H / n, so every node gets MAFALDA's correlation:

    >>> import networkx as nx, numpy as np, sparsedp
    >>> from sparsedp.mf.local_correlations import optimise_local_correlations
    >>> from sparsedp.mf.optimise import optimise_correlation
    >>> from sparsedp.mf.utility import utility_gram
    >>> W = sparsedp.gossip_matrix(nx.cycle_graph(6))
    >>> local = optimise_local_correlations(W, 4, (2, 2), progress=False)
    >>> shared = optimise_correlation(utility_gram(W, 4).H, (2, 2), progress=False)
    >>> bool(np.allclose(local.factorisations[3].C, shared.C, atol=1e-6))
    True
    """
    grams = node_grams(W, T, workload=workload, progress=False)
    solved: list[tuple[np.ndarray, Factorisation]] = []
    out = []
    bar = progress_bar(progress, total=grams.shape[0], desc="MAFALDA-L-SGD", unit="node")
    for H in grams:
        same = next((f for G, f in solved if np.abs(G - H).max() <= SAME_GRAM * np.abs(H).max()),
                    None)
        if same is None:
            same = optimise_correlation(H, scheme, progress=False, name="mafalda-l-sgd",
                                        **options)
            solved.append((H, same))
        out.append(same)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return LocalCorrelations(factorisations=tuple(out), workload=workload, distinct=len(solved))
