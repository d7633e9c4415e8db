"""Squared sensitivity ``Delta_T(j -> A)^2`` of gossip averaging, with certified bounds.

For target j, observers A and T rounds (Koskela & Kulkarni v2, Thm 12 and Sec. 3.4):

    Delta^2 = max_{c in {-1,1}^T} c^T M_T c,     M_T = G_T^T K_T^{-1} G_T   (T x T),

and ``0 <= M_T <= I`` (M_T is a slice of the projector ``H^+ H``).  The threat model (which
messages the observers see, whether they know their own noise, time-varying W) is a named
view (:mod:`sparsedp.gossip.views`); the default is v2's secure summation.  The solve produces a
certified sandwich ``M_low <= M_T <= M_up`` (:mod:`sparsedp.linalg.certified`); from it:

lower bounds (kind "lower")
    ``ones``: c = 1 (the papers' choice);  ``local_search``: single-flip ascent from c = 1
    and from the signs of the top eigenvector;  ``multistart``: the same ascent from the signs
    of the top eigenvectors of ``M_up`` and of ``M_up - diag(d)`` (d from ``diagonal_shift``)
    and from Gaussian roundings of their top eigenspaces (fixed seed) — each the value of a
    feasible c on ``M_low``, less the sandwich's quadratic slack.
exact (kind "exact", when ``T`` is small enough: ``T <= 24`` by default)
    exhaustive search over the 2^(T-1) classes {c, -c} (exact integer Gray code), on
    ``M_low`` (a lower bound) and on ``M_up`` (an upper bound, plus the grid error); the
    difference is reported as ``exact_error``.
upper bounds (kind "certified upper")
    ``spectral``: ``T lambda_max(M_up)`` with a Cholesky-certified lambda_max;
    ``diagonal_shift``: ``T lambda_max(M_up - diag d) + sum(d)`` (the SDP dual; valid for
    every d, which is searched from d = 0), Cholesky-certified;
    ``entrywise``: ``sum |M_T|`` (v2 Thm 12; the matrix-mechanism bound), bounded through
    ``|M - M_low|_ij <= sqrt(E_ii E_jj)`` for ``E = M_up - M_low``;
    ``local_dp``: ``T`` (since ``M_T <= I``).
The bounds are computed by :func:`sparsedp.linalg.sign_bounds.evaluate_bounds`; ``docs/bounds.md``
gives the formulas and soundness arguments.
The reported ``lower`` is the best lower bound, ``upper`` the best certified upper bound,
``gap`` their difference.
With ``gradients="vector"`` (d-dimensional contributions clipped in norm) the exact value is
the SDP ``max <M_T, X>`` over Gram matrices of unit vectors: the sign bounds are lower bounds,
the upper bounds above hold as they are, and the SDP primal and dual
(:func:`sparsedp.linalg.vector_bounds.for_vector_gradients`) close the interval.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from sparsedp import defaults, resources, validation
from sparsedp.errors import ParameterError
from sparsedp.gossip.banded import banded_interval
from sparsedp.gossip.certified_solve import (
    INNOVATION_NEEDS_V2_FORMS,
    analytic_lambda_min_lower_bound,
    iterative_preconditioner,
    solve,
)
from sparsedp.gossip.cost import (
    Cost,
    banded_memory,
    method_cost,
    minimal_memory,
    sparse_rate,
    structured_memory,
)
from sparsedp.gossip.inputs import (  # the EXHAUSTIVE_* limits are re-exported
    EXHAUSTIVE_AUTO_MAX_T,  # noqa: F401
    EXHAUSTIVE_MAX_T,  # noqa: F401
    _lower_bounds_only,
    _require_fits,
    _resolve_exact,
    gossip_sequence,
)
from sparsedp.gossip.views import VIEW_NOTES, ObservationModel, resolve_view
from sparsedp.hints import ExactSearch, GossipInput, MemorySize, Nodes
from sparsedp.linalg import gram
from sparsedp.linalg.matrix_facts import one_query
from sparsedp.linalg.operators import GossipSystem
from sparsedp.linalg.sign_bounds import Bound, evaluate_bounds
from sparsedp.linalg.stochastic import matrix_facts
from sparsedp.linalg.threads import limit_blas_threads
from sparsedp.linalg.vector_bounds import for_vector_gradients, rank_for
from sparsedp.plain import plain
from sparsedp.privacy.interop import gaussian_dp_event
from sparsedp.reprs import short_repr
from sparsedp.resources import QUERY_OVERHEAD

METHODS = ("auto", "structured", "gram", "dense", "matrix-free", "banded")
PRECONDITIONERS = ("auto", "innovation", "stationary", "gram")
STRUCTURED_MEMORY_FRACTION = 0.5  # of physical memory, for the structured path's dense work


@dataclass(frozen=True)
class SensitivityResult:
    """Bounds on ``Delta_T(target -> observers)^2`` and how they were obtained.

    ``lower <= Delta^2 <= upper`` always; ``exact`` is ``None`` unless the exhaustive search
    ran, and then ``exact <= Delta^2 <= exact + exact_error``.

    Attributes
    ----------
    target, observers, T, view, noise_removed
        The request (nodes are rows of W).
    lower, upper : float
        Bounds on ``Delta^2``; pass ``upper`` to :func:`sparsedp.gaussian_epsilon`.
    exact, exact_error : float or None
        Result of the exhaustive search over the signs, when it ran.
    method : str
        Solve path (``"structured"``, ``"gram"``, ``"matrix-free"``, ``"dense"``, ...).
    signs : tuple of int
        The sign vector ``c`` that attains ``lower``.
    bounds : tuple of Bound
        Every bound computed, with its kind.
    solver : dict
        Details of the solve (certificates, products, memory estimate).
    notes : tuple of str
        Closed forms used, assumptions, precision of the input.
    known_noise : tuple of int
        Nodes whose noise the attacker knows (``noise_removed``).
    gap, relative_gap : float
        ``upper - lower`` and ``(upper - lower) / upper`` (properties).

    Examples
    --------
    >>> import networkx as nx, sparsedp
    >>> W = sparsedp.gossip_matrix(nx.cycle_graph(8))
    >>> r = sparsedp.squared_sensitivity(W, target=0, observers=[1, 7], T=50)
    >>> round(r.lower, 4), round(r.upper, 4), r.method
    (11.7984, 12.5056, 'structured')
    >>> round(r.relative_gap, 4)
    0.0566
    >>> sorted(r.to_dict())[:4]
    ['T', 'bounds', 'exact', 'exact_error']
    """

    target: int
    observers: tuple[int, ...]
    T: int
    view: str
    noise_removed: bool
    lower: float
    upper: float
    exact: float | None
    exact_error: float | None
    method: str
    signs: tuple[int, ...]
    bounds: tuple[Bound, ...]
    solver: dict = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    known_noise: tuple[int, ...] = ()  # nodes whose noise the attacker knows (noise_removed)

    __repr__ = short_repr

    @property
    def gap(self) -> float:
        """``upper - lower`` (never negative)."""
        return max(self.upper - self.lower, 0.0)

    @property
    def relative_gap(self) -> float:
        """``(upper - lower) / upper`` (0 when they are equal, also both 0 or infinite)."""
        return 0.0 if self.upper == self.lower else (self.upper - self.lower) / self.upper

    def to_dp_event(self, sigma: float):
        """This view as one ``dp_accounting`` event at noise ``sigma``, built from the
        certified upper bound (:func:`sparsedp.privacy.interop.gaussian_dp_event`): compose
        it with other events in ``dp_accounting`` (optional extra ``sparsedp[dp]``)."""
        return gaussian_dp_event(self.upper, sigma)

    def to_dict(self) -> dict:
        """Plain data, strict JSON (:func:`sparsedp.plain.plain`: infinity as the string
        ``"infinity"``)."""
        return plain({**asdict(self), "gap": self.gap, "relative_gap": self.relative_gap})


@limit_blas_threads
@one_query
def squared_sensitivity(
    W: GossipInput,
    target: int,
    observers: Nodes,
    T: int,
    *,
    view: str = defaults.VIEW,
    noise_removed: bool = False,
    method: str = defaults.METHOD,
    exact: ExactSearch = defaults.EXACT,
    gradients: str = defaults.GOSSIP_GRADIENTS,
    rtol: float = 1e-10,
    maxiter: int = 5000,
    progress: bool | None = None,
    backend: str = "auto",
    truncation_rtol: float = defaults.TRUNCATION_RTOL,
    preconditioner: str = defaults.PRECONDITIONER,
    max_memory: MemorySize = None,
) -> SensitivityResult:
    """Certified bounds on the squared sensitivity ``Delta_T(target -> observers)^2``.

    Parameters
    ----------
    W : square scipy sparse matrix (any format), dense array or list of rows, of any real
        dtype (float32 rows are checked to sum to 1 within float32 rounding; the bounds are
        for the values as given, converted exactly to float64); the gossip matrix, which must
        be non-negative and row-stochastic (GossipMatrixError names the failing row): the
        rounding model behind the certified bounds relies on ``||W||_inf = 1``.  Time-varying
        gossip: a sequence of T such 2-D matrices ``W_0 .. W_(T-1)`` or a callable
        ``t -> W_t`` (round t mixes with ``W_t``; always the matrix-free path).  A graph is a
        ``TypeError``: build W with :func:`sparsedp.gossip_matrix`.
    target : node j whose data is protected, as a row index of W (``0..n-1``).
    observers : row index or iterable of row indices (the attacker), or ``None`` for the
        views that fix their own observers (``adaptive-v1``, ``target-v1``, ``local-dp``).
        W is a matrix, so nodes are its rows: for ``W = gossip_matrix(G)`` row ``i`` is the
        node ``as_graph(G).id_of(i)`` (``list(G)[i]``), and ``as_graph(G).index_of(label)``
        gives the row of a label (the same number when G's nodes are ``0..n-1`` in order);
        ``target`` and ``observers`` of the result are rows too.
    T : number of gossip rounds (>= 1).
    view : the threat model, one of :data:`sparsedp.gossip.views.VIEWS` (see that module for the
        matrix form of each): ``"secure-summation"`` (default; v2 Lemma 10, a colluding set
        when several observers are given), ``"secure-summation-v1"`` (v1 eq. 3.2),
        ``"neighbourhood"`` (v2 Remark 11), ``"adaptive-v1"`` (v1 Thm 9), ``"target-v1"``
        (v1 Thm 10), ``"local-dp"`` (exactly T).
    noise_removed : the attacker knows the noise it injected itself (v2 Sec. 3.3, Thm 16;
        Bellet et al.'s PNDP, App. A.2): the noise columns of the given observers are deleted
        from H — in the neighbourhood view those of the given nodes only, not of the
        neighbours whose messages they read.  Infinite sensitivity when the target is one of
        them (the attacker is the target and holds its data; docs/views.md).
    method : ``"banded"`` (one observer, secure-summation view, one symmetric doubly
        stochastic W: the banded form ``K = C F C^T`` once the chain has mixed,
        :mod:`sparsedp.gossip.banded`; O(T w) work and memory, so T = 10^4 in seconds; its
        upper bound is the spectral one), ``"structured"`` (W exactly symmetric: K_T from
        the moments ``S W^l S^T``,
        dense Cholesky), ``"gram"`` (one constant W, symmetric or not: K_T and G_T from the
        Gram of the lags ``(W^T)^l S^T``, :mod:`sparsedp.linalg.gram`, dense Cholesky),
        ``"matrix-free"`` (preconditioned block CG on the matrix-free K_T; any W, also
        time-varying), or ``"auto"``: structured when W is symmetric and its dense work
        fits in half the physical memory (:func:`structured_memory`: on 24 GB, T up to 8473
        for one observer, ``m T`` up to about 27000 for m = 46) and, for the v2 forms with
        all noise, the innovation-preconditioned PCG is not estimated cheaper than its
        dense Cholesky (:func:`sparsedp.gossip.cost.method_cost`'s time model: a hub's
        neighbourhood view takes the PCG), else gram when W is constant, ``m T <= 8000``
        and the lags fit in memory
        (:func:`sparsedp.linalg.gram.gram_fits`), else matrix-free.  ``"dense"`` (never chosen by
        auto; ``m T <= 8000``): ``K_T`` assembled densely by applying the matrix-free
        operator to the ``m T`` unit vectors, ``G_T`` from the operator, dense Cholesky —
        any W, also time-varying; the engine's own dense reference, independent of the lags.
    exact : ``"auto"`` (exhaustive search when ``T <= 24``), ``True`` (force; refused for
        ``T > 30``) or ``False``; scalar gradients only.
    gradients : what the target contributes each round.  ``"scalar"`` (default; the papers'
        model): a value in [-1, 1], ``Delta^2 = max_(c in {-1,1}^T) c^T M_T c``.
        ``"vector"``: a d-dimensional vector clipped to norm 1 (decentralized SGD with
        norm clipping), ``Delta^2 = max <M_T, X>`` over Gram matrices of unit vectors, the
        SDP that the sign vectors only bound from below (:mod:`sparsedp.linalg.vector_bounds`):
        it equals the scalar value where the sign bounds meet (e.g. ``M_T >= 0``
        entrywise), and otherwise the SDP primal (a lower bound for gradients with at least
        ``ceil(sqrt(2 T)) + 1`` coordinates) and dual (certified upper) close the interval
        that the sign problem's integrality gap leaves open (adjacent pairs on clustered
        graphs, ``docs/bounds.md``).
    rtol : relative residual tolerance of the CG solve (its error is carried into the bounds
        either way).
    maxiter : iteration limit of that CG solve (matrix-free path).
    progress : show progress bars (sparse products of the structured path, CG iterations).
    backend : kernel backend, ``"auto" | "numba" | "numpy"``.
    truncation_rtol : structured path, W doubly stochastic: stop propagating once the chain
        has mixed enough that the certified truncation error charged to the bounds is at
        most this fraction of the lower bound (included in the bounds either way; every
        bound is charged at most that much, though searched bounds can land elsewhere on
        the truncated M, so an end can move somewhat further on small instances).
        It moves both ends, so the relative gap it adds can reach twice this value: for a
        gap <= g, pass ``g / 2`` (ER, n = 10^7, T = 1000: ``8e-7`` gave a gap of 1.3e-6).
    preconditioner : matrix-free path only: ``"innovation"`` (v2 forms: the exact dynamics
        of the observed rows among themselves, ``y_t = W[S, S] y_(t-1) + e_t``, and the drift
        of the mean flowing in, :class:`sparsedp.linalg.solvers.InnovationPreconditioner`;
        made for large observed sets such as a hub's neighbourhood), ``"stationary"`` (the
        explicit inverse of the stationary part of K_T,
        :class:`sparsedp.linalg.solvers.StationaryPreconditioner`),
        ``"gram"`` (Cholesky factor of the Gram-assembled K_T: PCG then converges in one
        iteration and the matrix-free operator's true residual independently checks the
        assembly; constant W only) or ``"auto"`` (gram when W is constant and the assembly
        fits, :func:`sparsedp.linalg.gram.gram_fits`, else innovation for the v2 forms and
        stationary for the v1 forms).  The certificate always
        comes from the matrix-free operator.
    max_memory : the memory budget (bytes, or a size such as ``"8G"``; default
        :data:`sparsedp.resources.MEMORY_FRACTION` of the physical memory).  A request whose
        estimated peak (:mod:`sparsedp.gossip.cost`) exceeds it is refused before any
        allocation with :class:`sparsedp.errors.ResourceLimitError`, naming the estimate and
        the largest T that fits.

    Returns
    -------
    SensitivityResult
        ``lower <= Delta^2 <= upper`` with every bound and its kind.  Exact closed forms
        without a solve: 0 when no observed row is in the target's connected component,
        T for local DP, infinity when a view that fixes its own observers sees the target's
        messages with its noise removed (each with a note).

    Raises
    ------
    ParameterError, GossipMatrixError, GraphError
        bad input, named in the message (:mod:`sparsedp.errors`); a target among its own
        observers is refused (ParameterError: no guarantee towards itself, docs/views.md).
    ResourceLimitError
        the request does not fit in ``max_memory``.

    Examples
    --------
    A node of an 8-cycle observed by the opposite node for 50 rounds; the bounds meet, and
    the upper bound gives epsilon at a noise level (the whole view is one Gaussian mechanism):

    >>> import networkx as nx, sparsedp
    >>> W = sparsedp.gossip_matrix(nx.cycle_graph(8), scheme="metropolis")
    >>> r = sparsedp.squared_sensitivity(W, target=0, observers=[4], T=50)
    >>> round(r.lower, 6), round(r.upper, 6), r.method
    (4.108838, 4.108838, 'structured')
    >>> [(b.name, round(float(b.value), 4)) for b in r.bounds if b.kind == "certified upper"]
    [('spectral', 4.9781), ('diagonal_shift', 4.9781), ('entrywise', 4.1088), ('local_dp', 50.0)]
    >>> round(sparsedp.gaussian_epsilon(r.upper, sigma=5.0, delta=1e-5), 4)
    1.5783

    Small T: the exhaustive search over the signs gives the exact value:

    >>> r = sparsedp.squared_sensitivity(W, target=0, observers=[4], T=10)
    >>> round(r.exact, 6)
    0.062024
    """
    do_exact = _resolve_exact(exact, validation.rounds(T), gradients)
    if not validation.nonnegative("truncation_rtol", truncation_rtol) > 0:
        raise ParameterError(f"truncation_rtol must be > 0, got {truncation_rtol!r}")
    if method == "banded":
        return _banded(W, target, observers, T, view, noise_removed, progress, max_memory)
    _refuse_target_among_observers(target, observers)
    plan = _plan(W, target, observers, T, view, noise_removed, method, preconditioner,
                 max_memory)
    if isinstance(plan, _Answered):
        return plan.result
    target, model, method, notes = plan.target, plan.model, plan.method, plan.notes
    T = plan.system.T
    sandwich, solver_info = solve_planned(plan, rtol, maxiter, progress, truncation_rtol,
                                          preconditioner)
    if sandwich is None:
        return _nothing_learned(target, model, T)
    solver_info["estimated_memory_bytes"] = plan.cost.memory
    bounds, signs = evaluate_bounds(sandwich, do_exact, backend)
    if gradients == "vector":
        bounds = for_vector_gradients(bounds, sandwich, backend)
        notes.append(f"gradients='vector': Delta^2 is the SDP max <M_T, X> over Gram matrices "
                     f"of unit vectors; the sdp_primal lower bound holds for gradients with at "
                     f"least {rank_for(T)} coordinates, the sign bounds for any")
    if not solver_info["upper_certified"]:
        bounds = _lower_bounds_only(bounds)
        notes.append(
            "no certified lower bound on the smallest non-zero eigenvalue of K_T for this "
            "view: the only certified upper bound is T (M_T <= I)"
        )
    return _assemble(target, model, T, method, sandwich, bounds, signs, solver_info, notes)


def _banded(W, target, observers, T, view, noise_removed, progress, max_memory
            ) -> SensitivityResult:
    """``method="banded"``: the banded form of K_T once the chain has mixed
    (:mod:`sparsedp.gossip.banded`): one observer, the secure-summation view, one constant
    symmetric doubly stochastic W; the certified c = 1 lower bound and the least of the
    spectral upper bound ``T lambda_max(M_T)`` and the diagonal shift ``sum(d)`` with
    ``M_T <= diag(d)``, in O(T w) memory."""
    T = validation.rounds(T)
    Ws, precision_notes = gossip_sequence(W, T)
    if len(Ws) != 1:
        raise ParameterError("method='banded' needs one constant W")
    W = Ws[0]
    n = W.shape[0]
    target = validation.node_index(target, n, "target")
    observers = validation.node_set(observers, n, "observers")
    if view != "secure-summation" or noise_removed or observers.size != 1:
        raise ParameterError("method='banded' is for one observer in the secure-summation "
                             "view without noise removal")
    resources.require_within(banded_memory(n, T), resources.memory_budget(max_memory),
                             f"method 'banded' at T = {T}", "raise max_memory")  # the band's
    # own memory is checked once its width is known (banded_interval)
    model = resolve_view(view, W, target, observers, noise_removed)
    if not _reaches_observers(Ws, W, target, model.observers):
        return _different_components(target, model, T)
    b = banded_interval(W, target, int(observers[0]), T, progress=progress,
                        max_memory=max_memory)
    bounds = [Bound("ones", b.lower, "lower", "c = 1 (the papers' choice), from the banded form")]
    if b.lambda_max is not None:
        bounds.append(Bound("spectral", min(T * b.lambda_max, float(T)), "certified upper",
                            "T lambda_max(M_T) (v2 Sec. 3.4), certified by a banded Cholesky "
                            "of F - B B^T / s"))
    if math.isfinite(b.diagonal_shift):
        bounds.append(Bound("diagonal_shift", b.diagonal_shift, "certified upper",
                            "sum(d) with M_T <= diag(d), d = (M_T 1)_+ + alpha lambda_max, "
                            "certified by a banded Cholesky of F - B diag(d)^-1 B^T"))
    bounds.append(Bound("local_dp", float(T), "certified upper",
                        "T, since M_T <= I (local DP)"))
    solver = {"solver": "banded form K = C F C^T, M_T = B^T F^-1 B (banded Cholesky)",
              "bandwidth": b.bandwidth, "sparse_products": b.products,
              "lambda_max_upper": b.lambda_max, "upper_certified": True,
              "estimated_memory_bytes": banded_memory(n, T)}
    notes = list(precision_notes) + [
        "banded form: the upper bound is the least of the spectral and diagonal-shift "
        "bounds (the entrywise bound and the searched shift need the T x T matrix M_T)"]
    return _result(target, model, T, lower=float(b.lower), upper=float(b.upper), exact=None,
                   exact_error=None, method="banded", signs=(1,) * T, bounds=tuple(bounds),
                   solver=solver, notes=tuple(notes))


def solve_planned(plan: _Plan, rtol, maxiter, progress, truncation_rtol, preconditioner):
    """The certified sandwich of ``M_T`` for a planned view and the solver's report, after
    the memory check of its method; ``(None, None)`` when every observation is a function of
    the attacker's own data and noise (``M_T = 0``).  Shared by :func:`squared_sensitivity`
    and :func:`sparsedp.gossip.target_block.view_target_block`."""
    system = plan.system
    _require_fits(plan.memory_of, system.T, plan.budget,
                  f"method {plan.method!r} with {system.m} observed rows and T = {system.T} "
                  "rounds")
    keep = ~system.redundant_rows().ravel()
    if not keep.any():
        return None, None
    return solve(system, plan.target, keep, plan.method, rtol, maxiter, progress,
                 truncation_rtol, preconditioner)


def estimate_cost(
    W: GossipInput,
    target: int,
    observers: Nodes,
    T: int,
    *,
    view: str = defaults.VIEW,
    noise_removed: bool = False,
    method: str = defaults.METHOD,
    preconditioner: str = defaults.PRECONDITIONER,
    max_memory: MemorySize = None,
) -> dict:
    """What :func:`squared_sensitivity` with these arguments would cost, without solving:
    the method it would use, its estimated peak memory and sparse products
    (:func:`sparsedp.gossip.cost.method_cost`), the memory budget, whether the request fits
    and the largest T that does.  Closed-form answers (local DP, target in the known noise,
    different components) cost no products and
    :data:`sparsedp.resources.QUERY_OVERHEAD`.  The arguments are checked as by
    :func:`squared_sensitivity`; a T that fits no method raises ``ResourceLimitError``.

    Parameters
    ----------
    W, target, observers, T, view, noise_removed, method, preconditioner, max_memory
        As for :func:`squared_sensitivity`.

    Returns
    -------
    dict
        ``method``, ``preconditioner`` (of the matrix-free path, else ``None``),
        ``memory_bytes``, ``sparse_products``, ``seconds`` (the time model of
        :func:`sparsedp.gossip.cost.method_cost` at the rate of sparse products measured now,
        :func:`sparsedp.gossip.cost.sparse_rate`: a planning figure, not a bound),
        ``observed_rows``, ``budget_bytes``, ``fits``, ``largest_T`` and ``notes``.

    Raises
    ------
    ParameterError, GossipMatrixError, GraphError
        bad input, as for :func:`squared_sensitivity`.
    ResourceLimitError
        if no method fits any T in the budget.

    Examples
    --------
    >>> import networkx as nx, sparsedp
    >>> W = sparsedp.gossip_matrix(nx.cycle_graph(8))
    >>> plan = sparsedp.estimate_cost(W, 0, [4], 10)
    >>> plan["method"], plan["fits"], plan["sparse_products"]
    ('structured', True, 20)
    """
    if method == "banded":  # O(T w): its own bound, not the dense paths' T x T floor
        T = validation.rounds(T)
        n = gossip_sequence(W, T)[0][0].shape[0]
        budget = resources.memory_budget(max_memory)
        memory = banded_memory(n, T)
        return {"method": "banded", "preconditioner": None, "memory_bytes": memory,
                "sparse_products": T - 1, "seconds": None,
                "observed_rows": 1, "budget_bytes": budget, "fits": memory <= budget,
                "largest_T": resources.largest_fitting(lambda t: banded_memory(n, t), budget),
                "notes": ["sparse products: at most T - 1 (the propagation stops where the "
                          "chain has mixed)",
                          "memory: the propagation only; the band's own (about 12 T (w + 3) "
                          "floats, w the mixing lag) is checked once w is known"]}
    _refuse_target_among_observers(target, observers)
    plan = _plan(W, target, observers, T, view, noise_removed, method, preconditioner,
                 max_memory)
    if isinstance(plan, _Answered):
        return {"method": "closed form", "preconditioner": None,
                "memory_bytes": QUERY_OVERHEAD,
                "sparse_products": 0, "seconds": 0.0,
                "budget_bytes": plan.budget, "fits": True, "largest_T": None,
                "notes": list(plan.result.notes)}
    fits = plan.cost.memory <= plan.budget
    return {
        "method": plan.method,
        "preconditioner": plan.preconditioner if plan.method == "matrix-free" else None,
        "memory_bytes": plan.cost.memory,
        "sparse_products": plan.cost.sparse_products,
        "seconds": plan.cost.work / sparse_rate(plan.system.W),
        "observed_rows": plan.system.m,
        "budget_bytes": plan.budget,
        "fits": fits,
        "largest_T": resources.largest_fitting(plan.memory_of, plan.budget),
        "notes": plan.notes,
    }


@dataclass
class _Answered:
    """A checked request answered by a closed form (infinite, local DP, different
    components), without a system to solve."""

    target: int
    budget: int
    result: SensitivityResult


@dataclass
class _Plan:
    """A checked request to solve: the system, the method and its cost."""

    target: int
    budget: int
    model: ObservationModel
    system: GossipSystem
    method: str
    cost: Cost
    notes: list[str] = field(default_factory=list)
    preconditioner: str = "stationary"

    def memory_of(self, T: int) -> int:
        system = self.system
        nnz = max(w.nnz for w in system.Ws)
        return method_cost(self.method, system.n, nnz, system.m, T, system.power_offset,
                           self.preconditioner, _dense_certificate(system)).memory


def _dense_certificate(system: GossipSystem) -> bool:
    """Whether ``lambda_min(K_T)`` is certified numerically (no analytic bound), which holds
    more dense copies of K (:func:`structured_memory`)."""
    return analytic_lambda_min_lower_bound(system) is None


def _refuse_target_among_observers(target, observers) -> None:
    """The public entries' rule (:func:`sparsedp.validation.not_among`); the engine itself
    also serves observed sets that contain the target (the PNDP view of matrix
    factorisation, a neighbour's messages)."""
    if observers is not None:
        validation.not_among(target, np.atleast_1d(np.asarray(observers, dtype=object)),
                             "target", "observers")


def _plan(W, target, observers, T, view, noise_removed, method, preconditioner,
          max_memory) -> _Plan | _Answered:
    """Check the arguments, resolve the view and the method, estimate the cost; closed forms
    (infinite, local DP, different components) are answered here."""
    T = validation.rounds(T)
    budget = resources.memory_budget(max_memory)
    _require_fits(minimal_memory, T, budget, f"T = {T} rounds (by any method)")
    Ws, precision_notes = gossip_sequence(W, T)
    n = Ws[0].shape[0]
    target = validation.node_index(target, n, "target")
    if observers is not None:
        observers = validation.node_set(observers, n, "observers")
    if method not in METHODS:
        raise ParameterError(f"unknown method {method!r}; choose one of {METHODS}")
    if preconditioner not in PRECONDITIONERS:
        raise ParameterError(
            f"unknown preconditioner {preconditioner!r}; choose one of {PRECONDITIONERS}"
        )
    pattern = Ws[0] if len(Ws) == 1 else sum(abs(w) for w in Ws)
    model = resolve_view(view, pattern, target, observers, noise_removed)

    if target in set(model.known_noise.tolist()):
        return _Answered(target, budget, _unbounded(target, model, T))
    if model.observes_everything:
        return _Answered(target, budget, _local_dp(target, model, T))
    if not _reaches_observers(Ws, pattern, target, model.observers):
        return _Answered(target, budget, _different_components(target, model, T))

    notes = [VIEW_NOTES[view]] if view in VIEW_NOTES else []
    notes.extend(precision_notes)
    system = GossipSystem(
        Ws, model.observers, T, power_offset=model.power_offset, known_noise=model.known_noise
    )
    symmetric = not system.time_varying and matrix_facts(system.W).symmetric
    if method == "structured" and not symmetric:
        raise ParameterError(
            "method='structured' needs one exactly symmetric W (K_T from the moments "
            "S W^l S^T); use method='gram' or 'matrix-free' for this W"
        )
    if system.time_varying and "gram" in (method, preconditioner):
        raise ParameterError(
            "the Gram assembly (method='gram', preconditioner='gram') needs one constant W; "
            "time-varying gossip has no single lag sequence: use method='matrix-free' with "
            "preconditioner='stationary'"
        )
    if preconditioner == "innovation" and model.power_offset:
        raise ParameterError(INNOVATION_NEEDS_V2_FORMS)
    if method == "dense" and system.m * T > gram.GRAM_MAX_DIM:
        raise ParameterError(
            f"method='dense' assembles the m T x m T matrix K_T: m T = {system.m * T} exceeds "
            f"{gram.GRAM_MAX_DIM}; use method='structured', 'gram' or 'matrix-free'"
        )
    if method == "auto":
        method = _auto_method(system, symmetric, notes)
    resolved = _resolved_preconditioner(system, method, preconditioner)
    nnz = max(w.nnz for w in system.Ws)
    cost = method_cost(method, n, nnz, system.m, T, system.power_offset, resolved,
                       _dense_certificate(system))
    return _Plan(target, budget, model=model, system=system, method=method, cost=cost,
                 notes=notes, preconditioner=resolved)


def _resolved_preconditioner(system: GossipSystem, method: str, choice: str) -> str:
    """The preconditioner the matrix-free path will use (for its cost): ``"auto"`` is gram
    for one constant W whose Gram assembly fits, else :func:`iterative_preconditioner`."""
    if method != "matrix-free" or choice != "auto":
        return choice if method == "matrix-free" else "stationary"
    if not system.time_varying and gram.gram_fits(system.n, system.m, system.T):
        return "gram"
    return iterative_preconditioner(system)


def _auto_method(system: GossipSystem, symmetric: bool, notes: list[str]) -> str:
    """``method="auto"``: structured when W is symmetric and its dense work
    (:func:`structured_memory`) fits in ``STRUCTURED_MEMORY_FRACTION`` of the physical memory,
    else gram, else matrix-free (with a note saying why)."""
    mT = system.m * system.T
    budget = STRUCTURED_MEMORY_FRACTION * resources.physical_memory()
    dense = structured_memory(system.m, system.T, _dense_certificate(system))
    if symmetric and dense <= budget:
        faster = _matrix_free_is_faster(system)
        if faster is None:
            return "structured"
        notes.append(faster)
        return "matrix-free"
    if system.time_varying:
        notes.append("time-varying W: using the matrix-free PCG path")
        return "matrix-free"
    reason = "W is not symmetric" if not symmetric else (
        f"the structured path's dense work ({dense / 2**30:.1f}"
        f" GiB) exceeds {STRUCTURED_MEMORY_FRACTION:.0%} of the memory"
    )
    if gram.gram_fits(system.n, system.m, system.T):
        notes.append(
            f"{reason}: using the Gram assembly (K_T from the lags (W^T)^l S^T, dense Cholesky)"
        )
        return "gram"
    lag_bytes, _ = gram.gram_memory(system.n, system.m, system.T)
    if mT <= gram.GRAM_MAX_DIM:
        reason += (
            f" and the Gram assembly needs {lag_bytes / 2**30:.1f} GiB of lags (limit "
            f"{gram.GRAM_MAX_LAG_BYTES / 2**30:.0f} GiB)"
        )
    notes.append(f"{reason}: using the matrix-free PCG path")
    return "matrix-free"


def _matrix_free_is_faster(system: GossipSystem) -> str | None:
    """Why the innovation-preconditioned PCG beats the structured path's dense Cholesky, or
    ``None``: when the view has the analytic ``lambda_min`` bound (v2 forms, all noise) and
    the time model (:func:`sparsedp.gossip.cost.method_cost`) puts the PCG's work below
    the dense factorisation's (many observed rows: the neighbourhood view of a hub)."""
    if system.power_offset or system.noise_removed:
        return None
    nnz = system.W.nnz
    dense = method_cost("structured", system.n, nnz, system.m, system.T).work
    pcg = method_cost("matrix-free", system.n, nnz, system.m, system.T,
                      preconditioner="innovation").work
    if pcg >= dense:
        return None
    return (f"{system.m} observed rows over T = {system.T} rounds: the innovation-"
            f"preconditioned PCG is estimated at {pcg / dense:.2g} of the structured path's "
            "work (dense Cholesky of the m T x m T K_T); using the matrix-free path")


def _result(target, model: ObservationModel, T: int, **fields) -> SensitivityResult:
    """A :class:`SensitivityResult` for this query and view, with the given bound fields."""
    return SensitivityResult(
        target=int(target),
        observers=tuple(int(i) for i in model.observers),
        T=T,
        view=model.view,
        noise_removed=model.noise_removed,
        known_noise=tuple(int(i) for i in model.known_noise),
        **fields,
    )


def _closed_form(target, model: ObservationModel, T: int, value: float, bound: Bound, note: str):
    """Result of a view whose sensitivity is known exactly without solving."""
    return _result(
        target,
        model,
        T,
        lower=value,
        upper=value,
        exact=value,
        exact_error=0.0,
        method="closed form",
        signs=(1,) * T,
        bounds=(bound,),
        notes=(note,),
    )


def _reaches_observers(Ws, pattern: sp.csr_matrix, target: int, observed_rows) -> bool:
    """Whether the target's connected component of the gossip graph (the pattern of W, or of
    the union of the W_t) holds an observed row; otherwise no message of the target ever
    reaches the attacker.  One W: its remembered components (:func:`matrix_facts`)."""
    if len(Ws) == 1:
        component = matrix_facts(Ws[0]).weak_components
    else:
        _, component = connected_components(pattern, directed=True, connection="weak")
    return bool(np.any(component[np.asarray(observed_rows)] == component[target]))


def _different_components(target, model: ObservationModel, T: int) -> SensitivityResult:
    """No observed row is in the target's component: ``G_T = 0``, ``M_T = 0``, Delta^2 = 0."""
    bound = Bound(
        "different_components", 0.0, "exact", "no observed row is in the target's connected "
        "component of the gossip graph: G_T = 0, so M_T = 0",
    )
    return _closed_form(
        target, model, T, 0.0, bound,
        "the target and its observers are in different connected components of the gossip "
        "graph: nothing the target sends ever reaches them (Delta^2 = 0)",
    )


def _local_dp(target, model: ObservationModel, T: int) -> SensitivityResult:
    """``S = I``: H is square block lower-triangular with identity diagonal blocks, hence
    invertible, ``H^+ H = I`` and ``M_T = I``: ``Delta^2 = T`` exactly."""
    bound = Bound("local_dp", float(T), "exact", "S = I: M_T = I, so Delta^2 = T")
    return _closed_form(target, model, T, float(T), bound, "local DP: every message is seen")


def _nothing_learned(target, model: ObservationModel, T: int) -> SensitivityResult:
    """Every observation is redundant (e.g. T = 1 with the attacker's own noise known: its
    first messages are its own data): ``M_T = 0`` and ``Delta^2 = 0`` exactly."""
    bound = Bound(
        "nothing_observed", 0.0, "exact", "every observation is a function of the attacker's "
        "own data and noise: M_T = 0",
    )
    return _closed_form(
        target, model, T, 0.0, bound,
        "every message the attacker sees is a function of its own data and noise: it learns "
        "nothing about the target",
    )


def _unbounded(target, model: ObservationModel, T: int) -> SensitivityResult:
    """The target is an observer whose own noise is removed: its first message ``x_0 + u_0``
    is seen with the noise known, ``b`` leaves the range of H and no (eps, delta) exists."""
    bound = Bound(
        "target_seen_without_noise",
        float("inf"),
        "exact",
        "the target observes its own data and knows its own noise",
    )
    return _closed_form(
        target, model, T, float("inf"), bound,
        "the target is among the observers and their noise is removed: no privacy (infinite "
        "sensitivity)",
    )


def _assemble(target, model, T, method, sandwich, bounds, signs, solver_info, notes):
    lower = max(b.value for b in bounds if b.kind in ("lower", "exact"))
    upper = min(b.value for b in bounds if b.kind == "certified upper")
    lower = float(max(lower, 0.0))
    exact = next((b.value for b in bounds if b.kind == "exact"), None)
    exact_error = None
    if exact is not None:  # the exhaustive maximum dominates every other feasible c
        exact = lower
        exact_error = float(upper - exact)
    return _result(
        target,
        model,
        T,
        lower=lower,
        upper=float(upper),
        exact=exact,
        exact_error=exact_error,
        method=method,
        signs=tuple(int(s) for s in np.asarray(signs).tolist()),
        bounds=tuple(bounds),
        solver=solver_info,
        notes=tuple(notes),
    )
