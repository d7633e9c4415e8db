"""Matrix-factorisation accounting (Bellet et al., "Unified Privacy Guarantees for
Decentralized Learning via Matrix Factorization"): linear DL algorithms as ``O = A G + B Z``
under the LDP, PNDP and SecLDP trust models and the paper's participation schemes, with certified
bounds on Theorem 7's sensitivity.  docs/mf.md gives the matrix forms and conventions.

Imports ``gossip`` (the certified engine for DP-D-SGD under PNDP: an exception listed in the
import contract), ``linalg``, ``privacy``, base.
"""

from sparsedp.mf.algorithms import (
    Algorithm,
    antipgd,
    banded_square_root,
    decor,
    dp_d_sgd,
    mf_d_sgd,
    muffliato_sgd,
    square_root,
    with_resets,
    zip_dl,
)
from sparsedp.mf.linear_mechanism import linear_mechanism_sensitivity
from sparsedp.mf.local_correlations import (
    LocalCorrelations,
    node_grams,
    optimise_local_correlations,
)
from sparsedp.mf.participation import Participation, cyclic, single_use, user_level
from sparsedp.mf.result import MFResult
from sparsedp.mf.sensitivity import mf_sensitivity
from sparsedp.mf.trust import TRUST_MODELS

__all__ = [
    "TRUST_MODELS",
    "Algorithm",
    "LocalCorrelations",
    "MFResult",
    "Participation",
    "antipgd",
    "banded_square_root",
    "cyclic",
    "decor",
    "dp_d_sgd",
    "linear_mechanism_sensitivity",
    "mf_d_sgd",
    "mf_sensitivity",
    "muffliato_sgd",
    "node_grams",
    "optimise_local_correlations",
    "single_use",
    "square_root",
    "user_level",
    "with_resets",
    "zip_dl",
]
