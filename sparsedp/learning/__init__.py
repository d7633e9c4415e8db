"""Private decentralized learning simulator (issue 15, MAFALDA-SGD): MF-D-SGD (Bellet et al.,
Algorithm 1) vectorised over nodes, with any local noise correlation, per-example clipping,
noise calibrated from a target mu-GDP or (epsilon, delta) through :mod:`sparsedp.privacy` and
the sensitivity of :mod:`sparsedp.mf`, cyclic (k, b) participation; linear regression,
logistic regression and a one-hidden-layer ReLU MLP with hand-written gradients.

Imports ``mf`` (the sensitivity of the correlation), ``privacy``, ``linalg``, base.
"""

from sparsedp.learning.data import NodeData, load_dataset, split_uniform, synthetic_regression
from sparsedp.learning.models import MODELS, Model, linear_regression, logistic_regression, mlp
from sparsedp.learning.simulator import (
    RunSpec,
    SimulationResult,
    calibrate_noise,
    simulate,
    simulate_runs,
)

__all__ = [
    "MODELS",
    "Model",
    "NodeData",
    "RunSpec",
    "SimulationResult",
    "calibrate_noise",
    "linear_regression",
    "load_dataset",
    "logistic_regression",
    "mlp",
    "simulate",
    "simulate_runs",
    "split_uniform",
    "synthetic_regression",
]
