"""MF-D-SGD (Bellet et al., Algorithm 1) on stacked node models, with any local noise
correlation: one sparse product with W per step, no per-node Python loop.

For steps ``t = 0..T-1`` (``T = k b``, cyclic ``(k, b)`` participation: node u's m records
are cut into b batches of ``B = floor(m / b)``, step t uses batch ``t mod b``, so every record
is used k times, b steps apart):

    g_t = mean_(x in batch) clip(grad f(theta_t; x), c)            (n x P, per node)
    theta_(t+1) = W (theta_t - eta (g_t + (L Z)_t)),    Z_t ~ N(0, s^2 I)  i.i.d.

with ``L = C_local^+`` the local noise correlation as applied (``sparsedp.mf.mf_d_sgd``
convention; ``L = I`` is DP-D-SGD), the same at every node and independent across nodes and
coordinates.  Replacing one record changes one batch mean by at most ``Delta = 2 c / B`` per
use, so the view ``G + L Z`` (local DP: every message public) is mu-GDP for

    s = sqrt(sens_Pi(C)^2) Delta / mu,

``sens_Pi(C)^2`` the certified upper value of :func:`sparsedp.mf.mf_sensitivity` for
``mf_d_sgd(L)`` under ``"ldp"`` and the scheme (Theorem 7; Z is drawn once for the whole run
and ``L Z`` formed block by block, ``L`` lower triangular so step t only uses ``Z_0..Z_t``).
A target ``(epsilon, delta)`` is turned into mu by :func:`sparsedp.privacy.gdp_mu_for` (the
largest mu whose tight GDP profile meets it).  ``clip=None`` and no privacy target is
non-private D-SGD.

Randomness: ``seed`` spawns two streams (``numpy.random.SeedSequence``): the model
initialisation and the noise.  The data split is fixed beforehand
(:func:`sparsedp.learning.data.split_uniform`).  With ``sigma = 0`` and ``W = J / n`` every
node holds the centralized SGD iterate on the union of the node batches (test:
``tests/test_mafalda_learning.py``).

**Many runs at once** (:func:`simulate_runs`): runs that share the graph, the data, the model,
the step size, the clipping and the seed but differ in the correlation L and the privacy
target are stacked as an ``n x R x P`` array and advanced together: one gradient evaluation
over ``n R`` models, one sparse product ``W @ (n x R P)`` per step.  They share the draw Z
(common random numbers: run r adds ``s_r (L_r Z)_t``); ``L Z`` is formed once per distinct L,
32 steps at a time (``L[t:t+32, :t+32] Z[:t+32]`` for a lower-triangular L, all of Z
otherwise), never all T rows.
Every run's numbers are those of the same run alone, bit for bit (every operation is
row-wise or column-wise, and the numba gradient and loss kernels do not depend on where a row
lies in memory; tests).  With the numpy fallback (``SPARSEDP_DISABLE_NUMBA``) they agree to
rounding only: some OpenBLAS kernels round a small product by its operands' alignment.
:func:`simulate` is one run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from sparsedp import validation
from sparsedp.errors import ParameterError
from sparsedp.learning.data import NodeData
from sparsedp.learning.models import Model
from sparsedp.linalg.stochastic import check_gossip_matrix
from sparsedp.linalg.threads import limit_blas_threads
from sparsedp.mf import cyclic, mf_d_sgd, mf_sensitivity
from sparsedp.mf.participation import resolve as resolve_scheme
from sparsedp.privacy import gdp_epsilon, gdp_mu_for
from sparsedp.progress import progress_bar
from sparsedp.reprs import short_repr


@dataclass(frozen=True)
class SimulationResult:
    """Test loss over steps (mean over nodes), the privacy and noise of the run."""

    steps: np.ndarray
    test_loss: np.ndarray
    final_node_losses: np.ndarray
    theta: np.ndarray
    mu: float | None
    epsilon: float | None
    delta: float | None
    sens2: float | None
    noise_std: float
    batch: int
    notes: tuple = field(default_factory=tuple)

    __repr__ = short_repr

    def to_dict(self) -> dict:
        return {"steps": self.steps.tolist(), "test_loss": self.test_loss.tolist(),
                "final_node_losses": self.final_node_losses.tolist(), "mu": self.mu,
                "epsilon": self.epsilon, "delta": self.delta, "sens2": self.sens2,
                "noise_std": self.noise_std, "batch": self.batch, "notes": list(self.notes)}


def _schedule(scheme, T: int, m: int) -> tuple[int, int, int]:
    scheme = resolve_scheme(scheme)
    if scheme.k is None or scheme.b is None:
        raise ParameterError("the simulator runs cyclic (k, b) participation: pass (k, b) or "
                             "sparsedp.mf.cyclic(k, b)")
    k, b = scheme.k, scheme.b
    if T != k * b:
        raise ParameterError(f"T = {T} is not a multiple of the participation period: "
                             f"cyclic({k},{b}) runs T = k b = {k * b} steps")
    B = m // b
    if B < 1:
        raise ParameterError(f"{m} records per node cannot fill b = {b} batches")
    return k, b, B


@dataclass(frozen=True)
class RunSpec:
    """One run of :func:`simulate_runs`: the correlation ``L = C_local^+`` as applied (T x T;
    ``None``: identity, DP-D-SGD) and the privacy target (mu, or epsilon with delta; none:
    non-private, no noise)."""

    noise: np.ndarray | None = None
    mu: float | None = None
    epsilon: float | None = None
    delta: float | None = None

    @property
    def private(self) -> bool:
        return self.mu is not None or self.epsilon is not None


def _target_mu(mu, epsilon, delta) -> float:
    """The mu-GDP target: ``mu`` itself, or the largest mu meeting ``(epsilon, delta)``."""
    if (mu is None) == (epsilon is None):
        raise ParameterError("give exactly one privacy target: mu, or epsilon with delta")
    if epsilon is not None:
        if delta is None:
            raise ParameterError("epsilon needs delta")
        eps = validation.real("epsilon", epsilon)
        if not (np.isfinite(eps) and eps > 0):
            raise ParameterError(f"infeasible privacy target: epsilon must be > 0 and finite, "
                                 f"got {epsilon!r}")
        mu = gdp_mu_for(eps, validation.probability_delta(delta))
    mu = validation.real("mu", mu)
    if not (np.isfinite(mu) and mu > 0):
        raise ParameterError(f"infeasible privacy target: mu must be > 0 and finite, got {mu!r}")
    return mu


def _sens2(noise, T: int, scheme) -> float:
    """Certified upper value of ``sens_Pi(C)^2`` for ``mf_d_sgd(L)`` under local DP."""
    L = np.eye(T) if noise is None else np.asarray(noise, dtype=np.float64)
    r = mf_sensitivity(np.ones((1, 1)), 0, None, T, algorithm=mf_d_sgd(L), trust_model="ldp",
                       participation_scheme=scheme)
    if not np.isfinite(r.upper):
        raise ParameterError("infeasible privacy target: the noise correlation's sensitivity is "
                             "infinite (a participating step gets no noise)")
    return float(r.upper)


def calibrate_noise(noise, T: int, scheme, *, mu=None, epsilon=None, delta=None,
                    delta_per_step: float = 1.0) -> dict:
    """Standard deviation of ``Z`` for a target mu-GDP or (epsilon, delta) (module docstring).

    ``delta_per_step`` is the gradient sensitivity ``Delta`` of one step.  Returns ``{"mu",
    "sens2", "noise_std"}``; ParameterError when the target is infeasible (mu or epsilon not
    > 0, delta outside (0, 1), or an infinite sensitivity: the correlation leaves a
    participating step without noise)."""
    mu = _target_mu(mu, epsilon, delta)
    sens2 = _sens2(noise, T, scheme)
    return {"mu": mu, "sens2": sens2, "noise_std": _noise_std(sens2, delta_per_step, mu)}


def _noise_std(sens2: float, delta_per_step: float, mu: float) -> float:
    """``s = sqrt(sens_Pi(C)^2) Delta / mu`` (module docstring)."""
    return float(np.sqrt(sens2) * delta_per_step / mu)


@limit_blas_threads
def simulate(W, data: NodeData, model: Model, T: int, *, participation=(20, 19),
             lr: float = 0.05, clip: float | None = 1.0, noise=None, mu=None, epsilon=None,
             delta=None, seed=0, eval_every: int = 10, progress=None, accountant=None,
             budget=None) -> SimulationResult:
    """Run MF-D-SGD and return the test loss over steps (module docstring).

    Parameters
    ----------
    W : gossip matrix (n x n, row-stochastic), n = ``data.n``.
    data : :class:`NodeData` (split uniformly).
    model : :class:`Model`.
    T : gradient steps, ``k b``.
    participation : ``(k, b)`` or ``sparsedp.mf.cyclic(k, b)``.
    lr : step size eta.
    clip : per-example clipping norm c (``None``: no clipping, non-private only).
    noise : ``L = C_local^+`` as applied (T x T; ``None``: identity).
    mu, epsilon, delta : the privacy target (none: non-private, no noise).
    seed : seed of the initialisation and the noise.
    eval_every : test loss every this many steps (and at the end).
    progress : tqdm bar (``None`` automatic).
    accountant : an online accountant (:class:`sparsedp.Accountant`, or any object with
        ``step()``, ``rounds`` and ``rounds_within(epsilon, delta, limit=)``), stepped once
        per step (one gossip round); with ``budget``, the run stops before the first step
        that would take the accountant's certified epsilon over it.
    budget : ``(epsilon, delta)`` for the accountant.

    Raises
    ------
    ParameterError
        T not ``k b``, an infeasible privacy target, private without clipping, a W of the wrong
        size, non-finite data.

    Examples
    --------
    DP-D-SGD (independent noise: ``sens^2 = k = 2``) on 4 nodes averaging exactly:

    >>> import numpy as np
    >>> from sparsedp.learning import (linear_regression, simulate, split_uniform,
    ...                                synthetic_regression)
    >>> X, y = synthetic_regression(200, d=3)
    >>> data = split_uniform(X[:160], y[:160], X[160:], y[160:], 4)
    >>> r = simulate(np.full((4, 4), 0.25), data, linear_regression(), 6, participation=(2, 3),
    ...              mu=1.0, progress=False)
    >>> round(r.sens2, 9), r.batch, r.test_loss.shape
    (2.0, 13, (1,))
    """
    run = RunSpec(noise=noise, mu=mu, epsilon=epsilon, delta=delta)
    return simulate_runs(W, data, model, T, [run], participation=participation, lr=lr,
                         clip=clip, seed=seed, eval_every=eval_every, progress=progress,
                         accountant=accountant, budget=budget)[0]


@limit_blas_threads
def simulate_runs(W, data: NodeData, model: Model, T: int, runs: Sequence[RunSpec], *,
                  participation=(20, 19), lr: float = 0.05, clip: float | None = 1.0, seed=0,
                  eval_every: int = 10, progress=None, accountant=None,
                  budget=None) -> list[SimulationResult]:
    """Run several MF-D-SGD configurations together (module docstring, "Many runs at once").

    Every run shares ``W``, ``data``, ``model``, ``lr``, ``clip``, the seed (the same
    initialisation and the same draw Z) and the schedule; each has its own correlation and
    privacy target (:class:`RunSpec`).  Returns one :class:`SimulationResult` per run, in order,
    each equal bit for bit to :func:`simulate` of that run alone (module docstring).
    Parameters and errors as :func:`simulate` (an accountant with a budget stops every run at
    the same step).

    Examples
    --------
    DP-D-SGD at two privacy levels and non-private D-SGD in one pass:

    >>> import numpy as np
    >>> from sparsedp.learning import (RunSpec, linear_regression, simulate_runs,
    ...                                split_uniform, synthetic_regression)
    >>> X, y = synthetic_regression(200, d=3)
    >>> data = split_uniform(X[:160], y[:160], X[160:], y[160:], 4)
    >>> out = simulate_runs(np.full((4, 4), 0.25), data, linear_regression(), 6,
    ...                     [RunSpec(mu=1.0), RunSpec(mu=4.0), RunSpec()],
    ...                     participation=(2, 3), progress=False)
    >>> [round(r.noise_std / out[0].noise_std, 6) for r in out]
    [1.0, 0.25, 0.0]
    """
    W = check_gossip_matrix(W, require=("nonnegative", "row_stochastic"))
    n, m, d = data.X.shape
    if W.shape[0] != n:
        raise ParameterError(f"W has {W.shape[0]} nodes, the data is split across {n}")
    if not (np.all(np.isfinite(data.X)) and np.all(np.isfinite(data.y))):
        raise ParameterError("training data has NaN or infinite values")
    T = validation.rounds(T)
    scheme = cyclic(*participation) if isinstance(participation, tuple) else participation
    k, b, B = _schedule(scheme, T, m)
    lr = validation.real("lr", lr)
    runs = list(runs)
    if not runs:
        raise ParameterError("no runs to simulate")
    if clip is None and any(r.private for r in runs):
        raise ParameterError("a private run needs a clipping norm (clip)")
    if clip is not None:
        clip = validation.real("clip", clip)
        if not (np.isfinite(clip) and clip > 0):
            raise ParameterError(f"clip must be > 0 and finite, got {clip!r}")
    correlations = _Correlations(T)
    plans = [_plan(run, correlations, T, scheme, clip, B) for run in runs]
    R = len(runs)
    init_ss, noise_ss = np.random.SeedSequence(seed).spawn(2)
    theta0 = model.init(n, d, np.random.default_rng(init_ss))
    P = theta0.shape[1]
    theta = np.repeat(theta0[:, None, :], R, axis=1)
    noise = None
    if any(p["noise_std"] > 0 for p in plans):
        noise = _NoiseBlocks(np.random.default_rng(noise_ss).standard_normal((T, n * P)),
                             correlations)
    batches = [(np.repeat(data.X[:, j * B:(j + 1) * B], R, axis=0),
                np.repeat(data.y[:, j * B:(j + 1) * B], R, axis=0)) for j in range(b)]
    last = T - 1
    if accountant is not None and budget is not None:  # the budget's last affordable step
        affordable = accountant.rounds_within(*budget, limit=accountant.rounds + T)
        last = min(T, affordable - accountant.rounds) - 1
        if last < 0:
            raise ParameterError(f"the budget {tuple(budget)} is spent already: the "
                                 f"accountant's {accountant.rounds} rounds use it up")
    steps, losses = [], []
    node_losses = None
    bar = progress_bar(progress, total=T, unit="step",
                       desc=f"MF-D-SGD {model.name}" + (f" x {R} runs" if R > 1 else ""))
    for t in range(last + 1):
        Xb, yb = batches[t % b]
        step = model.clipped_mean(theta.reshape(n * R, P), Xb, yb, clip).reshape(n, R, P)
        for r, plan in enumerate(plans):
            if plan["noise_std"] > 0:
                step[:, r] += plan["noise_std"] * noise.row(t, plan["key"]).reshape(n, P)
        step *= -lr
        step += theta
        theta = (W @ step.reshape(n, R * P)).reshape(n, R, P)
        if accountant is not None:
            accountant.step()
        if (t + 1) % eval_every == 0 or t == last:
            node_losses = np.ascontiguousarray(
                model.test_loss(theta.reshape(n * R, P), data.X_test, data.y_test)
                .reshape(n, R).T)
            steps.append(t + 1)
            losses.append(node_losses.mean(axis=1))
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    losses = np.array(losses)
    results = []
    for r, (run, plan) in enumerate(zip(runs, plans, strict=True)):
        eps = None
        if run.private and run.delta is not None:
            eps = gdp_epsilon(plan["mu"], validation.probability_delta(run.delta))
        notes = (f"cyclic({k},{b}): batches of {B} records per node, Delta = 2 clip / B"
                 if run.private else "non-private: no noise",)
        if last < T - 1:
            notes += (f"stopped at the accountant's budget {tuple(budget)} after {last + 1} "
                      f"of {T} steps",)
        results.append(SimulationResult(
            steps=np.array(steps), test_loss=losses[:, r].copy(),
            final_node_losses=node_losses[r].copy(), theta=theta[:, r].copy(), mu=plan["mu"],
            epsilon=eps, delta=run.delta, sens2=plan["sens2"], noise_std=plan["noise_std"],
            batch=B, notes=notes))
    return results


class _Correlations:
    """The distinct correlations of a batch, each stored once (key 0: the identity)."""

    def __init__(self, T: int):
        self.T = T
        self.matrices: dict[int, np.ndarray | None] = {0: None}
        self._keys: dict[bytes, int] = {}
        self._sens2: dict[int, float] = {}

    def key(self, noise) -> int:
        if noise is None:
            return 0
        L = np.ascontiguousarray(noise, dtype=np.float64)
        if L.shape != (self.T, self.T):
            raise ParameterError(f"noise correlation is {L.shape}, the run has T = {self.T} "
                                 "steps")
        fingerprint = L.tobytes()
        if fingerprint not in self._keys:
            self._keys[fingerprint] = len(self.matrices)
            self.matrices[len(self.matrices)] = L
        return self._keys[fingerprint]

    def sens2(self, key: int, scheme) -> float:
        if key not in self._sens2:
            self._sens2[key] = _sens2(self.matrices[key], self.T, scheme)
        return self._sens2[key]


def _plan(run: RunSpec, correlations: _Correlations, T: int, scheme, clip, B: int) -> dict:
    """A run's correlation key and calibration ``{"mu", "sens2", "noise_std"}``."""
    key = correlations.key(run.noise)
    if not run.private:
        return {"key": key, "mu": None, "sens2": None, "noise_std": 0.0}
    mu = _target_mu(run.mu, run.epsilon, run.delta)
    sens2 = correlations.sens2(key, scheme)
    return {"key": key, "mu": mu, "sens2": sens2,
            "noise_std": _noise_std(sens2, 2.0 * clip / B, mu)}


class _NoiseBlocks:
    """Rows of ``L Z`` for every distinct L, formed ``BLOCK`` steps at a time when first asked
    for: ``(L Z)[t0:t1] = L[t0:t1, :t1] Z[:t1]`` when L is lower triangular (step t only uses
    ``Z_0..Z_t``), else ``L[t0:t1] Z`` (the noise uses later draws: Z is drawn in advance)."""

    BLOCK = 32

    def __init__(self, Z: np.ndarray, correlations: _Correlations):
        self.Z = Z
        self.correlations = correlations
        self.start = -1
        self.blocks: dict[int, np.ndarray] = {}

    def row(self, t: int, key: int) -> np.ndarray:
        L = self.correlations.matrices[key]
        if L is None:
            return self.Z[t]
        t0 = t - t % self.BLOCK
        if t0 != self.start:
            self.start, self.blocks = t0, {}
        if key not in self.blocks:
            t1 = min(t0 + self.BLOCK, self.Z.shape[0])
            width = self.Z.shape[0] if np.any(L[t0:t1, t1:]) else t1  # later draws used
            self.blocks[key] = L[t0:t1, :width] @ self.Z[:width]
        return self.blocks[key][t - t0]
