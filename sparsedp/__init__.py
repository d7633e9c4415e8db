"""sparsedp: differential-privacy accounting for decentralized learning on large sparse graphs.

Typical use::

    import networkx as nx, sparsedp
    G = nx.erdos_renyi_graph(1000, 0.01, seed=1)
    W = sparsedp.gossip_matrix(G, scheme="metropolis")
    r = sparsedp.squared_sensitivity(W, target=7, observers=[3], T=200)
    sparsedp.gaussian_epsilon(r.upper, sigma=5.0, delta=1e-5)

numba kernels are compiled on first use, so importing the package stays fast.

Layout (docs/architecture.md): ``graphs`` (input, gossip matrices), ``linalg`` (the shared
numerical engine), ``privacy`` (mechanism-level accounting), one subpackage per paper family
(``gossip``, ``randomwalk``, ``ppac``, ``mf``), ``cli``, and ``testing`` (dense references).
"""

from sparsedp.accountant import (
    Accountant,
    GraphAccountant,
    MFAccountant,
    ObserversAccountant,
    RandomWalkAccountant,
    TargetsAccountant,
)
from sparsedp.errors import (
    GossipMatrixError,
    GraphError,
    NodeIndexError,
    NodeLabelError,
    ParameterError,
    SparseDPError,
)
from sparsedp.gossip import Bound, SensitivityResult, estimate_cost, squared_sensitivity
from sparsedp.gossip.closed_forms import (
    ClosedForm,
    certified_rho,
    eq54_bound,
    eq55_sigma,
    eq56_sigma,
    thm13_rate,
    thm13_rate_for,
    thm15_bound,
    thm15_bound_for,
    thm16_rate,
    thm16_rate_for,
    thm17_utility_estimate,
)
from sparsedp.graphs import Graph, as_graph, gossip_matrix, read_edge_list, synthetic_social_graph
from sparsedp.linalg.spectral import SpectralInfo, spectral_info
from sparsedp.linalg.stochastic import check_gossip_matrix, gossip_properties, lock_gossip_matrix
from sparsedp.maps import (
    PrivacyMap,
    WorstCase,
    mf_map,
    per_target_worst_case,
    privacy_map,
    random_walk_map,
    read_map,
    write_map,
)
from sparsedp.mf import (
    MFResult,
    banded_square_root,
    linear_mechanism_sensitivity,
    mf_sensitivity,
    optimise_local_correlations,
    square_root,
    with_resets,
)
from sparsedp.ppac import laplacian_consensus_matrix, ppac_layout
from sparsedp.ppac import leakage as ppac_leakage
from sparsedp.privacy import (
    calibrate_sigma,
    calibrate_sigma_classical,
    gaussian_delta,
    gaussian_epsilon,
    gaussian_mu,
    gaussian_rdp_epsilon,
    rdp_epsilon,
    rdp_to_dp,
)
from sparsedp.randomwalk import (
    PairwiseLoss,
    log_green_columns,
    log_pseudo_determinant,
    muffliato_rdp,
    random_walk_mean_rdp,
    random_walk_rdp,
)
from sparsedp.version import package_version

__version__ = package_version()  # pyproject.toml's, from the installed metadata

__all__ = [
    "Accountant",
    "GraphAccountant",
    "ObserversAccountant",
    "TargetsAccountant",
    "Bound",
    "ClosedForm",
    "GossipMatrixError",
    "Graph",
    "GraphError",
    "MFAccountant",
    "MFResult",
    "NodeIndexError",
    "NodeLabelError",
    "PairwiseLoss",
    "PrivacyMap",
    "RandomWalkAccountant",
    "WorstCase",
    "ParameterError",
    "SensitivityResult",
    "SparseDPError",
    "SpectralInfo",
    "as_graph",
    "banded_square_root",
    "calibrate_sigma",
    "calibrate_sigma_classical",
    "certified_rho",
    "check_gossip_matrix",
    "eq54_bound",
    "eq55_sigma",
    "eq56_sigma",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_mu",
    "gaussian_rdp_epsilon",
    "gossip_matrix",
    "gossip_properties",
    "laplacian_consensus_matrix",
    "linear_mechanism_sensitivity",
    "lock_gossip_matrix",
    "log_green_columns",
    "log_pseudo_determinant",
    "mf_map",
    "mf_sensitivity",
    "muffliato_rdp",
    "optimise_local_correlations",
    "ppac_layout",
    "privacy_map",
    "per_target_worst_case",
    "ppac_leakage",
    "random_walk_map",
    "random_walk_mean_rdp",
    "random_walk_rdp",
    "rdp_epsilon",
    "rdp_to_dp",
    "read_edge_list",
    "read_map",
    "spectral_info",
    "square_root",
    "squared_sensitivity",
    "estimate_cost",
    "synthetic_social_graph",
    "thm13_rate",
    "thm13_rate_for",
    "thm15_bound",
    "thm15_bound_for",
    "thm16_rate",
    "thm16_rate_for",
    "thm17_utility_estimate",
    "with_resets",
    "write_map",
]
