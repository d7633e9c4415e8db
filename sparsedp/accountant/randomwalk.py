"""An online accountant for random-walk decentralized learning (issue 34): the loss of one
source towards its receivers (or a coalition), stepped one walk step per round.

The one-shot reference is :func:`sparsedp.random_walk_rdp` with ``method="series"``: the
exact finite-T series ``s_v = sum_(t=1)^T (W^t)_(u v) / t`` times ``alpha / sigma^2``, then
the contributions ``N_u``, the sender-known variant, the coalition and the local-DP clip
(:func:`sparsedp.randomwalk.accounting.series_loss`).  Round T + 1 is one sparse product
``x_(T+1) = W x_T`` and ``s += x_(T+1) / (T + 1)``, the same operations in the same order
as :func:`sparsedp.randomwalk.accounting.walk_series`, so the accountant's loss at every T
is the one-shot query's bit for bit.  The series is exact (no truncation, no tail): the
loss is the certified upper bound of the theorem itself (``kind="upper"`` with a cap on the
contributions, ``"estimate"`` with the expected ``T / n``).

What each answer costs (n nodes, nnz(W) non-zeros, R receivers):

=========================  =================================================================
``step(k)``                k sparse products (and two vector operations each)
``loss``, ``rdp``          ``O(n)`` (``O(nnz(W))`` with ``sender_known``), cached until the
                           next step
``epsilon``                the loss and one RDP -> (epsilon, delta) conversion per receiver
``rounds_within``          one step and one conversion per step examined: ahead of the recorded
                           steps (not recording them), or from the start again when the budget
                           is already exceeded
=========================  =================================================================
"""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from sparsedp import defaults, validation
from sparsedp.accountant.state import matrix_from_state, matrix_state
from sparsedp.errors import ParameterError
from sparsedp.randomwalk.accounting import (
    check_options,
    require_noise_condition,
    series_loss,
)
from sparsedp.randomwalk.log_green import check_random_walk_matrix
from sparsedp.randomwalk.pairwise import PairwiseLoss, renyi_order
from sparsedp.reprs import short_repr

ROUNDS_WITHIN_LIMIT = 4096  # default horizon of rounds_within


