"""Private averaging consensus (PPAC, Fereydounian et al.) with information-theoretic leakage.

* :mod:`~sparsedp.ppac.protocol`: the protocol as a simulator (preparation and consensus
  phases, many realisations at once, the attacker's view, the generalised-leaf attack);
* :mod:`~sparsedp.ppac.information`: ``I(D_i(t); u_j)`` — scalable leverage computation, the
  paper's Thm 6.6 formula as a reference, a Monte-Carlo estimate, the large-noise limit;
* :mod:`~sparsedp.ppac.structure`: generalised leaves, privacy certificates, the informative
  sequence (exact arithmetic, :mod:`~sparsedp.ppac.exact`);
* :mod:`~sparsedp.ppac.convergence`: convergence-time bounds (Lemma B.5, eqs. 133, 144, 145)
  and the exact expected initial error.

Nodes (attackers, victims, heads, tails, designated neighbours) are the graph's labels in every
argument and result; W and per-node arrays follow the graph's node order.
"""

from sparsedp.ppac.convergence import ConvergenceBounds, convergence_bounds, expected_initial_error
from sparsedp.ppac.information import (
    LeakageResult,
    leakage,
    leakage_monte_carlo,
    leakage_noise_limit,
    leakage_theorem_6_6,
)
from sparsedp.ppac.protocol import (
    AttackerView,
    PPACLayout,
    Preparation,
    attacker_view,
    consensus_errors,
    convergence_times,
    laplacian_consensus_matrix,
    ppac_layout,
    prepare,
    random_designated,
)
from sparsedp.ppac.structure import (
    InformativeSequence,
    delayed_recovery,
    generalised_leaf_attack,
    generalised_leaves,
    informative_sequence,
    is_generalised_leaf,
    pair_status,
    victim_status,
)

__all__ = [
    "AttackerView",
    "ConvergenceBounds",
    "InformativeSequence",
    "LeakageResult",
    "PPACLayout",
    "Preparation",
    "attacker_view",
    "consensus_errors",
    "convergence_bounds",
    "convergence_times",
    "delayed_recovery",
    "expected_initial_error",
    "generalised_leaf_attack",
    "generalised_leaves",
    "informative_sequence",
    "is_generalised_leaf",
    "laplacian_consensus_matrix",
    "leakage",
    "leakage_monte_carlo",
    "leakage_noise_limit",
    "leakage_theorem_6_6",
    "pair_status",
    "ppac_layout",
    "prepare",
    "random_designated",
    "victim_status",
]
