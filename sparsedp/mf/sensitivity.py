"""``sens_Pi(C; B)^2`` of one target towards an attacker set (Bellet et al., Def. 6, Thm 7).

For target u, its gradient columns ``A_u`` of the (Lemma-11 reduced) attacker knowledge
``O = A G + B Z`` and a participation pattern pi (the steps at which its record is used):

    M = A_u^T (B B^T)^+ A_u = (C^T B^+ B C)_(u-block)          (T x T, PSD)
    sens^2 = max_(pi in Pi) max_x sum_(s,t in pi) M_st <x_s, x_t>,   ||x_t|| <= 1,

provided every participating column of ``A_u`` lies in range(B) (otherwise infinite: the
range condition).  Bounds (each maximised over the patterns, with its kind):

* Theorem 7: ``sum_(s,t in pi) |M_st|`` (``entrywise``, certified upper; it bounds sens^2 —
  the paper writes sens — and equals it when ``M_pi >= 0`` entrywise; C = I under LDP gives
  ``|pi|``);
* ``gradients="scalar"`` (d = 1, or a per-coordinate analysis): ``x_t = c_t`` in {-1, 1}
  and the exhaustive sign search is the exact value (for ``|pi| <= 24`` by default);
* ``gradients="vector"`` (default: d-dimensional gradients clipped in norm): the exact value
  is the SDP ``max tr(M_pi X)`` over Gram matrices with unit diagonal, which the sign vectors
  only bound from below; the certified upper bounds (spectral, diagonal shift — the SDP
  dual —, Theorem 7, local DP) bound it from above, and the SDP primal-dual pair of
  :mod:`sparsedp.linalg.vector_bounds` closes the gap (``sdp_primal``, a lower bound for
  gradients with at least ``ceil(sqrt(2 |pi|)) + 1`` coordinates; ``sdp_dual``, certified);
* the spectral, diagonal-shift and sign-search bounds of :mod:`sparsedp.linalg.sign_bounds`
  on each pattern's principal sub-block of the certified sandwich.

How M is obtained for each trust model and algorithm: :mod:`sparsedp.mf.blocks`.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from sparsedp import defaults, validation
from sparsedp.errors import ParameterError
from sparsedp.gossip.target_block import TargetBlock, sub_sandwich
from sparsedp.hints import ExactSearch, GossipMatrix, MemorySize, Nodes
from sparsedp.linalg.matrix_facts import one_query, query_memo
from sparsedp.linalg.sign_bounds import Bound, evaluate_bounds
from sparsedp.linalg.stochastic import check_gossip_matrix
from sparsedp.linalg.threads import limit_blas_threads
from sparsedp.linalg.vector_bounds import for_vector_gradients
from sparsedp.mf import algorithms, batched, blocks, cost, participation, trust
from sparsedp.mf.edge_secrets import decor_block, decor_pndp_block
from sparsedp.mf.message_noise import zip_dl_block
from sparsedp.mf.result import MFResult

GRADIENTS = defaults.GRADIENT_MODELS
EXHAUSTIVE_AUTO_MAX = 24
EXHAUSTIVE_MAX = 30


@limit_blas_threads
@one_query
def mf_sensitivity(
    W: GossipMatrix,
    target: int,
    attackers: Nodes,
    T: int,
    *,
    algorithm: str | algorithms.Algorithm = defaults.ALGORITHM,
    trust_model: str = defaults.TRUST_MODEL,
    participation_scheme: str | participation.Participation = defaults.PARTICIPATION,
    gradients: str = defaults.GRADIENTS,
    exact: ExactSearch = defaults.EXACT,
    method: str = defaults.METHOD,
    max_memory: MemorySize = None,
    progress: bool | None = None,
) -> MFResult:
    """Certified bounds on the squared sensitivity of ``target`` towards ``attackers``.

    Parameters
    ----------
    W : gossip matrix (sparse or dense, non-negative, row-stochastic; GossipMatrixError
        otherwise).
    target : row of W whose record is protected.
    attackers : rows of W (a colluding set), or ``None`` for ``trust_model="ldp"``.
    T : gradient steps (Muffliato-SGD(K) runs ``K T`` gossip rounds).
    algorithm : :class:`sparsedp.mf.Algorithm` (``dp_d_sgd()``, ``muffliato_sgd(K)``,
        ``antipgd()``, ``mf_d_sgd(noise)``, ``decor(s)``, ``zip_dl()``) or a name.
    trust_model : ``"ldp"``, ``"pndp"`` (own noise known, App. A.2), ``"pndp-eq12"``
        (own noise not subtracted, eq. 12), ``"pndp-eq12-no-own"`` (eq. 12 without the
        attackers' own messages, MFDL's ``observe_own=False``) or ``"secldp"`` (every message
        public, own noise and shared secrets known): :mod:`sparsedp.mf.trust`.
    participation_scheme : ``"user-level"`` (default, the paper's (T, 1)), ``"single"``,
        ``(k, b)`` or a :class:`sparsedp.mf.Participation`.
    gradients : ``"vector"`` (default) or ``"scalar"`` (module docstring).
    exact : ``"auto"`` (exhaustive sign search when every pattern has at most 24 steps),
        ``True`` (at most 30) or ``False``; only with ``gradients="scalar"``.
    method, max_memory, progress : DP-D-SGD under PNDP: ``method="innovations"`` is the
        innovation form (:mod:`sparsedp.mf.innovations`), ``"auto"`` chooses it or the gossip
        engine by cost, any other value is the engine's method; all three go to the path.

    Returns
    -------
    MFResult
        Bounds on ``sens^2`` with their kinds; infinite when the range condition fails.

    Raises
    ------
    ParameterError
        Unknown algorithm, trust model, participation scheme or gradients; a scheme longer
        than T; the target among the attackers; an empty attacker set.
    GossipMatrixError
        W negative or not row-stochastic.
    ResourceLimitError
        The request does not fit in ``max_memory`` (checked before any ``T x T`` array:
        :mod:`sparsedp.mf.cost`).

    Examples
    --------
    A direct neighbour of the attacker on an 8-cycle, DP-D-SGD under PNDP, user level:

    >>> import networkx as nx, sparsedp
    >>> from sparsedp.mf import mf_sensitivity
    >>> W = sparsedp.gossip_matrix(nx.cycle_graph(8), scheme="row-normalised-self-loops")
    >>> r = mf_sensitivity(W, 0, [1], 6)
    >>> round(r.lower, 6), round(r.upper, 6)
    (5.617935, 5.617935)
    """
    algorithm = algorithms.resolve(algorithm)
    scheme = participation.resolve(participation_scheme)
    if gradients not in GRADIENTS:
        raise ParameterError(f"gradients must be one of {GRADIENTS}, got {gradients!r}")
    T = validation.rounds(T)
    W = check_gossip_matrix(W, require=("nonnegative", "row_stochastic"))
    n = W.shape[0]
    target = validation.node_index(target, n, "target")
    obs = _observation(trust_model, W, target, attackers)
    cost.require_request_fits(algorithm, trust_model, scheme, T, n, obs.observed.size,
                              max_memory)  # before L, the patterns or any T x T array
    patterns = scheme.patterns(T, max_memory)
    do_exact = _resolve_exact(exact, gradients, max(p.size for p in patterns))
    L = algorithms.node_noise(algorithm, T, n)
    identity_noise = algorithm.independent_noise
    if algorithm.correlation == "decor" and trust_model in ("ldp", "secldp"):
        block = decor_block(W, target, obs.attackers, T, algorithm.decor_scale)
    elif algorithm.correlation == "decor":
        block = decor_pndp_block(W, target, trust_model, obs.observed, obs.attackers, T,
                                 algorithm.decor_scale)
    elif algorithm.correlation == "message":
        block = zip_dl_block(W, target, trust_model, obs.attackers, T,
                             own_copy_noise=algorithm.own_copy_noise)
    elif trust_model in ("ldp", "secldp"):  # node-local noise: SecLDP is local DP
        block = blocks.ldp_block(L if L.ndim == 2 else L[target], patterns)
    else:
        for node_L in L.reshape(-1, T, T):
            blocks.require_invertible(node_L, trust_model)
        if obs.observed.size == 0:
            block = TargetBlock(T=T, closed_form="zero", notes=("the attackers observe no "
                                                                "message",))
        elif algorithm.K == 1 and identity_noise and not _batched_gossip(
                trust_model, method, W, target, obs, T):
            block = blocks.gossip_block(W, target, obs, T, method=method,
                                        max_memory=max_memory, progress=progress)
        else:
            block = blocks.operator_block(W, target, obs, T, algorithm.K, L)
    if algorithms.future_draws(L):
        block = dataclasses.replace(block, notes=block.notes + (algorithms.FUTURE_DRAWS_NOTE,))
    per_pattern = [_pattern_bounds(block, p, do_exact, gradients, identity_noise)
                   for p in patterns]
    return _assemble(per_pattern, block, target, obs, T, algorithm, scheme, gradients,
                     trust_model, len(patterns))


def _batched_gossip(trust_model: str, method: str, W, target: int, obs: trust.Observation,
                    T: int) -> bool:
    """DP-D-SGD under PNDP with ``method="auto"`` on the operator path (L = I) when the
    target is solved together with the other targets of its attacker set
    (:mod:`sparsedp.mf.batched`): one shared factor for all of them instead of one solve
    each."""
    return (trust_model == "pndp" and method == "auto" and batched.batch_for(target, T) is not None
            and batched.BATCH_MIN_ROWS <= T * obs.observed.size
            and blocks.assembly_fits(W.shape[0], T * obs.observed.size, toeplitz=True))


def _observation(trust_model: str, W, target: int, attackers) -> trust.Observation:
    """:func:`sparsedp.mf.trust.resolve`, formed once per attacker set inside a
    :func:`~sparsedp.linalg.matrix_facts.reuse_scope` (it does not depend on the target,
    which is checked against the attackers on every call)."""
    try:
        key = (trust_model, tuple(np.atleast_1d(np.asarray(attackers)).tolist()))
    except (TypeError, ValueError):
        key = None
    if attackers is None or key is None:
        return trust.resolve(trust_model, W, target, attackers)
    obs = query_memo("mf observation", W, key,
                     lambda: trust.resolve(trust_model, W, target, attackers))
    validation.not_among(target, obs.attackers, "target", "attackers")
    return obs


def _resolve_exact(exact, gradients: str, longest: int) -> bool:
    if exact == "auto":
        return gradients == "scalar" and longest <= EXHAUSTIVE_AUTO_MAX
    if exact is True:
        if gradients != "scalar":
            raise ParameterError("exact=True is the exhaustive sign search, exact only for "
                                 "gradients='scalar'")
        if longest > EXHAUSTIVE_MAX:
            raise ParameterError(f"exact=True enumerates 2^(|pi|-1) sign vectors and is "
                                 f"limited to |pi| <= {EXHAUSTIVE_MAX} (got {longest})")
        return True
    if exact is False:
        return False
    raise ParameterError(f"exact must be 'auto', True or False, got {exact!r}")


def _closed(name: str, value: float, what: str) -> list[Bound]:
    return [Bound(name, value, "exact", what),
            Bound("entrywise", value, "certified upper", "Thm 7's sum |M_pi| (closed form)")]


def _pattern_bounds(block: TargetBlock, pattern: np.ndarray, do_exact: bool, gradients: str,
                    identity_noise: bool) -> list[Bound]:
    """Bounds on one pattern's ``max_x x^T M_pi x`` with their kinds (module docstring)."""
    size = float(pattern.size)
    if block.closed_form == "identity":
        return _closed("closed_form", size, "M = I: |pi|")
    if block.closed_form == "zero":
        return _closed("closed_form", 0.0, "M = 0")
    if block.closed_form == "scaled-identity":  # DECOR: M = c I_T, c in [c_low, c_high]
        low, high = block.solver["c_low"] * size, block.solver["c_high"] * size
        return [Bound("scaled_identity", low, "exact", "c |pi|, lower end"),
                Bound("scaled_identity_upper", high, "certified upper", "c |pi|, upper end"),
                Bound("entrywise", high, "certified upper", "Thm 7's sum |M_pi| = c |pi|")]
    if block.closed_form == "infinite":
        return _closed("range_condition", float("inf"), "not private: range condition fails")
    assert block.sandwich is not None, "a block without a closed form holds its sandwich"
    sandwich = sub_sandwich(block.sandwich, pattern)
    bounds, _ = evaluate_bounds(sandwich, do_exact)
    if gradients == "vector":
        bounds = for_vector_gradients(bounds, sandwich)
    estimate = bool(block.solver.get("estimate"))
    out = []
    for b in bounds:
        if b.name == "local_dp":
            if identity_noise:  # M <= C^T C = I
                out.append(dataclasses.replace(b, value=size, description="|pi|: M <= I"))
            continue
        if b.kind == "certified upper" and estimate:  # rows dropped on the computed B
            b = dataclasses.replace(b, kind="estimate")
        elif b.kind == "certified upper" and not block.upper_certified:
            continue
        if b.kind == "exact" and (estimate or not block.upper_certified):
            b = dataclasses.replace(b, kind="lower")
        out.append(b)
    return out


def _combine(per_pattern: list[list[Bound]]) -> list[Bound]:
    """Each bound's maximum over the patterns.  An upper bound missing from a pattern is
    replaced there by that pattern's best upper bound of the same kind (so the maximum still
    bounds every pattern); a lower bound is maximised over the patterns that have it."""
    names: dict[str, Bound] = {}
    for bounds in per_pattern:
        for b in bounds:
            names.setdefault(b.name, b)
    out = []
    for name, first in names.items():
        values: list[float] = []
        for bounds in per_pattern:
            mine = [b for b in bounds if b.name == name]
            if mine:
                values.append(mine[0].value)
            elif first.kind in ("certified upper", "estimate"):
                same = [b.value for b in bounds if b.kind == first.kind]
                values.append(min(same) if same else float("inf"))
            elif first.kind == "exact":
                break  # an exact value missing from a pattern: no exact value overall
        else:
            out.append(dataclasses.replace(first, value=float(max(values))))
    return out


def _assemble(per_pattern, block: TargetBlock, target, obs, T, algorithm, scheme, gradients,
              trust_model, count) -> MFResult:
    bounds = _combine(per_pattern)
    lows = [b.value for b in bounds if b.kind in ("lower", "exact")]
    ups = [b.value for b in bounds if b.kind == "certified upper"]
    lower = max(max(lows), 0.0) if lows else 0.0
    upper = min(ups) if ups else float("inf")
    exact = next((b.value for b in bounds if b.kind == "exact"), None)
    exact_error = None
    if exact is not None:  # the exhaustive maximum dominates every other feasible sign vector
        exact = exact if not np.isfinite(exact) else lower
        exact_error = 0.0 if not np.isfinite(exact) else max(float(upper - exact), 0.0)
    thm7 = next((b.value for b in bounds if b.name == "entrywise"
                 and b.kind == "certified upper"), None)
    infinite = block.closed_form == "infinite"
    notes = list(block.notes)
    primal = next((b for b in bounds if b.name == "sdp_primal"), None)
    if primal is not None and primal.value >= lower:
        notes.append(f"lower is the SDP primal ({primal.description}); with fewer gradient "
                     "coordinates the sign bounds are the lower bounds")
    if not ups:
        notes.append("no certified upper bound on sens^2 for this case")
    return MFResult(
        target=int(target), attackers=tuple(int(a) for a in obs.attackers), T=T,
        algorithm=algorithm.to_dict(), trust=trust_model, participation=scheme.to_dict(),
        gradients=gradients, lower=float(lower), upper=float(upper), exact=exact,
        exact_error=exact_error, thm7=thm7, range_condition=not infinite,
        method=block.method, bounds=tuple(bounds),
        observed=tuple(int(i) for i in obs.observed),
        known_noise=tuple(int(i) for i in obs.known_noise), patterns=count,
        solver=block.solver, notes=tuple(notes),
    )
