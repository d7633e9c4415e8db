"""The defaults of every job, declared once: the library's signatures and the command line's
options read them from here, so ``privacy_map(G)`` and ``sparsedp map --graph G`` run the same
request (``tests/test_defaults.py`` compares both sides, job by job).

A parameter that a library function requires (the rounds ``T`` of
:func:`sparsedp.squared_sensitivity`, the noise of :func:`sparsedp.random_walk_rdp`) has no
default there; where the command offers one, it is the value declared here for that job.

The ``DEMO_*`` values are not defaults: they apply only to a command's embedded example (no
``--graph``, no ``--generator``), to keep it a demonstration that finishes in seconds, and
only to the options the user left out.  Each command's ``--help`` says so.
"""

from __future__ import annotations

import math
from typing import Final

# Shared by every family that takes them.
ROUNDS = 100            # T: gossip accounting, privacy maps, random walks
SIGMA = 1.0             # noise standard deviation (gossip; the noise multiplier of MF)
DELTA = 1e-5            # the delta of (epsilon, delta)
ALPHA = 2.0             # Renyi order of the reported RDP
SCHEME = "metropolis"   # gossip weights of a graph
VIEW = "secure-summation"  # threat model of gossip averaging (docs/views.md)
METHOD = "auto"         # solver path, chosen by the problem
EXACT: Final = "auto"   # exhaustive sign search where it is cheap (T <= 24)
SELECTION = "all"       # the observers and the targets of a map

# Gossip accounting (squared_sensitivity, sparsedp account).
PRECONDITIONER = "auto"
TRUNCATION_RTOL = 1e-9

# Privacy maps (privacy_map, per_target_worst_case, sparsedp map).
MAP_UPPER = "certified"  # the single-pair certified bounds of every pair
MAP_EXACT = False        # no sign search per pair unless asked
REFINE = 0               # per-target: no refinement of the deciding pairs

# Random walks (random_walk_rdp, muffliato_rdp, random_walk_map; sparsedp randomwalk, muffliato).
RANDOM_WALK_SIGMA = 2.0  # the smallest noise whose pairwise bound holds at ALPHA:
#                          sigma^2 >= 2 alpha (alpha - 1)
COLUMN_METHOD = "chebyshev"
WALK_TOL = 1e-10
ROW_NORMS = "exact"

GOSSIP_GRADIENTS = "scalar"  # squared_sensitivity: the papers' per-round values in [-1, 1]

# Matrix factorisation (mf_sensitivity, mf_map, sparsedp mf, mafalda).
MF_ROUNDS = 20
MF_SCHEME = "row-normalised-self-loops"  # the 1/(d + 1) weights of the paper's Fig. 2
ALGORITHM = "dp-d-sgd"
TRUST_MODEL = "pndp"
PARTICIPATION = "user-level"
GRADIENTS = "vector"
GRADIENT_MODELS = ("vector", "scalar")  # mf_sensitivity, squared_sensitivity(gradients=)
MAFALDA_ROUNDS = 380          # the paper's learning setting, T = k b
MAFALDA_PARTICIPATION = "20,19"
H_METHOD = "auto"
PROBES = 16

# PPAC (ppac_leakage, prepare, convergence_bounds, sparsedp ppac).
PPAC_HORIZON = math.inf  # every round: the whole protocol's leakage
PPAC_VALUE_STD = 1.0
PPAC_NOISE_STD = 1.0

# Sweeps (sweep, sparsedp sweep).
SWEEP_UPPER = "none"     # c = 1 lower bounds: a grid of maps stays cheap
OBSERVER_BLOCK = 64
WORKERS = 2

# Empirical audits (audit_*, sparsedp audit).
AUDIT_ROUNDS = 20
AUDIT_TRIALS = 100_000          # gossip, matrix factorisation
RANDOM_WALK_AUDIT_TRIALS = 200_000
PPAC_AUDIT_TRIALS = 20_000
CONFIDENCE = 0.99
SEED = 0

# The commands' embedded examples (module docstring): not defaults.
DEMO_MAP_ROUNDS = 10           # sparsedp map on the 2000-node synthetic graph: every pair ...
DEMO_MAP_UPPER = "entrywise"   # ... with the batched entrywise bound, in about 25 s
DEMO_PPAC_VALUE_STD = 10.0     # sparsedp ppac on the paper's 6-node example (App. A)
DEMO_PPAC_NOISE_STD = 15.0
DEMO_SWEEP_GRAPH = "er:200:0.05:1"
