"""The private decentralized learning simulator (sparsedp.learning): reproducibility, agreement
with an independent centralized SGD when W = J/n and sigma = 0, the gradients against finite
differences, the noise calibration against the accounting, bad input."""

import importlib.util

import numpy as np
import pytest

from sparsedp.errors import ParameterError
from sparsedp.graphs.weights import gossip_matrix
from sparsedp.learning import (
    calibrate_noise,
    linear_regression,
    load_dataset,
    logistic_regression,
    mlp,
    simulate,
    split_uniform,
    synthetic_regression,
)
from sparsedp.mf import antipgd, cyclic, mf_sensitivity
from sparsedp.privacy import gdp_mu_for
from tests.conftest import connected_instance


def small_data(n=4, m=12, d=3, seed=0, classification=False):
    X, y = synthetic_regression(n_samples=n * m + 40, d=d, seed=seed,
                                classification=classification)
    return split_uniform(X[: n * m], y[: n * m], X[n * m:], y[n * m:], n, seed=seed,
                         task="classification" if classification else "regression")


# ----------------------------------------------------------- an independent reference
def ref_example_grad(kind, theta, x, y, d, h=5):
    """Per-example gradient written out directly for one example and one parameter vector."""
    if kind in ("linear", "logistic"):
        z = float(theta[:d] @ x + theta[d])
        r = 2 * (z - y) if kind == "linear" else 1 / (1 + np.exp(-z)) - y
        return np.append(r * x, r)
    W1 = theta[: d * h].reshape(d, h)
    b1 = theta[d * h: d * h + h]
    w2 = theta[d * h + h: d * h + 2 * h]
    b2 = theta[-1]
    a = x @ W1 + b1
    hid = np.where(a > 0, a, 0.0)
    r = 2 * (hid @ w2 + b2 - y)
    da = r * w2 * (a > 0)
    return np.concatenate([np.outer(x, da).ravel(), da, r * hid, [r]])


def centralized_sgd(kind, theta0, data, T, b, lr, clip, h=5):
    """Plain SGD on the union of the node batches, per-example clipping, one loop."""
    n, m, d = data.X.shape
    B = m // b
    theta = theta0.copy()
    for t in range(T):
        j = t % b
        gs = []
        for u in range(n):
            for i in range(j * B, (j + 1) * B):
                g = ref_example_grad(kind, theta, data.X[u, i], data.y[u, i], d, h)
                if clip is not None:
                    g = g * min(1.0, clip / np.linalg.norm(g))
                gs.append(g)
        theta = theta - lr * np.mean(gs, axis=0)
    return theta


@pytest.mark.parametrize("kind", ["linear", "logistic", "mlp"])
@pytest.mark.parametrize("clip", [None, 0.5])
def test_complete_graph_sigma0_is_centralized_sgd(kind, clip):
    data = small_data(classification=kind == "logistic")
    model = {"linear": linear_regression(), "logistic": logistic_regression(),
             "mlp": mlp(5)}[kind]
    n = data.n
    W = np.full((n, n), 1.0 / n)
    T, (k, b) = 6, (2, 3)
    r = simulate(W, data, model, T, participation=(k, b), lr=0.1, clip=clip, seed=3,
                 progress=False)
    theta0 = model.init(1, data.X.shape[2], np.random.default_rng(
        np.random.SeedSequence(3).spawn(2)[0]))[0]
    ref = centralized_sgd(kind, theta0, data, T, b, 0.1, clip)
    scale = max(1.0, np.abs(ref).max())
    assert np.abs(r.theta - ref[None, :]).max() <= 1e-12 * scale


@pytest.mark.parametrize("kind", ["linear", "logistic", "mlp"])
def test_gradients_match_finite_differences(kind):
    data = small_data(n=2, m=6, classification=kind == "logistic")
    model = {"linear": linear_regression(), "logistic": logistic_regression(),
             "mlp": mlp(5)}[kind]
    rng = np.random.default_rng(1)
    theta = model.init(2, 3, rng) + 0.3 * rng.standard_normal((2, model.n_params(3)))
    X, y = data.X[:, :2], data.y[:, :2]
    g = model.grads(theta, X, y)
    eps = 1e-6
    for p in range(theta.shape[1]):
        e = np.zeros_like(theta)
        e[:, p] = eps
        for u in range(2):
            fp = model.losses(theta + e, X[u], y[u])[u]
            fm = model.losses(theta - e, X[u], y[u])[u]
            np.testing.assert_allclose((fp - fm) / (2 * eps), g[u, :, p], rtol=1e-5,
                                       atol=1e-7)


def test_seeded_run_is_reproducible_bit_for_bit():
    G = connected_instance("er", 12, 0)
    W = gossip_matrix(G, scheme="metropolis")
    data = small_data(n=12, m=12, d=4)
    L = antipgd().noise_matrix(6)
    kw = dict(participation=(2, 3), lr=0.05, clip=1.0, noise=L, mu=1.0, progress=False,
              eval_every=2)
    a = simulate(W, data, mlp(7), 6, seed=11, **kw)
    b = simulate(W, data, mlp(7), 6, seed=11, **kw)
    c = simulate(W, data, mlp(7), 6, seed=12, **kw)
    assert np.array_equal(a.theta, b.theta) and np.array_equal(a.test_loss, b.test_loss)
    assert not np.array_equal(a.theta, c.theta)


def test_noise_calibration_uses_the_accounting():
    T, scheme = 12, cyclic(3, 4)
    L = antipgd().noise_matrix(T)
    cal = calibrate_noise(L, T, scheme, epsilon=2.0, delta=1e-6, delta_per_step=0.25)
    acc = mf_sensitivity(np.ones((1, 1)), 0, None, T, algorithm=antipgd(), trust_model="ldp",
                         participation_scheme=scheme)
    assert cal["sens2"] == acc.upper
    assert cal["mu"] == gdp_mu_for(2.0, 1e-6)
    assert cal["noise_std"] == pytest.approx(np.sqrt(acc.upper) * 0.25 / cal["mu"], rel=1e-15)
    # independent noise: sens^2 = k exactly
    assert calibrate_noise(None, T, scheme, mu=1.0)["sens2"] == pytest.approx(3, rel=1e-12)


def test_bad_input():
    data = small_data()
    W = np.full((4, 4), 0.25)
    with pytest.raises(ParameterError, match="not a multiple of the participation period"):
        simulate(W, data, linear_regression(), 7, participation=(2, 3), progress=False)
    with pytest.raises(ParameterError, match="infeasible privacy target"):
        simulate(W, data, linear_regression(), 6, participation=(2, 3), epsilon=0.0,
                 delta=1e-6, progress=False)
    with pytest.raises(ParameterError, match="infeasible privacy target"):
        simulate(W, data, linear_regression(), 6, participation=(2, 3), mu=-1.0,
                 progress=False)
    singular = np.diag([1.0, 1, 1, 0, 1, 1])
    with pytest.raises(ParameterError, match="infeasible privacy target"):
        simulate(W, data, linear_regression(), 6, participation=(2, 3), noise=singular,
                 mu=1.0, progress=False)
    X, y = synthetic_regression(n_samples=50, d=3)
    X[3, 1] = np.nan
    with pytest.raises(ParameterError, match="NaN"):
        split_uniform(X, y, X[:5], y[:5], 4)
    with pytest.raises(ParameterError, match="unknown data set"):
        load_dataset("housing")
    if importlib.util.find_spec("sklearn") is None:
        with pytest.raises(ParameterError, match="needs scikit-learn.*synthetic"):
            load_dataset("diabetes")
