"""Models of the learning simulator, vectorised over nodes, with hand-written per-example
gradients (needed for per-example clipping).

Parameters of all n nodes are stacked as ``theta`` (n x P); a batch is ``X`` (n x B x d),
``y`` (n x B).  Per-example losses and their gradients:

* ``linear_regression``: ``f = (x . w + c - y)^2``, ``grad = 2 r [x, 1]``, ``r = x . w + c - y``.
* ``logistic_regression`` (labels in {0, 1}): ``f = log(1 + e^z) - y z``, ``z = x . w + c``,
  ``grad = (sigmoid(z) - y) [x, 1]``.
* ``mlp`` (one hidden layer of width h, default 64, ReLU, linear output, squared error):
  ``a = x W1 + b1``, ``h = relu(a)``, ``p = h . w2 + b2``, ``f = (p - y)^2``; with
  ``r = 2 (p - y)``: ``dw2 = r h``, ``db2 = r``, ``da = r w2 1[a > 0]``, ``dW1 = x da^T``,
  ``db1 = da``.  Layout ``theta = [vec(W1) (d h, row-major), b1 (h), w2 (h), b2]``.

Initial parameters are the same at every node (``theta_0`` of eq. 5): zeros for the linear
models; He initialisation ``W1 ~ N(0, 2 / d)``, ``w2 ~ N(0, 1 / h)``, zero biases for the MLP.
``test_loss`` is the mean per-example loss of every node's model on a data set (n values);
for the MLP a numba kernel (:func:`sparsedp.linalg.kernels.mlp_mean_losses`, with a numpy
twin) computes it without forming the N x n x h hidden activations.

**Clipped mean gradient without per-example gradients** (``clipped_mean``: what the simulator
calls each step; ``grads`` keeps the per-example form for tests).  Every per-example gradient
here is a sum of outer products, so its norm comes from small factors:

* linear / logistic: ``g = f [x, 1]``, ``||g||^2 = f^2 (||x||^2 + 1)``;
* MLP: ``g = [x da^T, da, r h, r]``, ``||g||^2 = (||x||^2 + 1) ||da||^2 + r^2 (||h||^2 + 1)``.

With ``w_e = min(1, c / ||g_e||) / B`` the clipped mean is ``sum_e w_e g_e``: for the MLP
``dW1 = X^T diag(w) dA``, ``db1 = dA^T w``, ``dw2 = H^T (w r)``, ``db2 = w . r`` (the standard
"ghost clipping" identity), accumulated example by example in the numba kernel
:func:`sparsedp.linalg.kernels.mlp_clipped_mean` (numpy twin).  ``clip=None``: ``w_e = 1 / B``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from sparsedp.errors import ParameterError
from sparsedp.linalg.kernels import clip_weights, mlp_clipped_mean, mlp_mean_losses


@dataclass(frozen=True)
class Model:
    """A model: parameter count, initialisation, per-example gradients, per-node loss."""

    name: str
    task: str
    n_params: Callable[[int], int]
    init: Callable[[int, int, np.random.Generator], np.ndarray]
    grads: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
    losses: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
    clipped_mean: Callable[[np.ndarray, np.ndarray, np.ndarray, float | None], np.ndarray]
    mean_losses: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None = None

    def test_loss(self, theta: np.ndarray, X: np.ndarray, y: np.ndarray,
                  chunk: int = 4096) -> np.ndarray:
        """Mean loss of each node's model on ``(X, y)`` (X: N x d), n values."""
        if self.mean_losses is not None:
            return self.mean_losses(theta, X, y)
        total = np.zeros(theta.shape[0])
        for s in range(0, X.shape[0], chunk):
            total += self.losses(theta, X[s:s + chunk], y[s:s + chunk]).sum(axis=1)
        return total / X.shape[0]


def _affine_clipped_mean(X, factor, clip):
    """Clipped mean of ``g_e = f_e [x_e, 1]``: ``[sum_e w_e f_e x_e, sum_e w_e f_e]``."""
    wf = clip_weights(factor * factor * (np.einsum("nbd,nbd->nb", X, X) + 1.0), clip) * factor
    return np.concatenate([np.einsum("nbd,nb->nd", X, wf), wf.sum(axis=1)[:, None]], axis=1)


