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
``mf_d_sgd(L)`` under ``"ldp"`` and the scheme (Theorem 7; the noise is drawn once for the
whole run: ``(L Z)`` for all steps, ``L`` lower triangular so step t only uses ``Z_0..Z_t``).
A target ``(epsilon, delta)`` is turned into mu by :func:`sparsedp.privacy.gdp_mu_for` (the
largest mu whose tight GDP profile meets it).  ``clip=None`` and no privacy target is
non-private D-SGD.

Randomness: ``seed`` spawns two streams (``numpy.random.SeedSequence``): the model
initialisation and the noise.  The data split is fixed beforehand
(:func:`sparsedp.learning.data.split_uniform`).  With ``sigma = 0`` and ``W = J / n`` every
node holds the centralized SGD iterate on the union of the node batches (test:
``tests/test_mafalda_learning.py``).
"""

from __future__ import annotations

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


def calibrate_noise(noise, T: int, scheme, *, mu=None, epsilon=None, delta=None,
                    delta_per_step: float = 1.0) -> dict:
    """Standard deviation of ``Z`` for a target mu-GDP or (epsilon, delta) (module docstring).

    ``delta_per_step`` is the gradient sensitivity ``Delta`` of one step.  Returns ``{"mu",
    "sens2", "noise_std"}``; ParameterError when the target is infeasible (mu or epsilon not
    > 0, delta outside (0, 1), or an infinite sensitivity: the correlation leaves a
    participating step without noise)."""
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
    L = np.eye(T) if noise is None else np.asarray(noise, dtype=np.float64)
    r = mf_sensitivity(np.ones((1, 1)), 0, None, T, algorithm=mf_d_sgd(L), trust_model="ldp",
                       participation_scheme=scheme)
    if not np.isfinite(r.upper):
        raise ParameterError("infeasible privacy target: the noise correlation's sensitivity is "
                             "infinite (a participating step gets no noise)")
    return {"mu": mu, "sens2": float(r.upper),
            "noise_std": float(np.sqrt(r.upper) * delta_per_step / mu)}


@limit_blas_threads
def simulate(W, data: NodeData, model: Model, T: int, *, participation=(20, 19),
             lr: float = 0.05, clip: float | None = 1.0, noise=None, mu=None, epsilon=None,
             delta=None, seed=0, eval_every: int = 10, progress=None) -> SimulationResult:
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
    noise : ``L = C_local^+`` as applied (T x T lower triangular; ``None``: identity).
    mu, epsilon, delta : the privacy target (none: non-private, no noise).
    seed : seed of the initialisation and the noise.
    eval_every : test loss every this many steps (and at the end).
    progress : tqdm bar (``None`` automatic).

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
    private = mu is not None or epsilon is not None
    if private and clip is None:
        raise ParameterError("a private run needs a clipping norm (clip)")
    if clip is not None:
        clip = validation.real("clip", clip)
        if not (np.isfinite(clip) and clip > 0):
            raise ParameterError(f"clip must be > 0 and finite, got {clip!r}")
    L = None if noise is None else np.asarray(noise, dtype=np.float64)
    if L is not None and L.shape != (T, T):
        raise ParameterError(f"noise correlation is {L.shape}, the run has T = {T} steps")
    cal = {"mu": None, "sens2": None, "noise_std": 0.0}
    if private:
        cal = calibrate_noise(L, T, scheme, mu=mu, epsilon=epsilon, delta=delta,
                              delta_per_step=2.0 * clip / B)
    init_ss, noise_ss = np.random.SeedSequence(seed).spawn(2)
    theta = model.init(n, d, np.random.default_rng(init_ss))
    P = theta.shape[1]
    N = None
    if cal["noise_std"] > 0:
        Z = np.random.default_rng(noise_ss).standard_normal((T, n * P)) * cal["noise_std"]
        N = Z if L is None else L @ Z
        del Z
    steps, losses = [], []
    bar = progress_bar(progress, total=T, desc=f"MF-D-SGD {model.name}", unit="step")
    for t in range(T):
        j = t % b
        g = model.grads(theta, data.X[:, j * B:(j + 1) * B], data.y[:, j * B:(j + 1) * B])
        if clip is not None:
            norms = np.sqrt(np.einsum("nbp,nbp->nb", g, g))
            g = g * np.minimum(1.0, clip / np.maximum(norms, 1e-300))[..., None]
        step = g.mean(axis=1)
        if N is not None:
            step = step + N[t].reshape(n, P)
        theta = W @ (theta - lr * step)
        if (t + 1) % eval_every == 0 or t == T - 1:
            steps.append(t + 1)
            losses.append(model.test_loss(theta, data.X_test, data.y_test).mean())
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    final = model.test_loss(theta, data.X_test, data.y_test)
    eps = None
    if private and delta is not None:
        eps = gdp_epsilon(cal["mu"], validation.probability_delta(delta))
    notes = (f"cyclic({k},{b}): batches of {B} records per node, Delta = 2 clip / B"
             if private else "non-private: no noise",)
    return SimulationResult(steps=np.array(steps), test_loss=np.array(losses),
                            final_node_losses=final, theta=theta, mu=cal["mu"], epsilon=eps,
                            delta=delta, sens2=cal["sens2"], noise_std=cal["noise_std"],
                            batch=B, notes=notes)
