"""Mechanism-level accounting: the Gaussian mechanism as mu-GDP, its tight (epsilon, delta)
curve, Renyi DP and its conversion to (epsilon, delta), and noise calibration.  Every family
turns its sensitivity into a guarantee here.

No paper of its own.  Imports nothing of the package but ``errors`` and ``validation``.
"""

from sparsedp.privacy import gaussian
from sparsedp.privacy.gaussian import *  # noqa: F403  (the public names of gaussian)

__all__ = list(gaussian.__all__)