class RandomWalkAccountant:
    """Random-walk privacy of one source, tracked walk step by walk step.

    Parameters
    ----------
    W : square sparse matrix or array
        Symmetric, doubly stochastic transition matrix of the walk.
    source : int
        The node u whose data is protected (a row of W).
    sigma : float
        Noise standard deviation, with ``sigma^2 >= 2 alpha (alpha - 1)``.
    alpha : float
        Renyi order (> 1) of :attr:`loss` (:meth:`rdp` converts to any other order).
    contributions : float, optional
        Cap ``N_u >= 1`` on u's contributions (default: the expectation ``T / n``, an
        estimate).
    receivers : sequence of int, optional
        Receivers (default: every other node).
    coalition : sequence of int, optional
        A set of colluding receivers: one loss for the set.
    sender_known : bool, default False
        The variant of Section B.1.
    clip : bool, default True
        Also apply the local-DP bound per contribution.

    Raises
    ------
    GossipMatrixError
        If W is not symmetric, doubly stochastic and nonnegative.
    GraphError
        If a node is not a row of W.
    ParameterError
        As :func:`sparsedp.random_walk_rdp`: ``sigma^2 < 2 alpha (alpha - 1)``, invalid
        ``alpha`` or ``contributions``, the source among the receivers or the coalition, a
        coalition with ``receivers`` or ``sender_known``.

    Examples
    --------
    >>> import networkx as nx, sparsedp
    >>> W = sparsedp.gossip_matrix(nx.cycle_graph(8))
    >>> acc = sparsedp.RandomWalkAccountant(W, 0, sigma=3.0, alpha=2.0, contributions=20,
    ...                                     receivers=[4])
    >>> acc.step(40)
    >>> one_shot = sparsedp.random_walk_rdp(W, 0, 40, sigma=3.0, alpha=2.0,
    ...                                     contributions=20, receivers=[4], method="series")
    >>> bool(acc.loss.rdp[0] == one_shot.rdp[0]), acc.loss.kind
    (True, 'upper')
    >>> round(acc.epsilon(1e-5), 4)
    7.28
    >>> acc.rounds_within(7.0, 1e-5)
    27
    """

    __repr__ = short_repr

    def __init__(self, W: Any, source: int, *, sigma: float, alpha: float = defaults.ALPHA,
                 contributions: float | None = None, receivers: Any = None,
                 coalition: Any = None, sender_known: bool = False, clip: bool = True):
        self.W = check_random_walk_matrix(W)
        n = self.W.shape[0]
        self.source = validation.node_index(source, n, "source")
        self.sigma = validation.sigma(sigma)
        self.alpha = renyi_order(alpha)
        require_noise_condition(self.sigma, self.alpha)
        check_options(contributions, receivers, coalition, sender_known, 1, n)
        self.options = {"contributions": contributions, "receivers": receivers,
                        "coalition": coalition, "sender_known": bool(sender_known),
                        "clip": bool(clip)}
        self._walk_state = self._start()  # x_T = W^T e_u, the series, T
        self.loss_at(1)  # checks the nodes of the options (on a zero series)
        self._loss: PairwiseLoss | None = None

    def _start(self) -> tuple[np.ndarray, np.ndarray, int]:
        """The walk before its first step: ``x_0 = e_u``, a zero series, T = 0."""
        x = np.zeros(self.W.shape[0])
        x[self.source] = 1.0
        return x, np.zeros_like(x), 0

    @property
    def rounds(self) -> int:
        """The number of walk steps recorded."""
        return self._walk_state[2]

    # -- recording rounds ------------------------------------------------------------------

    def step(self, k: int = 1) -> None:
        """Record ``k`` more walk steps (``k >= 1``): ``k`` sparse products."""
        k = validation.rounds(k)
        for _ in range(k):
            self._walk_state = _walk(self.W, *self._walk_state)
        self._loss = None

    def loss_at(self, T: int, series: np.ndarray | None = None) -> PairwiseLoss:
        """The loss after ``T`` steps from the series ``sum_(t <= T) (W^t)_(u .) / t``
        (:func:`sparsedp.randomwalk.accounting.series_loss`; zero when not given)."""
        series = np.zeros(self.W.shape[0]) if series is None else series
        scale = self.alpha / (self.sigma * self.sigma)
        return series_loss(self.W, self.source, T, self.sigma, self.alpha, scale * series,
                           0.0, f"exact series over t = 1..{T}", **self.options)

    # -- answers ---------------------------------------------------------------------------

    @property
    def loss(self) -> PairwiseLoss:
        """The loss at the recorded T, equal to :func:`sparsedp.random_walk_rdp`'s
        (``method="series"``) with the same options."""
        x, series, T = self._walk_state
        if T == 0:
            raise ParameterError("no walk steps recorded yet: call step() first")
        if self._loss is None:
            self._loss = self.loss_at(T, series)
        return self._loss

    def rdp(self, alpha: float) -> float:
        """The largest receiver's Renyi DP of order ``alpha`` at the recorded T
        (:meth:`sparsedp.randomwalk.pairwise.PairwiseLoss.rdp_at`)."""
        return float(self.loss.rdp_at(alpha).max())

    def epsilon(self, delta: float) -> float:
        """The largest receiver's epsilon at ``delta`` at the recorded T (RDP converted by
        :func:`sparsedp.privacy.rdp_to_dp`, minimised over the default orders)."""
        return float(self.loss.epsilon(delta).max())

    def rounds_within(self, epsilon: float, delta: float, *,
                      limit: int = ROUNDS_WITHIN_LIMIT) -> int:
        """The largest number of walk steps T (at most ``limit``) whose loss keeps every
        receiver's epsilon at ``delta`` within ``epsilon`` (the loss is non-decreasing in T:
        the series has non-negative terms and ``N_u`` does not decrease); steps beyond those
        recorded are walked ahead without recording them."""
        epsilon = validation.nonnegative("epsilon", epsilon)
        delta = validation.probability_delta(delta)
        limit = validation.rounds(limit)

        def within(T: int, series: np.ndarray) -> bool:
            return float(self.loss_at(T, series).epsilon(delta).max()) <= epsilon

        state = self._walk_state
        if state[2] > limit or (state[2] and not within(state[2], state[1])):
            state = self._start()  # over budget within the recorded steps: walk again
        while state[2] < limit:
            state = _walk(self.W, *state)
            if not within(state[2], state[1]):
                return state[2] - 1
        return limit

    # -- checkpoints -----------------------------------------------------------------------

    def state_dict(self) -> dict:
        """Everything needed to continue, as numpy arrays, numbers and strings (no pickle)."""
        x, total, T = self._walk_state
        state = {"family": "random-walk", **matrix_state(self.W),
                 "source": self.source, "sigma": self.sigma, "alpha": self.alpha,
                 "sender_known": self.options["sender_known"], "clip": self.options["clip"],
                 "walk_x": x, "walk_series": total, "rounds": T}
        for name in ("contributions", "receivers", "coalition"):
            value = self.options[name]
            state[f"{name}_given"] = value is not None
            state[name] = np.zeros(0) if value is None else np.asarray(value)
        return state

    @classmethod
    def from_state(cls, state: dict) -> RandomWalkAccountant:
        """The accountant of :meth:`state_dict`: it continues with identical answers."""
        W = matrix_from_state(state)
        options = {name: (np.asarray(state[name]).tolist() if bool(state[f"{name}_given"])
                          else None) for name in ("contributions", "receivers", "coalition")}
        accountant = cls(W, int(state["source"]), sigma=float(state["sigma"]),
                         alpha=float(state["alpha"]), sender_known=bool(state["sender_known"]),
                         clip=bool(state["clip"]), **options)
        T = int(state["rounds"])
        accountant._walk_state = (np.array(state["walk_x"], dtype=np.float64),
                                  np.array(state["walk_series"], dtype=np.float64), T)
        return accountant


def _walk(W: sp.csr_matrix, x: np.ndarray, total: np.ndarray,
          T: int) -> tuple[np.ndarray, np.ndarray, int]:
    """One more step of the series, as :func:`sparsedp.randomwalk.accounting.walk_series`:
    ``x <- W x``, ``total <- total + x / (T + 1)``."""
    x = W @ x
    return x, total + x / (T + 1), T + 1
