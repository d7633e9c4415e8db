"""Linear decentralized-learning algorithms as matrix-factorisation mechanisms (Bellet et al.,
Sec. 4 and App. A), in the package's round convention.

One gradient step t (``t = 0..T-1``) is followed by K gossip rounds; with ``R = K T`` rounds
``r = 0..R-1`` the messages are

    s_r = W s_(r-1) + [r = t K] (g_t + (L z)_t),        s_(-1) = 0,

``g_t`` the (clipped, negated, step-size scaled) gradients of all nodes, ``z`` i.i.d. noise
and ``L`` (T x T) the local noise correlation ``C^+`` applied by every node
(``C = C_local kron I_n``, ``L = C_local^{-1}``; or one L per node).  Any invertible L is
accounted: the attacker's knowledge depends on the noise only through ``L L^T``; an L that is
not lower triangular uses later draws (every node draws its sequence in advance).  Stacked
over rounds this is the paper's

    O = W_R (I_T kron E_K) (G + (L kron I_n) Z),   E_K = [I_n; 0_((K-1) n x n)],

with ``W_R`` block lower-triangular Toeplitz, block (r, r') = ``W^(r - r')`` (App. A.2 and
eq. 5-6: the message of a node is its half-step model ``theta_(t+1/2)``; A.4 prints
``0_(Kn x n)`` where ``0_((K-1) n x n)`` is meant).  Hence ``A = W_R (I_T kron E_K)``,
``B = A (L kron I_n)`` and ``C = L^{-1} kron I_n`` (``A = B C``).  This is the gossip
engine's convention (``sparsedp.gossip.views``: ``s_t = theta_t + x_t + u_t``,
``theta_(t+1) = W s_t``) with ``x = g``, ``u = L z`` and injections every K rounds.

Constructors (the matrix forms of App. A):

``dp_d_sgd()``        K = 1, L = I (A.2; C = I).
``muffliato_sgd(K)``  K gossip rounds per gradient, L = I (A.4).
``antipgd()``         K = 1, L = D (``(Dz)_t = z_t - z_(t-1)``), C = D^{-1} = lower-triangular
                      ones (A.3; Koloskova et al. 2023).
``mf_d_sgd(noise, K)`` any square L (Algorithm 1: L = C_local^+ as applied), or one per
                      node (n x T x T, MAFALDA-L-SGD), K gossip rounds per step (default 1,
                      Algorithm 1).
``square_root()``, ``banded_square_root(b)``
                      MFDL's SR and BSR encoders (symmetric Toeplitz square root of the
                      prefix sums, BSR zeroing ``i - j >= b``), noise ``C^{-1}``.
``with_resets(alg, p)`` alg's correlation restarted every p steps (block-diagonal L).
``decor(s)``          K = 1, L = I, and edge-wise secrets (App. A.5; Allouah et al. 2024):
                      each step every edge e = (i, j), i < j, draws a secret ``v_e`` with
                      standard deviation ``s`` (relative to the local noise); node i adds
                      ``+v_e`` and node j adds ``-v_e`` (the orientation does not change any
                      value: only the Laplacian ``Inc Inc^T`` enters).  Step t injects
                      ``g_t + z_t + s Inc v_t`` inside D-SGD's message recursion (App. A.5's
                      ``W~_T`` is not defined; this is ``W_T``).  Accounted under every trust
                      model (:mod:`sparsedp.mf.edge_secrets`).
``zip_dl()``          K = 1, message-wise noise (App. A.6; Biswas et al. 2025): one independent
                      Gaussian per message, one virtual noise source per directed edge
                      (:mod:`sparsedp.mf.message_noise`, where the model is written down).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla

from sparsedp.errors import ParameterError
from sparsedp.reprs import short_repr


@dataclass(frozen=True)
class Algorithm:
    """A linear DL algorithm: K gossip rounds per gradient step and the local noise correlation.

    ``correlation``: ``"independent"`` (L = I), ``"anti"`` (AntiPGD's D), ``"custom"``
    (``noise``, a T x T matrix, fixed T), ``"per-node"`` (``noise``, one T x T matrix per node,
    n x T x T), ``"square-root"`` (MFDL's SR / BSR encoders, any T: ``band``), ``"decor"``
    (L = I plus edge secrets), ``"message"`` (Zip-DL: noise per message, not per node) or
    ``"user"`` (a label only: :func:`sparsedp.mf.linear_mechanism_sensitivity`'s A and B).
    ``reset_period``: the noise correlation restarts every ``reset_period`` steps (fresh noise,
    block-diagonal L); ``None`` for no reset.
    """

    name: str
    K: int = 1
    correlation: str = "independent"
    noise: tuple | None = None
    secret_scale: float | None = None  # DECOR: standard deviation of the edge secrets
    own_copy_noise: bool = False  # Zip-DL: the node's own copy also gets a message noise
    band: int | None = None  # square root: the band width of the encoder (None: not banded)
    causal: bool = False  # square root: lower-triangular Toeplitz encoder (Kalinin-Lampert)
    reset_period: int | None = None

    __repr__ = short_repr

    def noise_matrix(self, T: int) -> np.ndarray:
        """``L = C^+`` for a T-step run: T x T, or n x T x T for a per-node correlation."""
        if self.reset_period is not None and self.reset_period < T:
            return _reset_blocks(dataclasses.replace(self, reset_period=None), T,
                                 self.reset_period)
        if self.correlation in ("independent", "decor", "message"):
            return np.eye(T)
        if self.correlation == "anti":
            return np.eye(T) - np.eye(T, k=-1)
        if self.correlation == "square-root":
            return np.linalg.inv(square_root_encoder(T, self.band, self.causal))
        L = np.array(self.noise, dtype=np.float64)
        if L.shape[-2:] != (T, T):
            raise ParameterError(
                f"algorithm {self.name}: its noise correlation is {L.shape[-2]} x "
                f"{L.shape[-1]}, the run has T = {T} gradient steps"
            )
        return L

    @property
    def decor_scale(self) -> float:
        """DECOR's ``secret_scale`` (ParameterError when the algorithm has none)."""
        if self.secret_scale is None:
            raise ParameterError(f"algorithm {self.name}: DECOR needs the scale of its edge "
                                 "secrets (build it with decor(secret_scale))")
        return self.secret_scale

    @property
    def independent_noise(self) -> bool:
        return self.correlation == "independent"

    def to_dict(self) -> dict:
        return {"name": self.name, "K": self.K, "correlation": self.correlation,
                "secret_scale": self.secret_scale, "own_copy_noise": self.own_copy_noise,
                "band": self.band, "reset_period": self.reset_period}


def _reset_blocks(base: Algorithm, T: int, period: int) -> np.ndarray:
    """Block-diagonal L: the base correlation restarted every ``period`` steps (the last
    segment shorter when ``period`` does not divide T)."""
    if base.correlation in ("custom", "per-node") and T % period:
        raise ParameterError(f"algorithm {base.name}: T = {T} is not a multiple of the reset "
                             f"period {period} (its noise correlation has a fixed length)")
    starts = range(0, T, period)
    segments = [base.noise_matrix(min(period, T - s)) for s in starts]
    if segments[0].ndim == 2:
        return sla.block_diag(*segments)
    return np.stack([sla.block_diag(*(seg[i] for seg in segments))
                     for i in range(segments[0].shape[0])])


def node_noise(algorithm: Algorithm, T: int, n: int) -> np.ndarray:
    """The algorithm's L for a T-step run on n nodes: T x T, or n x T x T per node
    (ParameterError when a per-node correlation has another number of nodes)."""
    L = algorithm.noise_matrix(T)
    if L.ndim == 3 and L.shape[0] != n:
        raise ParameterError(f"algorithm {algorithm.name}: one noise correlation per node for "
                             f"{L.shape[0]} nodes, W has {n}")
    return L


FUTURE_DRAWS_NOTE = ("the noise correlation is not lower triangular: the noise of a step uses "
                     "noise drawn at later steps (every node draws its sequence in advance); "
                     "accounted with the covariance L L^T it induces")


def future_draws(L: np.ndarray) -> bool:
    """Whether the noise of some step uses noise drawn at a later step (L, or some node's L,
    not lower triangular)."""
    return bool(np.any(np.triu(L, 1) != 0))


def dp_d_sgd() -> Algorithm:
    """DP-D-SGD (App. A.2): one gossip round per gradient step, independent noise, C = I."""
    return Algorithm(name="dp-d-sgd")


def muffliato_sgd(K: int) -> Algorithm:
    """Muffliato-SGD(K) (App. A.4): K gossip rounds per gradient step, independent noise;
    T counts gradient steps (K T gossip rounds)."""
    K = _rounds_per_step(K)
    return Algorithm(name=f"muffliato-sgd({K})", K=K)


def _rounds_per_step(K) -> int:
    if isinstance(K, bool) or not isinstance(K, (int, np.integer)) or K < 1:
        raise ParameterError(f"K (gossip rounds per gradient step) must be an integer >= 1, "
                             f"got {K!r}")
    return int(K)


def antipgd() -> Algorithm:
    """AntiPGD (App. A.3): each step subtracts the previous step's noise, ``(Dz)_t = z_t -
    z_(t-1)``; ``C = D^{-1}`` (lower-triangular ones)."""
    return Algorithm(name="antipgd", correlation="anti")


def mf_d_sgd(noise, K: int = 1) -> Algorithm:
    """MF-D-SGD (Algorithm 1) with the local noise correlation ``L = C_local^+`` as applied,
    and K gossip rounds per gradient step (Algorithm 1 has K = 1).

    ``noise`` is T x T (every node applies the same L), or n x T x T (one L per node, as
    MAFALDA-L-SGD).  Any square L is accepted: the attacker's knowledge depends on the noise
    only through its covariance ``L L^T``, so an L that is not lower triangular (the noise of
    step t uses noise drawn at later steps: every node draws its whole sequence in advance, as
    MFDL does) is accounted like any other, with a note in the result.  A singular L is
    accepted (some direction gets no noise) and is accounted under local DP only, where the
    range condition decides exactly whether the result is infinite."""
    K = _rounds_per_step(K)
    L = np.array(noise, dtype=np.float64)
    if L.ndim not in (2, 3) or L.shape[-1] != L.shape[-2] or L.shape[-1] == 0 or \
            L.shape[0] == 0:
        raise ParameterError(f"noise correlation must be a square T x T matrix (or n x T x T, "
                             f"one per node), got shape {L.shape}")
    if not np.all(np.isfinite(L)):
        raise ParameterError("noise correlation has non-finite entries")
    name = "mf-d-sgd" if K == 1 else f"mf-d-sgd(K={K})"
    if L.ndim == 3:
        return Algorithm(name=name + "(per-node)", K=K, correlation="per-node",
                         noise=tuple(tuple(map(tuple, Li)) for Li in L.tolist()))
    return Algorithm(name=name, K=K, correlation="custom", noise=tuple(map(tuple, L.tolist())))


def square_root_encoder(T: int, band: int | None = None, causal: bool = False) -> np.ndarray:
    """MFDL's square-root encoder ``C_local`` of the prefix-sum workload (T x T).

    ``y_k = binom(2k, k) / 4^k`` (the square root of ``1 / (1 - x)``: ``sum_(j<=k) y_j
    y_(k-j) = 1``, MFDL's recursion), ``C = toeplitz(y)``, symmetric as MFDL's
    ``SR_local_factorization`` builds it (``scipy.linalg.toeplitz`` with one argument); with
    ``band``, the entries ``C[i, j]`` with ``i - j >= band`` are zeroed (MFDL's
    ``BSR_local_factorization``, ``band = T // epochs``: only below the diagonal).
    ``causal=True``: the lower-triangular Toeplitz matrix of Kalinin and Lampert (2024)
    instead."""
    T = int(T)
    y = np.ones(T)
    for k in range(1, T):
        y[k] = y[k - 1] * (2 * k - 1) / (2 * k)
    C = sla.toeplitz(y, np.zeros(T) if causal else y)
    if band is not None:
        C[np.subtract.outer(np.arange(T), np.arange(T)) >= band] = 0.0
    return C


def square_root(causal: bool = False) -> Algorithm:
    """SR: the square-root factorisation of the prefix-sum workload as a local correlation.

    The encoder is :func:`square_root_encoder` (MFDL's ``SR_local_factorization``, labelled
    "BSR_LOCAL" in its experiments), the noise as applied ``C^{-1}``, one gossip round per
    step.  MFDL's C is symmetric, so the noise of a step uses later draws (the result says
    so); the accounting uses the covariance it induces.

    Parameters
    ----------
    causal : bool
        ``True``: the lower-triangular Toeplitz encoder of Kalinin and Lampert (2024) instead
        of MFDL's symmetric one.

    Returns
    -------
    Algorithm
        For :func:`sparsedp.mf.mf_sensitivity`; its noise matrix is built for any T.

    Raises
    ------
    ParameterError
        ``causal`` not a bool.

    Examples
    --------
    Under local DP with user-level participation, ``sens^2`` is Theorem 7's sum over
    ``C^T C`` (MFDL's ``compute_sensitivity`` squared):

    >>> import numpy as np
    >>> from sparsedp.mf import mf_sensitivity, square_root
    >>> r = mf_sensitivity(np.ones((1, 1)), 0, None, 4, algorithm=square_root(),
    ...                    trust_model="ldp")
    >>> round(r.thm7, 4)
    20.8516
    """
    return Algorithm(name="sr" + ("(causal)" if _flag(causal) else ""),
                     correlation="square-root", causal=causal)


def banded_square_root(band: int, causal: bool = False) -> Algorithm:
    """BSR: the square-root encoder with the entries ``band`` or more steps below the diagonal
    zeroed, as a local correlation.

    MFDL's ``BSR_local_factorization`` with ``band = T // epochs`` ("BSR_BANDED_LOCAL"; with
    ``cyclic(k, b)`` participation MFDL takes ``band = b``).  Its entries above the diagonal
    stay (MFDL's symmetric Toeplitz matrix), so the noise uses later draws.

    Parameters
    ----------
    band : int
        Band width (>= 1): ``C[i, j] = 0`` for ``i - j >= band``.
    causal : bool
        ``True``: banded lower-triangular Toeplitz (Kalinin and Lampert, 2024).

    Returns
    -------
    Algorithm
        For :func:`sparsedp.mf.mf_sensitivity`; its noise matrix is built for any T.

    Raises
    ------
    ParameterError
        ``band`` not an integer >= 1, ``causal`` not a bool.

    Examples
    --------
    >>> from sparsedp.mf import banded_square_root
    >>> from sparsedp.mf.algorithms import square_root_encoder
    >>> banded_square_root(2).name, square_root_encoder(3, band=2).tolist()
    ('bsr(2)', [[1.0, 0.5, 0.375], [0.5, 1.0, 0.5], [0.0, 0.5, 1.0]])
    """
    if isinstance(band, bool) or not isinstance(band, (int, np.integer)) or band < 1:
        raise ParameterError(f"band must be an integer >= 1, got {band!r}")
    return Algorithm(name=f"bsr({int(band)})" + ("(causal)" if _flag(causal) else ""),
                     correlation="square-root", band=int(band), causal=causal)


def _flag(causal) -> bool:
    if not isinstance(causal, bool):
        raise ParameterError(f"causal must be True or False, got {causal!r}")
    return causal


def with_resets(algorithm: Algorithm, period: int) -> Algorithm:
    """``algorithm`` with its noise correlation restarted every ``period`` steps.

    MFDL's ``nb_resets``: fresh noise, the correlation built again for each segment; the
    models are not reset.  L is block-diagonal; a last segment shorter than ``period`` gets
    the correlation of its own length (for correlations defined for any T).

    Parameters
    ----------
    algorithm : Algorithm
        Any algorithm with a node-local noise correlation (not DECOR or Zip-DL).
    period : int
        Steps between resets (>= 1); a fixed-size correlation (``mf_d_sgd``) must have
        exactly ``period`` steps.

    Returns
    -------
    Algorithm
        The same algorithm with ``reset_period`` set.

    Raises
    ------
    ParameterError
        A bad period, an algorithm without a local correlation, a fixed correlation of
        another size.

    Examples
    --------
    >>> from sparsedp.mf import antipgd, with_resets
    >>> with_resets(antipgd(), 2).noise_matrix(4).astype(int).tolist()
    [[1, 0, 0, 0], [-1, 1, 0, 0], [0, 0, 1, 0], [0, 0, -1, 1]]
    """
    if isinstance(period, bool) or not isinstance(period, (int, np.integer)) or period < 1:
        raise ParameterError(f"period must be an integer >= 1, got {period!r}")
    if algorithm.correlation in ("decor", "message"):
        raise ParameterError(f"algorithm {algorithm.name} has no local noise correlation to "
                             "reset")
    if algorithm.correlation in ("custom", "per-node") and \
            np.array(algorithm.noise).shape[-1] != period:
        raise ParameterError(f"algorithm {algorithm.name}: its noise correlation is fixed at "
                             f"{np.array(algorithm.noise).shape[-1]} steps, not the reset "
                             f"period {period}")
    return dataclasses.replace(algorithm, name=f"{algorithm.name}+reset({int(period)})",
                               reset_period=int(period))


def decor(secret_scale: float) -> Algorithm:
    """DECOR (App. A.5, Allouah et al. 2024) with edge secrets of standard deviation
    ``secret_scale`` times the local noise's (module docstring)."""
    s = float(secret_scale) if isinstance(secret_scale, (int, float, np.floating)) and \
        not isinstance(secret_scale, bool) else float("nan")
    if not (np.isfinite(s) and s >= 0):
        raise ParameterError(f"secret_scale must be a finite number >= 0, got {secret_scale!r}")
    return Algorithm(name=f"decor({s:g})", correlation="decor", secret_scale=s)


def zip_dl(own_copy_noise: bool = False) -> Algorithm:
    """Zip-DL (App. A.6, Biswas et al. 2025): every message carries its own independent noise,
    one virtual noise source per directed edge (:mod:`sparsedp.mf.message_noise`).
    ``own_copy_noise=True``: a node's own copy (weight ``W[i, i]``) also gets an independent
    noise, the reading of App. A.6 where the self slot is one of the n^2 virtual nodes."""
    if not isinstance(own_copy_noise, bool):
        raise ParameterError(f"own_copy_noise must be True or False, got {own_copy_noise!r}")
    if own_copy_noise:
        return Algorithm(name="zip-dl(own-copy-noise)", correlation="message",
                         own_copy_noise=True)
    return Algorithm(name="zip-dl", correlation="message")


def resolve(algorithm) -> Algorithm:
    """An :class:`Algorithm`, or a name ``"dp-d-sgd"``, ``"antipgd"``, ``"zip-dl"``, ``"sr"``,
    ``"muffliato-sgd(K)"``."""
    if isinstance(algorithm, Algorithm):
        return algorithm
    if algorithm == "zip-dl":
        return zip_dl()
    if algorithm == "dp-d-sgd":
        return dp_d_sgd()
    if algorithm == "antipgd":
        return antipgd()
    if algorithm == "sr":
        return square_root()
    if isinstance(algorithm, str) and algorithm.startswith("muffliato-sgd(") and \
            algorithm.endswith(")"):
        try:
            return muffliato_sgd(int(algorithm[len("muffliato-sgd("):-1]))
        except ValueError:
            pass
    raise ParameterError(f"unknown algorithm {algorithm!r}: use 'dp-d-sgd', 'antipgd', "
                         "'zip-dl', 'sr', 'muffliato-sgd(K)' or a constructor of sparsedp.mf")
