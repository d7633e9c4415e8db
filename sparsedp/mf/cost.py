"""What a matrix-factorisation request holds in memory, estimated from its sizes before
anything is allocated, so that :func:`sparsedp.mf.mf_sensitivity` (and every entry point that
calls it: maps, distance summaries, the MAFALDA scoring, ``sparsedp mf``) refuses a request
over its budget at once (:func:`sparsedp.resources.require_fits`) instead of asking numpy for
the ``T x T`` matrices and failing with ``MemoryError``.

Every path builds the noise correlation ``L`` (T x T); the local-DP paths with independent
noise or DECOR's edge secrets have closed forms (``M = I``, ``M = c I``) and hold about two
more ``T x T`` arrays (measured 17 T^2 bytes with tracemalloc at T = 2000); every other path
builds a certified ``T x T`` sandwich and its bounds (measured 113-150 T^2 bytes for the
dense local-DP solves at T = 500, the gossip engine's :func:`~sparsedp.gossip.cost.
minimal_memory` is 160 T^2 bytes).  DECOR under PNDP also holds the adjoint's ``(T, n, k)``
block for its ``k <= min(T m, OPERATOR_ASSEMBLY_MAX_DIM)`` kept observation rows.  The
participation patterns and their bounds are :func:`sparsedp.mf.participation.
patterns_memory`.  The gossip engine and the innovation form check their own, larger, work
when they are reached (``max_memory`` is passed on); the other dense assemblies are capped
at ``OPERATOR_ASSEMBLY_MAX_DIM`` rows.  These are margins over measured peaks (checked in
``tests/test_mf_cost.py``): they decide refusals, never a reported bound.
"""

from __future__ import annotations

from sparsedp import resources
from sparsedp.mf.algorithms import Algorithm
from sparsedp.mf.edge_secrets import OPERATOR_ASSEMBLY_MAX_DIM  # DECOR-PNDP's row cap
from sparsedp.mf.participation import Participation, patterns_memory

CLOSED_FORM_DOUBLES = 3  # per T x T entry: L, the identity it is compared with, the mask
SANDWICH_DOUBLES = 24  # per T x T entry: L, the certified sandwich and its bounds


def closed_form(algorithm: Algorithm, trust_model: str) -> bool:
    """Whether M has a closed form (no ``T x T`` sandwich): local DP or SecLDP with
    independent noise or DECOR's secrets."""
    return trust_model in ("ldp", "secldp") and algorithm.correlation in ("independent",
                                                                          "decor")


def request_memory(algorithm: Algorithm, trust_model: str, scheme: Participation, T: int,
                   n: int, observed: int) -> int:
    """Bytes :func:`sparsedp.mf.mf_sensitivity` holds for a T-step request on n nodes with
    ``observed`` observed rows, before the gossip engine's or the innovation form's own work
    (module docstring)."""
    doubles = CLOSED_FORM_DOUBLES if closed_form(algorithm, trust_model) else SANDWICH_DOUBLES
    memory = 8 * doubles * T * T + patterns_memory(*scheme.sizes(T))
    if algorithm.correlation == "decor" and not closed_form(algorithm, trust_model):
        kept = min(T * observed, OPERATOR_ASSEMBLY_MAX_DIM)
        memory += 8 * (2 * T * n + T * observed + 3 * kept) * kept
    return memory


def require_request_fits(algorithm: Algorithm, trust_model: str, scheme: Participation, T: int,
                         n: int, observed: int, max_memory) -> None:
    """Refuse (ResourceLimitError, naming the estimate, the budget and the largest T that
    fits) a request whose :func:`request_memory` exceeds ``max_memory``."""
    resources.require_fits(
        lambda steps: request_memory(algorithm, trust_model, scheme, steps, n, observed), T,
        resources.memory_budget(max_memory),
        f"mf_sensitivity at T = {T} ({algorithm.name}, {trust_model}, {scheme.name})",
        low=scheme.shortest_run(), unit="gradient steps")
