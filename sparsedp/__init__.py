"""sparsedp: differential-privacy accounting for decentralized learning on large sparse graphs.

Typical use::

    import networkx as nx, sparsedp
    G = nx.erdos_renyi_graph(1000, 0.01, seed=1)
    W = sparsedp.gossip_matrix(G, scheme="metropolis")
    r = sparsedp.squared_sensitivity(W, target=7, observers=[3], T=200)
    sparsedp.gaussian_epsilon(r.upper, sigma=5.0, delta=1e-5)

numba kernels are compiled on first use, so importing the package stays fast.
"""

from .errors import GossipMatrixError, GraphError, ParameterError, SparseDPError
from .gossip import check_gossip_matrix, gossip_matrix, gossip_properties
from .gossip_closed_forms import (
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
from .graphs import Graph, as_graph, read_edge_list, synthetic_social_graph
from .log_green import log_green_columns, log_pseudo_determinant
from .muffliato import muffliato_rdp
from .pairwise import PairwiseLoss
from .ppac import laplacian_consensus_matrix, ppac_layout
from .ppac import leakage as ppac_leakage
from .privacy import (
    calibrate_sigma,
    calibrate_sigma_classical,
    gaussian_delta,
    gaussian_epsilon,
    gaussian_mu,
    gaussian_rdp_epsilon,
    rdp_epsilon,
    rdp_to_dp,
)
from .randomwalk import random_walk_mean_rdp, random_walk_rdp
from .sensitivity import Bound, SensitivityResult, squared_sensitivity
from .spectral import SpectralInfo, spectral_info

__version__ = "0.1.0"

__all__ = [
    "Bound",
    "ClosedForm",
    "GossipMatrixError",
    "Graph",
    "GraphError",
    "PairwiseLoss",
    "ParameterError",
    "SensitivityResult",
    "SparseDPError",
    "SpectralInfo",
    "as_graph",
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
    "log_green_columns",
    "log_pseudo_determinant",
    "muffliato_rdp",
    "ppac_layout",
    "ppac_leakage",
    "random_walk_mean_rdp",
    "random_walk_rdp",
    "rdp_epsilon",
    "rdp_to_dp",
    "read_edge_list",
    "spectral_info",
    "squared_sensitivity",
    "synthetic_social_graph",
    "thm13_rate",
    "thm13_rate_for",
    "thm15_bound",
    "thm15_bound_for",
    "thm16_rate",
    "thm16_rate_for",
    "thm17_utility_estimate",
]
