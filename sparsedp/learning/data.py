"""Data sets for the learning simulator, standardised and split uniformly across nodes.

``load_dataset(name)``:

* ``"synthetic"`` (always available; the default when scikit-learn is missing): a documented
  regression stand-in for California Housing (Bellet et al., Sec. 7.2: 8 features, 20 640
  points).  ``x ~ N(0, Sigma)`` in R^8 with ``Sigma_ij = 0.3^|i-j|``, and
  ``y = x . w + 0.5 tanh(x . v) + 0.25 (x_0 x_1) + 0.3 eps``, ``w, v ~ N(0, I / 8)``,
  ``eps ~ N(0, 1)``, all from ``numpy.random.default_rng(seed)``: a linear part the linear
  model can fit and a non-linear part only the MLP can.
* ``"synthetic-classification"``: the same x, label ``1[x . w + 0.3 eps > 0]`` (logistic
  regression).
* ``"diabetes"`` (regression), ``"digits"`` (binary: even vs odd digit) and
  ``"california"`` (``sklearn.datasets.fetch_california_housing``, which needs its file
  cached; without it the synthetic stand-in is used with a warning naming the reason) need
  scikit-learn; without scikit-learn they raise a one-line ParameterError naming the
  ``"synthetic"`` fallback.

Features are standardised with the training split's mean and standard deviation (constant
features are left centred); regression targets likewise.  ``split_uniform`` shuffles the
training points and deals them to the n nodes in equal shares (``m = floor(N / n)`` each; the
``N - n m`` left over are dropped and counted).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from sparsedp.errors import ParameterError

DATASETS = ("synthetic", "synthetic-classification", "diabetes", "digits", "california")


@dataclass(frozen=True)
class NodeData:
    """Training data dealt to n nodes (``X``: n x m x d, ``y``: n x m) and the test set."""

    X: np.ndarray
    y: np.ndarray
    X_test: np.ndarray
    y_test: np.ndarray
    task: str               # "regression" or "classification"
    name: str
    dropped: int = 0

    @property
    def n(self) -> int:
        return self.X.shape[0]

    @property
    def m(self) -> int:
        return self.X.shape[1]


def _check_finite(X, y, name):
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
        bad = int(np.sum(~np.isfinite(X))) + int(np.sum(~np.isfinite(y)))
        raise ParameterError(f"data set {name!r} has {bad} NaN or infinite values: clean or "
                             "impute them first")


def synthetic_regression(n_samples: int = 20_640, d: int = 8, seed: int = 0,
                         classification: bool = False):
    """The documented synthetic stand-in (module docstring): ``(X, y)``."""
    rng = np.random.default_rng(seed)
    idx = np.arange(d)
    cov = 0.3 ** np.abs(idx[:, None] - idx[None, :])
    X = rng.multivariate_normal(np.zeros(d), cov, size=n_samples)
    w = rng.standard_normal(d) / np.sqrt(d)
    v = rng.standard_normal(d) / np.sqrt(d)
    eps = rng.standard_normal(n_samples)
    if classification:
        return X, (X @ w + 0.3 * eps > 0).astype(np.float64)
    y = X @ w + 0.5 * np.tanh(X @ v) + 0.25 * X[:, 0] * X[:, 1] + 0.3 * eps
    return X, y


def _sklearn(name):
    try:
        import sklearn.datasets as skd  # optional dependency, not installed in every setup
    except ImportError as exc:
        raise ParameterError(f"data set {name!r} needs scikit-learn, which is not installed: "
                             "use 'synthetic' (a documented stand-in)") from exc
    if name == "diabetes":
        X, y = skd.load_diabetes(return_X_y=True)
        return X, y, "regression"
    if name == "digits":
        X, y = skd.load_digits(return_X_y=True)
        return X, (y % 2).astype(np.float64), "classification"
    try:
        X, y = skd.fetch_california_housing(return_X_y=True, download_if_missing=False)
    except OSError as exc:
        warnings.warn(f"California Housing is not cached ({exc}); using the synthetic "
                      "stand-in instead", stacklevel=3)
        X, y = synthetic_regression()
    return X, y, "regression"


def load_dataset(name: str = "synthetic", *, test_fraction: float = 0.2, seed: int = 0):
    """``(X_train, y_train, X_test, y_test, task)``, standardised (module docstring)."""
    if name not in DATASETS:
        raise ParameterError(f"unknown data set {name!r}; valid: {', '.join(DATASETS)}")
    if name == "synthetic":
        X, y = synthetic_regression(seed=seed)
        task = "regression"
    elif name == "synthetic-classification":
        X, y = synthetic_regression(seed=seed, classification=True)
        task = "classification"
    else:
        X, y, task = _sklearn(name)
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    _check_finite(X, y, name)
    if not 0 < test_fraction < 1:
        raise ParameterError(f"test_fraction must be in (0, 1), got {test_fraction!r}")
    perm = np.random.default_rng(seed + 1).permutation(len(y))
    n_test = max(1, int(round(test_fraction * len(y))))
    te, tr = perm[:n_test], perm[n_test:]
    mean, std = X[tr].mean(axis=0), X[tr].std(axis=0)
    std[std == 0] = 1.0
    X = (X - mean) / std
    if task == "regression":
        y = (y - y[tr].mean()) / y[tr].std()
    return X[tr], y[tr], X[te], y[te], task


def split_uniform(X, y, X_test, y_test, n: int, *, task: str = "regression", seed: int = 0,
                  name: str = "data") -> NodeData:
    """Shuffle the training points and deal them to n nodes in equal shares."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    _check_finite(X, y, name)
    _check_finite(np.asarray(X_test, float), np.asarray(y_test, float), name + " (test)")
    if X.ndim != 2 or y.shape != (X.shape[0],):
        raise ParameterError(f"X must be N x d and y of length N, got {X.shape} and {y.shape}")
    m = X.shape[0] // n
    if m < 1:
        raise ParameterError(f"{X.shape[0]} training points cannot be split across {n} nodes")
    perm = np.random.default_rng(seed).permutation(X.shape[0])[: n * m]
    return NodeData(X=X[perm].reshape(n, m, -1), y=y[perm].reshape(n, m),
                    X_test=np.asarray(X_test, float), y_test=np.asarray(y_test, float),
                    task=task, name=name, dropped=X.shape[0] - n * m)
