"""The attacker's strongest attack: the sign pattern that maximises its estimated
distinguishability, found from simulated data only.

The simulated runs give the plug-in Gram matrix ``Q = S^T Sigma_hat^+ S`` of the attacker's
mean shifts ``S`` (one column per round or gradient step in which the target contributes 1;
:func:`sparsedp.audit.statistics.shift_gram`), so the contributions ``c`` in {-1, +1} shift
its records by ``S c`` at the estimated squared distance ``c^T Q c``.  The attacker takes the
``c`` maximising it (and, when several participation patterns are allowed, the pattern):

* exhaustively (:func:`sparsedp.linalg.kernels.max_sign_quadratic`) for at most
  ``EXHAUSTIVE_MAX`` signs;
* beyond, the best single-flip ascent (:func:`sparsedp.linalg.kernels.local_sign_search`)
  from the caller's starts (the engine's lower-bound signs), all-ones, alternating signs, the
  signs of the top eigenvectors of ``Q``, ``ROUNDINGS`` Gaussian roundings of ``Q``'s
  eigenvalue relaxation (``sign(V diag(sqrt(lambda)) z)``, Goemans-Williamson with the top
  eigenspace standing in for the SDP solution) and ``RANDOM_STARTS`` random sign vectors.

A shift outside the range of the noise is infinitely distinguishable: when some combination
leaves it (``O = S_out^T S_out != 0``) the attacker maximises ``c^T O c`` instead.  The search
uses only ``Q`` (simulations), never the engine's matrices; its choice is then measured on
fresh runs, where the exact interval of :func:`sparsedp.audit.statistics.mahalanobis` holds
for it.
"""

from __future__ import annotations

import numpy as np

from sparsedp.linalg.kernels import local_sign_search, max_sign_quadratic

__all__ = ["EXHAUSTIVE_MAX", "RANDOM_STARTS", "ROUNDINGS", "strongest_attack",
           "strongest_signs"]

EXHAUSTIVE_MAX = 20  # 2^19 sign classes: exhaustive in a fraction of a second
RANDOM_STARTS = 64
ROUNDINGS = 64
EIGENVECTOR_STARTS = 4
RELAXATION_RANK = 8


def strongest_signs(Q: np.ndarray, starts=(), seed: int = 0) -> tuple[float, np.ndarray]:
    """``max c^T Q c`` over sign vectors ``c`` (module docstring) and a maximiser; exact for
    at most ``EXHAUSTIVE_MAX`` signs, the best ascent from many starts beyond.  ``starts``:
    sign vectors to start from (the engine's signs); ``seed``: the random starts' and
    roundings' generator."""
    k = Q.shape[0]
    if k <= EXHAUSTIVE_MAX:
        return max_sign_quadratic(Q)
    rng = np.random.default_rng(seed)
    eigenvalues, vectors = np.linalg.eigh((Q + Q.T) / 2)
    top = vectors[:, ::-1][:, :EIGENVECTOR_STARTS]
    r = min(RELAXATION_RANK, k)
    relaxation = vectors[:, -r:] * np.sqrt(np.clip(eigenvalues[-r:], 0.0, None))
    alternating = np.where(np.arange(k) % 2 == 0, 1.0, -1.0)
    candidates = np.vstack([
        *[np.asarray(c, dtype=float).reshape(1, k) for c in starts],
        np.ones((1, k)), alternating[None, :], top.T,
        (relaxation @ rng.standard_normal((r, ROUNDINGS))).T,
        rng.choice([-1.0, 1.0], size=(RANDOM_STARTS, k)),
    ])
    return local_sign_search(Q, np.where(candidates < 0, -1.0, 1.0))


def strongest_attack(gram: tuple[np.ndarray, np.ndarray], patterns, starts=(), seed: int = 0
                     ) -> tuple[np.ndarray, np.ndarray]:
    """The pattern (indices into the columns of ``S``) and signs the attacker attacks, from
    ``gram = (Q, O)`` of :func:`~sparsedp.audit.statistics.shift_gram`: the maximiser of
    ``c^T O_pi c`` when some shift leaves the noise's range (an infinite distance), else of
    ``c^T Q_pi c``.  ``starts``: full-length sign vectors (one entry per column of ``S``),
    restricted to each pattern."""
    inside, outside = gram
    matrix = outside if np.any(outside) else inside
    best = None
    for steps in patterns:
        steps = np.asarray(steps)
        value, signs = strongest_signs(matrix[np.ix_(steps, steps)],
                                       [np.asarray(c)[steps] for c in starts], seed)
        if best is None or value > best[0]:
            best = (value, steps, signs)
    return best[1], best[2]