def _affine(theta, X):
    """``x . w + c`` for every node: X is n x B x d (per-node batch) or N x d (shared)."""
    w, c = theta[:, :-1], theta[:, -1]
    if X.ndim == 2:
        return w @ X.T + c[:, None]
    return np.einsum("nbd,nd->nb", X, w) + c[:, None]


def _with_one(X, factor):
    """Per-example gradient ``factor [x, 1]`` (n x B x (d + 1))."""
    return np.concatenate([X * factor[..., None], factor[..., None]], axis=-1)


def linear_regression() -> Model:
    """Least squares, per-example loss ``(x . w + c - y)^2``."""
    def grads(theta, X, y):
        return _with_one(X, 2.0 * (_affine(theta, X) - y))

    def losses(theta, X, y):
        return (_affine(theta, X) - y[None, :]) ** 2

    def clipped_mean(theta, X, y, clip):
        return _affine_clipped_mean(X, 2.0 * (_affine(theta, X) - y), clip)

    return Model("linear", "regression", lambda d: d + 1,
                 lambda n, d, rng: np.zeros((n, d + 1)), grads, losses, clipped_mean)


def _sigmoid(z):
    return 0.5 * (1.0 + np.tanh(0.5 * z))


def logistic_regression() -> Model:
    """Binary logistic regression (labels 0/1), per-example loss ``log(1 + e^z) - y z``."""
    def grads(theta, X, y):
        return _with_one(X, _sigmoid(_affine(theta, X)) - y)

    def losses(theta, X, y):
        z = _affine(theta, X)
        return np.logaddexp(0.0, z) - y[None, :] * z

    def clipped_mean(theta, X, y, clip):
        return _affine_clipped_mean(X, _sigmoid(_affine(theta, X)) - y, clip)

    return Model("logistic", "classification", lambda d: d + 1,
                 lambda n, d, rng: np.zeros((n, d + 1)), grads, losses, clipped_mean)


def mlp(width: int = 64) -> Model:
    """One hidden ReLU layer of ``width`` units, linear output, squared error."""
    if isinstance(width, bool) or not isinstance(width, (int, np.integer)) or width < 1:
        raise ParameterError(f"width must be a positive integer, got {width!r}")
    h = int(width)

    def unpack(theta, d):
        n = theta.shape[0]
        W1 = theta[:, : d * h].reshape(n, d, h)
        b1 = theta[:, d * h: d * h + h]
        w2 = theta[:, d * h + h: d * h + 2 * h]
        b2 = theta[:, -1]
        return W1, b1, w2, b2

    def init(n, d, rng):
        W1 = rng.standard_normal((d, h)) * np.sqrt(2.0 / d)
        w2 = rng.standard_normal(h) / np.sqrt(h)
        one = np.concatenate([W1.ravel(), np.zeros(h), w2, [0.0]])
        return np.tile(one, (n, 1))

    def grads(theta, X, y):
        d = X.shape[-1]
        W1, b1, w2, b2 = unpack(theta, d)
        a = np.matmul(X, W1) + b1[:, None, :]
        hid = np.maximum(a, 0.0)
        p = np.matmul(hid, w2[:, :, None])[..., 0] + b2[:, None]
        r = 2.0 * (p - y)
        da = r[..., None] * w2[:, None, :] * (a > 0)
        dW1 = (X[..., :, None] * da[..., None, :]).reshape(X.shape[0], X.shape[1], d * h)
        return np.concatenate([dW1, da, r[..., None] * hid, r[..., None]], axis=-1)

    def clipped_mean(theta, X, y, clip):
        return mlp_clipped_mean(theta, X, y, clip, h)

    def losses(theta, X, y):
        d = X.shape[-1]
        W1, b1, w2, b2 = unpack(theta, d)
        n = theta.shape[0]
        # one GEMM for all nodes: X (N x d) times [W1_1 ... W1_n] (d x n h)
        a = (X @ W1.transpose(1, 0, 2).reshape(d, n * h)).reshape(X.shape[0], n, h)
        a += b1[None]
        np.maximum(a, 0.0, out=a)
        p = np.einsum("Nnh,nh->nN", a, w2) + b2[:, None]
        return (p - y[None, :]) ** 2

    def mean_losses(theta, X, y):
        return mlp_mean_losses(theta, X, y, h)

    return Model(f"mlp({h})", "regression", lambda d: d * h + 2 * h + 1, init, grads, losses,
                 clipped_mean, mean_losses)


MODELS = {"linear": linear_regression, "logistic": logistic_regression, "mlp": mlp}
