"""The utility Gram matrix H of MAFALDA-SGD (Bellet et al., Lemma 10 and Algorithm 2), without
forming ``(I_T kron W) W_T``.

MF-D-SGD's averaged models are ``theta = (I_T kron W) (M theta_0 - eta W_T (G + C^+ Z))``
(eq. 5), so with local correlation ``C = C_local kron I_n`` the noise enters the models through
``(I_T kron W) W_T (Y kron I_n)``, ``Y = C_local^+``.  Its block (r, s) (time-major, steps
``r, s = 0..T-1``) is ``sum_(q <= r) W^(r - q + 1) Y_qs``, so

    ||(I_T kron W) W_T (Y kron I_n)||_F^2 = tr(Y^T H Y),
    H_(s s') = sum_(r = max(s, s'))^(T-1) tr((W^(r-s+1))^T W^(r-s'+1))        (T x T),

which is Lemma 10's ``H = sum_i A_i^T A_i`` (``A_i`` the columns of node i after the
commutation ``K^(T,n)``; column (s, i) of ``(I kron W) W_T`` is ``vec`` of the i-th columns of
``W^(r-s+1)``, ``r >= s``, and summing ``<col(s,i), col(s',i)>`` over i gives the traces).
Write ``t(a, b) = tr((W^a)^T W^b)`` (``a, b = 1..T``); for ``s >= s'``, ``d = s - s'``:

    H_(s, s') = sum_(a=1)^(T-s) t(a, a + d)                                     (general W)

**Symmetric W** (``t(a, b) = m_(a+b)``, ``m_k = tr(W^k)``): with the parity prefix sums
``P(k) = m_k + m_(k-2) + ... `` (down to ``m_1`` or ``m_0``),

    H_(s, s') = sum_(j=0)^(T-1-max(s,s')) m_(|s-s'| + 2 + 2j) = P(2T - s - s') - P(|s - s'|),

so H needs the moments ``m_0 .. m_(2T)`` only (0-indexed steps; with the paper's 1-indexed
steps the same moments appear as ``P(2T + 2 - s - s') - P(|s - s'|)``).

Paths (:func:`utility_gram`):

* ``"exact"``, symmetric W: the moments from the eigenvalues of W (dense ``eigvalsh``,
  ``n <= 10^4``), ``m_k = sum_i lambda_i^k``; kind ``exact`` (floating point: the dense
  construction agrees to 1e-10 relative in the tests).
* ``"exact"``, non-symmetric W: ``t(a, b)`` from the exact Krylov blocks ``W^a E`` for blocks
  E of basis vectors, ``T^2 n^2`` work (small n only); kind ``exact``.
* ``"estimate"``: Hutchinson.  With p probes ``z`` (Rademacher), ``t^(a, b) = mean_z <W^a z,
  W^b z>`` (unbiased, ``E[z z^T] = I``); symmetric W only needs ``W^a z`` for ``a <= T`` and
  ``m^_k = <W^floor(k/2) z, W^ceil(k/2) z>``.  When W is doubly stochastic (symmetric
  stochastic W is), the eigenvalue 1 is taken out exactly: ``W^a = J/n + (W - J/n)^a`` and
  ``(W^a)^T W^b = J/n + ...`` (cross terms vanish), so ``t(a, b) = 1 + tr((W^a P)^T W^b P)``
  with ``P = I - J/n`` and probes projected, ``z <- z - mean(z)``; this removes the largest,
  non-decaying part of the variance.  Each probe gives an unbiased H^(z); ``H`` is their mean
  and ``standard_error`` the entrywise sample standard deviation over ``sqrt(p)``.  The stated
  error ``error = z_score * standard_error + 8 T u max|H|`` (z_score default 5; the second
  term, u the unit roundoff, is a floating-point floor for the entries far from the diagonal
  whose sample spread is below rounding) is a **statistical estimate**
  (central-limit band, not a certificate): ``|H - H^| <= error`` entrywise is what it claims,
  with kind ``estimate``.  H only shapes utility; privacy comes from the exact sensitivity of
  the returned correlation (:mod:`sparsedp.mf.optimise`), never from H.

Every path returns a :class:`UtilityGram` (H, its kind, the error for estimates).

**The message workload** (``workload="message"``, MFDL's ``initial_power=0``, "loss_message"):
the noise as it enters the *messages* ``W_T (Y kron I_n)`` instead of the averaged models, so
every power drops by one: ``H_(s, s') = sum_(r >= max(s, s')) tr((W^(r-s))^T W^(r-s'))``.
The same paths apply with ``t(a, b)`` for ``a, b = 0..T-1`` (``gram_from_traces`` of the
shifted traces) and, for symmetric W, the moments shifted by two (``m'_k = m_(k-2)``,
``m'_0 = m'_1 = 0``: then ``sum_j m'_(|s-s'|+2+2j) = sum_j m_(|s-s'|+2j)``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from sparsedp import defaults, resources, validation
from sparsedp.errors import ParameterError, ResourceLimitError
from sparsedp.hints import MemorySize
from sparsedp.linalg.stochastic import check_gossip_matrix
from sparsedp.linalg.threads import limit_blas_threads
from sparsedp.progress import progress_bar

EXACT_EIGEN_MAX_N = 10_000
EXACT_GENERAL_MAX_WORK = 5e10   # T^2 n^2 flops for the non-symmetric exact path
METHODS = ("auto", "exact", "estimate")
WORKLOADS = ("post-average", "message")  # the first power of W in the workload: 1 or 0


@dataclass(frozen=True)
class UtilityGram:
    """Lemma 10's ``H`` (T x T) with its kind.

    ``kind``: ``"exact"`` or ``"estimate"``.  For estimates, ``error`` (T x T) is the stated
    entrywise error ``z_score * standard_error`` (a statistical band, module docstring);
    ``None`` for exact results.
    """

    H: np.ndarray
    kind: str
    method: str
    T: int
    n: int
    symmetric: bool
    error: np.ndarray | None = None
    standard_error: np.ndarray | None = None
    probes: int | None = None
    z_score: float | None = None
    notes: tuple = field(default_factory=tuple)
    workload: str = "post-average"

    def to_dict(self) -> dict:
        out = {"kind": self.kind, "method": self.method, "T": self.T, "n": self.n,
               "workload": self.workload,
               "symmetric": self.symmetric, "H": self.H.tolist(), "notes": list(self.notes)}
        if self.error is not None:
            out.update(error=self.error.tolist(), probes=self.probes, z_score=self.z_score,
                       max_relative_error=float(np.max(self.error / np.abs(self.H))))
        return out


# ----------------------------------------------------------------------------- index forms
def gram_from_moments(m: np.ndarray, T: int) -> np.ndarray:
    """Symmetric W: ``H_(s, s') = P(2T - s - s') - P(|s - s'|)`` from ``m_k = tr(W^k)``,
    ``k = 0..2T`` (``P`` the parity prefix sums, module docstring)."""
    m = np.asarray(m, dtype=np.float64)
    if m.shape[0] < 2 * T + 1:
        raise ParameterError(f"need the moments m_0..m_{2 * T}, got {m.shape[0]}")
    P = np.empty(2 * T + 1)
    P[0::2] = np.cumsum(m[0: 2 * T + 1: 2])      # m_0 + m_2 + ... + m_k, k even
    P[1::2] = np.cumsum(m[1: 2 * T + 1: 2])      # m_1 + m_3 + ... + m_k, k odd
    s = np.arange(T)
    return P[2 * T - s[:, None] - s[None, :]] - P[np.abs(s[:, None] - s[None, :])]


def gram_from_traces(t: np.ndarray) -> np.ndarray:
    """General W: ``H_(s, s - d) = sum_(a=1)^(T-s) t(a, a + d)`` from ``t[a-1, b-1] =
    tr((W^a)^T W^b)``, ``a, b = 1..T`` (module docstring)."""
    t = np.asarray(t, dtype=np.float64)
    T = t.shape[0]
    H = np.zeros((T, T))
    for d in range(T):
        diag = np.diagonal(t, offset=d)          # t(a, a + d), a = 1..T - d
        Q = np.concatenate(([0.0], np.cumsum(diag)))
        s = np.arange(d, T)                      # s >= d, s' = s - d
        H[s, s - d] = Q[T - s]
        H[s - d, s] = Q[T - s]
    return H


# ----------------------------------------------------------------------------- exact paths
def _moments_exact(W: sp.csr_matrix, T: int) -> np.ndarray:
    lam = np.linalg.eigvalsh(W.toarray())
    m = np.empty(2 * T + 1)
    p = np.ones_like(lam)
    for k in range(2 * T + 1):
        m[k] = p.sum()
        p *= lam
    return m


def _message_moments(m: np.ndarray) -> np.ndarray:
    """The moments that make :func:`gram_from_moments` give the message workload (module
    docstring): ``m'_k = m_(k-2)``, ``m'_0 = m'_1 = 0``."""
    return np.concatenate(([0.0, 0.0], m[:-2]))


def _traces_exact(W: sp.csr_matrix, T: int, block: int = 256, progress=None,
                  first_power: int = 1) -> np.ndarray:
    n = W.shape[0]
    t = np.zeros((T, T))
    bar = progress_bar(progress, total=n, desc="H exact (Krylov blocks)", unit="node")
    for start in range(0, n, block):
        E = np.zeros((n, min(block, n - start)))
        E[start + np.arange(E.shape[1]), np.arange(E.shape[1])] = 1.0
        V = np.empty((T, n * E.shape[1]))
        cur = W @ E if first_power else E
        for a in range(T):
            V[a] = cur.ravel()
            cur = W @ cur
        t += V @ V.T
        if bar is not None:
            bar.update(E.shape[1])
    if bar is not None:
        bar.close()
    return t


# ----------------------------------------------------------------------------- estimate
def _doubly_stochastic(W: sp.csr_matrix) -> bool:
    one = np.ones(W.shape[0])
    return bool(np.max(np.abs(W @ one - 1)) <= 1e-12 and np.max(np.abs(W.T @ one - 1)) <= 1e-12)


def _estimate(W, T, symmetric, probes, seed, progress, first_power=1):
    n = W.shape[0]
    rng = np.random.default_rng(seed)
    project = _doubly_stochastic(W)
    Z = rng.choice(np.array([-1.0, 1.0]), size=(n, probes))
    if project:
        Z = Z - Z.mean(axis=0)
    per_probe = np.empty((probes, T, T))
    if symmetric:
        # all probes at once, two Krylov blocks in memory:
        # m_(2a) = <W^a z, W^a z>, m_(2a - 1) = <W^(a-1) z, W^a z>
        m = np.empty((probes, 2 * T + 1))
        prev = Z
        m[:, 0] = np.einsum("ij,ij->j", prev, prev)
        bar = progress_bar(progress, total=T, desc="H estimate (Hutchinson)", unit="step")
        for a in range(1, T + 1):
            cur = W @ prev
            m[:, 2 * a - 1] = np.einsum("ij,ij->j", prev, cur)
            m[:, 2 * a] = np.einsum("ij,ij->j", cur, cur)
            prev = cur
            if bar is not None:
                bar.update(1)
        if bar is not None:
            bar.close()
        if project:
            m += 1.0
        for j in range(probes):
            per_probe[j] = gram_from_moments(m[j] if first_power else _message_moments(m[j]), T)
    else:
        bar = progress_bar(progress, total=probes, desc="H estimate (Hutchinson)",
                           unit="probe")
        for j in range(probes):
            V = np.empty((T, n))
            cur = W @ Z[:, j] if first_power else Z[:, j]
            for a in range(T):
                V[a] = cur
                cur = W @ cur
            t = V @ V.T
            if project:
                t = t + 1.0
            per_probe[j] = gram_from_traces(t)
            if bar is not None:
                bar.update(1)
        if bar is not None:
            bar.close()
    H = per_probe.mean(axis=0)
    se = per_probe.std(axis=0, ddof=1) / np.sqrt(probes)
    return H, se, project


def utility_memory(n: int, nnz: int, T: int, method: str, symmetric: bool, probes: int) -> int:
    """Bytes :func:`utility_gram` holds (an upper estimate): H and its index arrays (6 ``T x T``)
    and, for ``"exact"``, the dense W and its eigenvalue workspace (``3 n^2``) or the Krylov
    blocks of 256 basis vectors (``(T + 2) 256 n``); for ``"estimate"``, the probes' ``T x T``
    matrices and their spread (``3 probes T^2``), the probes and Krylov states
    (``4 probes n``, or ``T n`` per probe for a non-symmetric W) and W (``3 nnz``)."""
    dense = 6 * T * T + 3 * nnz
    if method == "exact":
        dense += 3 * n * n if symmetric else (T + 2) * 256 * n
    else:
        dense += 3 * probes * T * T + 4 * probes * n + (0 if symmetric else T * n)
    return 8 * dense


@limit_blas_threads
def utility_gram(W, T: int, *, method: str = defaults.H_METHOD, probes: int = defaults.PROBES,
                 z_score: float = 5.0, seed=0, progress=None,
                 workload: str = "post-average", max_memory: MemorySize = None) -> UtilityGram:
    """Lemma 10's utility Gram matrix H (T x T) of MF-D-SGD on W (module docstring).

    Parameters
    ----------
    W : gossip matrix (n x n, non-negative, row-stochastic; sparse or dense).
    T : gradient steps.
    method : ``"auto"`` (exact for symmetric W with ``n <= 10^4`` or small non-symmetric
        problems, else the estimate), ``"exact"`` or ``"estimate"``.
    probes : Hutchinson probes (>= 2) for the estimate.
    z_score : the stated error is ``z_score`` standard errors (estimate only).
    seed : seed of the probes.
    progress : tqdm progress bar (``None``: automatic, see :mod:`sparsedp.progress`).
    workload : ``"post-average"`` (default: the averaged models, Lemma 10) or ``"message"``
        (the messages, MFDL's message workload; module docstring).
    max_memory : memory budget (bytes or e.g. ``"8G"``), checked before H is computed
        (:func:`utility_memory`).

    Returns
    -------
    UtilityGram
        H with its kind (``exact`` or ``estimate``) and, for estimates, the stated error.

    Raises
    ------
    ParameterError, GossipMatrixError, ResourceLimitError
        Bad method or probes, W not a gossip matrix, an exact request too large, a request
        over ``max_memory``.

    Examples
    --------
    On a 6-cycle with Metropolis weights (1/3 each), the last diagonal entry is
    ``tr(W^T W) = ||W||_F^2 = 6 * 3 / 9 = 2``:

    >>> import networkx as nx, sparsedp
    >>> from sparsedp.mf.utility import utility_gram
    >>> r = utility_gram(sparsedp.gossip_matrix(nx.cycle_graph(6)), 3)
    >>> r.kind, r.H.shape, round(float(r.H[2, 2]), 12)
    ('exact', (3, 3), 2.0)
    """
    if method not in METHODS:
        raise ParameterError(f"method must be one of {METHODS}, got {method!r}")
    if workload not in WORKLOADS:
        raise ParameterError(f"workload must be one of {WORKLOADS}, got {workload!r}")
    first_power = int(workload == "post-average")
    T = validation.rounds(T)
    W = check_gossip_matrix(W, require=("nonnegative", "row_stochastic"))
    n = W.shape[0]
    symmetric = bool(abs(W - W.T).max() <= 1e-12) if W.nnz else True
    exact_ok = n <= EXACT_EIGEN_MAX_N if symmetric else float(T) ** 2 * n * n <= \
        EXACT_GENERAL_MAX_WORK
    if method == "auto":
        method = "exact" if exact_ok else "estimate"
    steps = probes if isinstance(probes, (int, np.integer)) and probes > 0 else 2
    resources.require_fits(
        lambda t: utility_memory(n, W.nnz, t, method, symmetric, steps), T,
        resources.memory_budget(max_memory), f"the utility Gram matrix H at T = {T} ({method})",
        unit="gradient steps")
    if method == "exact":
        if not exact_ok:
            raise ResourceLimitError(
                f"exact H for n = {n}, T = {T} is too large ("
                + (f"dense eigenvalues need n <= {EXACT_EIGEN_MAX_N}" if symmetric else
                   f"T^2 n^2 = {float(T) ** 2 * n * n:.2g} > {EXACT_GENERAL_MAX_WORK:.0g}")
                + "): use method='estimate'")
        if symmetric:
            m = _moments_exact(W, T)
            H = gram_from_moments(m if first_power else _message_moments(m), T)
            how = "eigenvalues of W, trace moments"
        else:
            H = gram_from_traces(_traces_exact(W, T, progress=progress,
                                               first_power=first_power))
            how = "exact Krylov blocks, tr((W^a)^T W^b)"
        return UtilityGram(H=H, kind="exact", method=how, T=T, n=n, symmetric=symmetric,
                           workload=workload)
    if isinstance(probes, bool) or not isinstance(probes, (int, np.integer)) or probes < 2:
        raise ParameterError(f"probes must be an integer >= 2, got {probes!r}")
    z_score = validation.real("z_score", z_score)
    if not (np.isfinite(z_score) and z_score > 0):
        raise ParameterError(f"z_score must be > 0, got {z_score!r}")
    H, se, projected = _estimate(W, T, symmetric, int(probes), seed, progress, first_power)
    notes = (f"Hutchinson, {probes} Rademacher probes"
             + (", eigenvalue 1 removed exactly (W doubly stochastic)" if projected else ""),
             f"error = {z_score:g} standard errors entrywise: a statistical band, not a "
             "certificate; H only shapes utility, privacy comes from the exact sensitivity")
    # rounding floor: entries far from the diagonal can have a standard error below the
    # floating-point error of the sums themselves (every probe gives the same value)
    floor = 8.0 * T * np.finfo(np.float64).eps * float(np.abs(H).max())
    return UtilityGram(H=H, kind="estimate", method="hutchinson", T=T, n=n,
                       symmetric=symmetric, error=z_score * se + floor, standard_error=se,
                       probes=int(probes), z_score=float(z_score), notes=notes,
                       workload=workload)
