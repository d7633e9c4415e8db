"""Interoperability with Google's ``dp_accounting``, the library most users compose privacy
budgets in (optional: ``pip install sparsedp[dp]``).

Every result of this package that is a Gaussian mechanism with squared sensitivity
``Delta^2`` and noise ``sigma`` is, in ``dp_accounting``'s terms, one
``GaussianDpEvent(noise_multiplier = sigma / Delta)`` (sensitivity normalised to 1): the whole
T-round view of gossip averaging is *one* such event, not T of them.  Compose it with other
events as usual (``ComposedDpEvent``, ``SelfComposedDpEvent``) and hand it to any accountant
(``PLDAccountant``, ``RdpAccountant``).  The event is built from the **certified upper
bound** of the sensitivity, so the accountants' epsilons are never below the true ones (up to
their own discretisation).  Tested: PLD within 1e-3 of :func:`sparsedp.gaussian_epsilon`, RDP
equal to :func:`sparsedp.gaussian_rdp_epsilon` at the same order.
"""

from __future__ import annotations

import math

from sparsedp import validation
from sparsedp.errors import ParameterError

__all__ = ["gaussian_dp_event"]


def gaussian_dp_event(squared_sensitivity: float, sigma: float):
    """The ``dp_accounting`` event of a Gaussian mechanism: ``GaussianDpEvent(sigma / Delta)``;
    ``NoOpDpEvent`` for ``Delta = 0`` (nothing is learned) and ``NonPrivateDpEvent`` for an
    infinite sensitivity (no privacy).

    Examples
    --------
    >>> from dp_accounting.pld import pld_privacy_accountant
    >>> accountant = pld_privacy_accountant.PLDAccountant()
    >>> _ = accountant.compose(gaussian_dp_event(4.0, sigma=10.0))   # mu = 2 / 10
    >>> round(accountant.get_epsilon(1e-5), 2)
    0.73
    """
    try:
        import dp_accounting
    except ImportError as exc:  # an optional extra
        raise ParameterError(
            "dp_accounting is not installed: pip install 'sparsedp[dp]' (or dp-accounting)"
        ) from exc
    sigma = validation.sigma(sigma)
    d2 = float(squared_sensitivity)
    if math.isinf(d2):
        return dp_accounting.NonPrivateDpEvent()
    d2 = validation.nonnegative("squared_sensitivity", d2)
    if d2 == 0.0:
        return dp_accounting.NoOpDpEvent()
    return dp_accounting.GaussianDpEvent(noise_multiplier=sigma / math.sqrt(d2))
