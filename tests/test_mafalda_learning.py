"""The private decentralized learning simulator (sparsedp.learning): reproducibility, agreement
with an independent centralized SGD when W = J/n and sigma = 0, the gradients against finite
differences, the noise calibration against the accounting, bad input."""

import importlib.util
import warnings

import numpy as np
import pytest

from sparsedp.errors import ParameterError
from sparsedp.graphs.weights import gossip_matrix
from sparsedp.learning import (
    RunSpec,
    calibrate_noise,
    linear_regression,
    load_dataset,
    logistic_regression,
    mlp,
    simulate,
    simulate_runs,
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


@pytest.mark.parametrize("make", [linear_regression, logistic_regression, lambda: mlp(6)])
@pytest.mark.parametrize("clip", [None, 0.05, 1e6])
def test_clipped_mean_equals_clipping_each_per_example_gradient(make, clip):
    """The simulator's step (norms from the outer-product factors, no per-example gradients)
    against clipping the explicit per-example gradients one by one."""
    model = make()
    rng = np.random.default_rng(5)
    n, B, d = 7, 5, 4
    theta = rng.standard_normal((n, model.n_params(d)))
    X = rng.standard_normal((n, B, d))
    y = (rng.integers(0, 2, (n, B)).astype(float) if model.task == "classification"
         else rng.standard_normal((n, B)))
    g = model.grads(theta, X, y)
    if clip is not None:
        norms = np.linalg.norm(g, axis=2, keepdims=True)
        g = g * np.minimum(1.0, clip / norms)
    np.testing.assert_allclose(model.clipped_mean(theta, X, y, clip), g.mean(axis=1),
                               rtol=1e-12, atol=1e-14 * np.abs(g).max())


def test_runs_together_equal_each_run_alone_bit_for_bit():
    """simulate_runs: non-private, DP-D-SGD, a correlated L at two levels, a dense random
    lower-triangular L and an (epsilon, delta) target, each equal to its own simulate call."""
    G = connected_instance("er", 10, 1)
    W = gossip_matrix(G, scheme="metropolis")
    data = small_data(n=10, m=12, d=4)
    T = 6
    L = antipgd().noise_matrix(T)
    full = np.eye(T) + np.tril(0.2 * np.random.default_rng(0).standard_normal((T, T)), -1)
    specs = [RunSpec(), RunSpec(mu=1.0), RunSpec(noise=L, mu=0.5), RunSpec(noise=L, mu=2.0),
             RunSpec(noise=full, mu=1.0), RunSpec(noise=L, epsilon=3.0, delta=1e-5)]
    kw = dict(participation=(2, 3), lr=0.05, clip=1.0, seed=4, eval_every=2, progress=False)
    together = simulate_runs(W, data, mlp(5), T, specs, **kw)
    for spec, r in zip(specs, together, strict=True):
        alone = simulate(W, data, mlp(5), T, noise=spec.noise, mu=spec.mu,
                         epsilon=spec.epsilon, delta=spec.delta, **kw)
        assert np.array_equal(alone.theta, r.theta)
        assert np.array_equal(alone.test_loss, r.test_loss)
        assert np.array_equal(alone.final_node_losses, r.final_node_losses)
        assert (alone.sens2, alone.noise_std, alone.epsilon) == (r.sens2, r.noise_std,
                                                                 r.epsilon)
    # the same draw Z scaled: runs 2 and 3 differ only in the noise level, and differ
    assert together[2].noise_std == pytest.approx(4 * together[3].noise_std, rel=1e-15)
    assert not np.array_equal(together[2].theta, together[3].theta)
    np.testing.assert_allclose(together[-1].final_node_losses,
                               mlp(5).test_loss(together[-1].theta, data.X_test,
                                                data.y_test), rtol=1e-12)


def test_simulate_runs_bad_input():
    data = small_data()
    W = np.full((4, 4), 0.25)
    kw = dict(participation=(2, 3), progress=False)
    with pytest.raises(ParameterError, match="no runs"):
        simulate_runs(W, data, linear_regression(), 6, [], **kw)
    with pytest.raises(ParameterError, match="needs a clipping norm"):
        simulate_runs(W, data, linear_regression(), 6, [RunSpec(), RunSpec(mu=1.0)],
                      clip=None, **kw)
    with pytest.raises(ParameterError, match="noise correlation is"):
        simulate_runs(W, data, linear_regression(), 6, [RunSpec(noise=np.eye(5), mu=1.0)],
                      **kw)


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


def test_scikit_learn_data_sets_load_standardised_and_train():
    """The real loaders (scikit-learn's bundled diabetes and digits; California Housing from
    its cache, else the stand-in with a warning), then a short private logistic-regression run
    on digits (parity labels) that beats the zero model's log 2."""
    pytest.importorskip("sklearn")
    Xtr, ytr, Xte, yte, task = load_dataset("diabetes")
    assert task == "regression" and Xtr.shape == (354, 10) and Xte.shape == (88, 10)
    np.testing.assert_allclose(Xtr.mean(axis=0), 0, atol=1e-12)
    np.testing.assert_allclose(Xtr.std(axis=0), 1, rtol=1e-12)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        Xc = load_dataset("california")[0]
    assert Xc.shape == (16512, 8)
    assert all("not cached" in str(w.message) for w in caught)
    Xtr, ytr, Xte, yte, task = load_dataset("digits")
    assert task == "classification" and set(np.unique(ytr)) == {0.0, 1.0}
    data = split_uniform(Xtr, ytr, Xte, yte, 6, task=task, seed=0)
    W = gossip_matrix(connected_instance("er", 6, 0), scheme="metropolis")
    r = simulate(W, data, logistic_regression(), 30, participation=(2, 15), lr=0.5, clip=1.0,
                 epsilon=8.0, delta=1e-5, seed=0, progress=False)
    assert r.test_loss[-1] < 0.9 * np.log(2)
