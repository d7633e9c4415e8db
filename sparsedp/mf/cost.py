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
at ``OPERATOR_ASSEMBLY_MAX_DIM`` rows.  AntiPGD, MF-D-SGD and Muffliato-SGD under PNDP
assemble ``B B^T`` on all ``R m`` observation rows (:func:`shared_noise_memory`).  These are
margins over measured peaks (checked in ``tests/test_mf_cost.py`` and
``tests/test_memory_estimates.py``): they decide refusals, never a reported bound.
"""

from __future__ import annotations

from sparsedp import resources
from sparsedp.mf.algorithms import Algorithm
from sparsedp.mf.edge_secrets import OPERATOR_ASSEMBLY_MAX_DIM  # DECOR-PNDP's row cap
from sparsedp.mf.participation import Participation, patterns_memory

CLOSED_FORM_DOUBLES = 3  # per T x T entry: L, the identity it is compared with, the mask
SANDWICH_DOUBLES = 24  # per T x T entry: L, the certified sandwich and its bounds
GRAM_SQUARES = 10  # (R m)^2 arrays of the Gram assembly of B B^T at once (traced 4.9-7.6)
GRAM_LAGS = 4  # (R, m, n) lag arrays at once (traced 2.5 where the lags dominate)
OPERATOR_SQUARES = 16  # (R m)^2 arrays of the dense operator assembly (traced up to 12)
TOEPLITZ_CORRELATIONS = ("independent", "anti")  # an exactly Toeplitz L (SR/BSR's computed
# inverse is not exactly Toeplitz: the operator assembly); the operator's estimate covers the
# Gram's (GRAM_SQUARES <= OPERATOR_SQUARES, GRAM_LAGS <= R + 3 T), so any L is covered


def closed_form(algorithm: Algorithm, trust_model: str) -> bool:
    """Whether M has a closed form (no ``T x T`` sandwich): local DP or SecLDP with
    independent noise or DECOR's secrets."""
    return trust_model in ("ldp", "secldp") and algorithm.correlation in ("independent",
                                                                          "decor")


def operator_path(algorithm: Algorithm, trust_model: str) -> bool:
    """Whether :func:`sparsedp.mf.blocks.operator_block` answers the request: PNDP (any
    variant) with node-local correlated noise or K > 1 rounds per step."""
    return (trust_model not in ("ldp", "secldp")
            and algorithm.correlation not in ("decor", "message")
            and not (algorithm.K == 1 and algorithm.independent_noise))


def shared_noise_memory(algorithm: Algorithm, T: int, n: int, observed: int) -> int:
    """Bytes :func:`sparsedp.mf.blocks.shared_noise` and one target's sandwich hold at once,
    for ``R = K T`` rounds and ``m = observed`` rows (``R m`` rows of ``B B^T``), with margins
    over tracemalloc peaks on Chung-Lu graphs (n = 120, 240; hub and median attackers; T = 6,
    12; AntiPGD, Muffliato-SGD(2, 3), MF-D-SGD with a dense lower-triangular L; on the
    karate club and a 60-node small world at T = 8, 16 also SR, BSR, resets, one L per node,
    MF-D-SGD with K = 2: estimate / peak 1.4-5.3, ``tests/test_mf_cost.py``):

    * the target's gradient columns ``A_u`` (``R m x R`` and its ``R m x T`` copy):
      ``2 R m R`` doubles;
    * Toeplitz L (:meth:`sparsedp.mf.operators.MFSystem.toeplitz_noise`: independent noise,
      AntiPGD, no resets): :data:`GRAM_SQUARES` ``(R m)^2`` doubles (``K``, ``K_abs`` when
      L has negative entries, the kept-row copy, its Cholesky factor and certificate work,
      the entrywise rounding bound; for K > 1 the structural and the final factorisation at
      once, with the pivoted Cholesky's copy: traced 4.9-7.6) and :data:`GRAM_LAGS` lag
      arrays ``(R, m, n)`` (the observer lags V kept for ``A_u``, the noise lags and their
      update's temporary, again for ``K_abs``: traced 2.5 where they dominate);
    * any other L (:meth:`~sparsedp.mf.operators.MFSystem._operator_K`, the operator on
      ``R m`` unit vectors): :data:`OPERATOR_SQUARES` ``(R m)^2`` doubles (the unit vectors,
      the product, its symmetrisation, the same for ``K_abs``, the factorisations) and
      ``(R + 3 T) n R m`` doubles (the adjoint's ``(R, n, R m)`` output, the mixing's two
      ``(T, n, R m)`` arrays and their contraction's copy: traced 3.1-3.8 ``T n R m``).

    Plus :data:`sparsedp.resources.QUERY_OVERHEAD` for what does not grow."""
    rounds = algorithm.K * T
    size = rounds * observed
    if algorithm.correlation in TOEPLITZ_CORRELATIONS and algorithm.reset_period is None:
        doubles = GRAM_SQUARES * size * size + GRAM_LAGS * size * n
    else:
        doubles = OPERATOR_SQUARES * size * size + (rounds + 3 * T) * n * size
    return 8 * (doubles + 2 * size * rounds) + resources.QUERY_OVERHEAD


def request_memory(algorithm: Algorithm, trust_model: str, scheme: Participation, T: int,
                   n: int, observed: int) -> int:
    """Bytes :func:`sparsedp.mf.mf_sensitivity` holds for a T-step request on n nodes with
    ``observed`` observed rows, before the gossip engine's or the innovation form's own work
    (module docstring; with :func:`shared_noise_memory` on the operator path)."""
    doubles = CLOSED_FORM_DOUBLES if closed_form(algorithm, trust_model) else SANDWICH_DOUBLES
    memory = 8 * doubles * T * T + patterns_memory(*scheme.sizes(T))
    if algorithm.correlation == "decor" and not closed_form(algorithm, trust_model):
        kept = min(T * observed, OPERATOR_ASSEMBLY_MAX_DIM)
        memory += 8 * (2 * T * n + T * observed + 3 * kept) * kept
    if operator_path(algorithm, trust_model):
        memory += shared_noise_memory(algorithm, T, n, observed)
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
