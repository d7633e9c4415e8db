"""Privacy maps of the random-walk and matrix-factorisation families: the table of
:func:`sparsedp.privacy_map` (one row per (observer, target) pair with ``observer !=
target``: hop distance, ``lower``, ``upper``, ``kind``, ``epsilon``) for the two other paper
families, with the work shared where the family's structure allows.

Random walks (:func:`random_walk_map`, Cyffers et al.)
    The loss of a source u towards every receiver comes from one column (the exact walk
    series, or the log-Green column with its error bound: :func:`sparsedp.random_walk_rdp`),
    so the map costs one column per *target*, whatever the number of observers.
    ``observer`` is the receiver v, ``target`` the source u.  ``upper`` is the Renyi loss
    ``eps_alpha(u -> v)`` at the order ``alpha`` (the theorem's bound, its numerical error
    added, clipped at the local-DP value); ``kind`` ``"certified upper"`` under a
    contributions cap, ``"estimate"`` with the expected ``T / n`` contributions (the
    theorem's assumption then holds only on average); ``lower`` is NaN (the theorem gives
    no lower bound); ``epsilon`` is the pair's (epsilon, delta)-DP minimised over Renyi
    orders (:meth:`sparsedp.randomwalk.pairwise.PairwiseLoss.epsilon`).

Matrix factorisation (:func:`mf_map`, Bellet et al.)
    For each observer a (attacker set ``{a}`` under the trust model), the attacker's lags,
    ``K_T``, its rounding bound, certified ``lambda_min`` and factorisation are computed
    once and serve every target (:func:`sparsedp.linalg.matrix_facts.reuse_scope`, as in
    :func:`sparsedp.mf.distance_summary`; each row equals the single
    :func:`sparsedp.mf_sensitivity` call bit for bit).  ``lower`` and ``upper`` bound
    ``sens^2``; ``kind`` ``"exact"`` when the exhaustive sign search ran (scalar gradients,
    small T: ``[exact, exact + error]``), ``"certified upper"`` otherwise (``"lower"`` when
    no certified upper bound exists, ``upper`` then infinite); ``epsilon`` is
    ``gaussian_epsilon(upper, sigma, delta)``.

Both return a :class:`sparsedp.maps.privacy_map.PrivacyMap` (summaries, plots, Parquet store
as for gossip maps); its ``parameters["family"]`` names the family.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.sparse.csgraph import shortest_path

from sparsedp import defaults, resources, validation
from sparsedp.errors import ParameterError
from sparsedp.hints import ExactSearch, MapSource, MemorySize, NodeSelection, Progress
from sparsedp.linalg.matrix_facts import is_locked, reuse_scope
from sparsedp.linalg.stochastic import lock_gossip_matrix
from sparsedp.maps.plan import DEFAULT_MAX_PAIRS, estimate, require_pairs
from sparsedp.maps.privacy_map import (
    KIND_CODE,
    KIND_NAMES,
    PrivacyMap,
    _describe,
    _source,
    hop_pattern,
)
from sparsedp.maps.selection import select_nodes
from sparsedp.mf import algorithms, participation
from sparsedp.mf.batched import scope_targets
from sparsedp.mf.sensitivity import GRADIENTS, mf_sensitivity
from sparsedp.mf.trust import TRUST_MODELS
from sparsedp.progress import progress_bar
from sparsedp.randomwalk.accounting import METHODS, random_walk_rdp, require_noise_condition

__all__ = ["mf_map", "random_walk_map"]

BYTES_PER_PAIR = 12 + 3 * 8 + 8 + 1 + 16  # rows, distance, 3 floats, hops, kind code, string


def random_walk_map(source: MapSource, observers: NodeSelection = defaults.SELECTION,
                    targets: NodeSelection = defaults.SELECTION, T: int = defaults.ROUNDS,
                    sigma: float = defaults.RANDOM_WALK_SIGMA, alpha: float = defaults.ALPHA,
                    delta: float | None = defaults.DELTA, *,
                    scheme: str = defaults.SCHEME, contributions: float | None = None,
                    method: str = defaults.METHOD, progress: Progress = None,
                    max_memory: MemorySize = None,
                    max_pairs: int | None = DEFAULT_MAX_PAIRS) -> PrivacyMap:
    """The random-walk privacy map (module docstring): Renyi losses at order ``alpha`` of
    every selected target (the walk's source) towards every selected observer (a receiver).

    Parameters
    ----------
    source : a symmetric doubly stochastic W (rows are nodes) or a graph (labels;
        ``W = gossip_matrix(graph, scheme)``).
    observers, targets : ``"all"``, a list of nodes or ``("sample", k, seed)``.
    T : walk steps.
    sigma, alpha : noise and Renyi order (``sigma^2 >= 2 alpha (alpha - 1)``; default 2 and 2,
        the smallest noise that meets it at alpha = 2).
    delta : delta of the ``epsilon`` column (NaN with ``None``; default 1e-5).
    scheme : weight scheme for graph input.
    contributions : a cap on each source's contributions (certified); default the
        expectation ``T / n`` (an estimate).
    method : ``"auto"``, ``"series"`` or ``"log-green"`` (:func:`sparsedp.random_walk_rdp`).
    progress : a bar over the targets.
    max_memory : budget for the table, checked before any work.
    max_pairs : the most pairs computed, as for :func:`sparsedp.privacy_map`.

    Returns
    -------
    PrivacyMap

    Raises
    ------
    ParameterError
        Bad T, sigma, alpha (``sigma^2 < 2 alpha (alpha - 1)``), delta or sample size.
    GraphError
        An unknown node.
    ResourceLimitError
        The table does not fit in ``max_memory``, or more pairs than ``max_pairs``.

    Examples
    --------
    >>> import networkx as nx, sparsedp
    >>> m = sparsedp.random_walk_map(nx.cycle_graph(8), targets=[0], T=40, sigma=10.0,
    ...                              alpha=4.0, delta=1e-5, contributions=5)
    >>> [round(r["upper"], 4) for r in m.rows()][:3], m.rows()[0]["kind"]
    ([0.1, 0.0795, 0.0518], 'certified upper')
    """
    T = validation.rounds(T)
    if delta is not None:
        delta = validation.probability_delta(delta)
    require_noise_condition(sigma, alpha)  # checked here: a map may compute no pair
    if contributions is not None:
        contributions = validation.real("contributions", contributions)
        if not (math.isfinite(contributions) and contributions >= 1.0):
            raise ParameterError(f"contributions must be a finite number >= 1, got "
                                 f"{contributions!r}")
    if method not in METHODS:
        raise ParameterError(f"method must be one of {METHODS}, got {method!r}")
    graph, W = _source(source, scheme)
    n = W.shape[0]
    obs = select_nodes(observers, graph, n, "observers")
    tgt = select_nodes(targets, graph, n, "targets")
    require_pairs(estimate("random-walk", n, W.nnz, obs.size, tgt.size, _pairs(obs, tgt), T,
                           epsilon=delta is not None), max_pairs)
    table = _Table(graph, W, obs, tgt, max_memory, f"the random-walk map at T = {T}")
    bar = progress_bar(progress, total=tgt.size, desc="targets", unit="target")
    kind = None
    try:
        for u in tgt:
            receivers = obs[obs != u]
            if receivers.size:
                loss = random_walk_rdp(W, int(u), T, sigma, alpha, contributions=contributions,
                                       receivers=receivers, method=method)
                kind = "certified upper" if loss.kind == "upper" else "estimate"
                eps = (loss.epsilon(delta) if delta is not None
                       else np.full(receivers.size, np.nan))
                table.put(loss.receivers, np.full(receivers.size, u), np.nan, loss.rdp,
                          KIND_CODE[kind], eps)
            if bar is not None:
                bar.update()
    finally:
        if bar is not None:
            bar.close()
    parameters = {"family": "random-walk", "T": T, "sigma": float(sigma),
                  "alpha": float(alpha), "delta": delta, "contributions": contributions,
                  "method": method, "nodes": n, "observers": _describe(observers),
                  "targets": _describe(targets),
                  "scheme": scheme if graph is not None else None}
    notes: tuple[str, ...] = (
        "random walks: observer = receiver, target = the walk's source; upper = Renyi loss at "
        f"order {alpha:g}, no lower bound (NaN); epsilon minimised over orders",)
    if kind == "estimate":
        notes += ("contributions = T / n in expectation: the uppers are estimates, not "
                  "certified (give a contributions cap for certified bounds)",)
    return table.privacy_map(parameters, notes, {"columns_computed": int(tgt.size)})


def mf_map(source: MapSource, observers: NodeSelection = defaults.SELECTION,
           targets: NodeSelection = defaults.SELECTION, T: int = defaults.MF_ROUNDS,
           sigma: float | None = defaults.SIGMA, delta: float | None = defaults.DELTA, *,
           scheme: str = defaults.MF_SCHEME,
           algorithm: str | algorithms.Algorithm = defaults.ALGORITHM,
           trust_model: str = defaults.TRUST_MODEL,
           participation_scheme: str | participation.Participation = defaults.PARTICIPATION,
           gradients: str = defaults.GRADIENTS, exact: ExactSearch = defaults.EXACT,
           progress: Progress = None, max_memory: MemorySize = None,
           max_pairs: int | None = DEFAULT_MAX_PAIRS) -> PrivacyMap:
    """The matrix-factorisation privacy map (module docstring): bounds on ``sens^2`` of
    every selected target towards each selected observer (attacker set ``{observer}``).

    Parameters
    ----------
    source : a row-stochastic non-negative W or a graph
        (``W = gossip_matrix(graph, scheme)``).
    observers, targets : ``"all"``, a list of nodes or ``("sample", k, seed)``.
    T : gradient steps.
    sigma, delta : noise and delta of the ``epsilon`` column (both or neither; default 1 and
        1e-5, :mod:`sparsedp.defaults`; ``None`` for no epsilon column).
    scheme : weight scheme for graph input.
    algorithm, trust_model, participation_scheme, gradients, exact : as for
        :func:`sparsedp.mf_sensitivity`.
    progress : a bar over the observers.
    max_memory : budget for the table (checked before any work) and each pair's dense work.
    max_pairs : the most pairs computed, as for :func:`sparsedp.privacy_map`.

    Returns
    -------
    PrivacyMap

    Raises
    ------
    ParameterError
        Bad T, sigma without delta, an unknown algorithm, trust model or sample size.
    GraphError
        An unknown node.
    ResourceLimitError
        The table or a pair's dense work does not fit in ``max_memory``, or more pairs than
        ``max_pairs``.

    Examples
    --------
    >>> import networkx as nx, sparsedp
    >>> m = sparsedp.mf_map(nx.cycle_graph(6), observers=[0], T=4, sigma=5.0, delta=1e-5)
    >>> r = m.rows()[0]
    >>> r["observer"], r["target"], r["distance"], r["kind"], r["lower"] <= r["upper"]
    (0, 1, 1, 'certified upper', True)
    """
    T = validation.rounds(T)
    if (sigma is None) != (delta is None):
        raise ParameterError("give both sigma and delta (for the epsilon column) or neither")
    if sigma is not None:
        sigma = validation.sigma(sigma)
        delta = validation.probability_delta(delta)
    algorithms.resolve(algorithm)  # checked here: a map may compute no pair
    participation.resolve(participation_scheme)
    if trust_model not in TRUST_MODELS:
        raise ParameterError(f"trust_model must be one of {TRUST_MODELS}, got {trust_model!r}")
    if gradients not in GRADIENTS:
        raise ParameterError(f"gradients must be one of {GRADIENTS}, got {gradients!r}")
    if exact not in ("auto", True, False):
        raise ParameterError(f"exact must be 'auto', True or False, got {exact!r}")
    graph, W = _source(source, scheme)
    if not is_locked(W):  # the shared work needs a W that cannot change in place
        W = lock_gossip_matrix(W)
    n = W.shape[0]
    obs = select_nodes(observers, graph, n, "observers")
    tgt = select_nodes(targets, graph, n, "targets")
    require_pairs(estimate("mf", n, W.nnz, obs.size, tgt.size, _pairs(obs, tgt), T,
                           epsilon=sigma is not None), max_pairs)
    table = _Table(graph, W, obs, tgt, max_memory, f"the matrix-factorisation map at T = {T}")
    bar = progress_bar(progress, total=obs.size, desc="observers", unit="observer")
    options = {"algorithm": algorithm, "trust_model": trust_model, "gradients": gradients,
               "participation_scheme": participation_scheme, "exact": exact,
               "max_memory": max_memory}
    try:
        for a in obs:
            chosen = tgt[tgt != a]
            low, up = np.empty(chosen.size), np.empty(chosen.size)
            codes = np.empty(chosen.size, dtype=np.int8)
            eps = np.full(chosen.size, np.nan)
            # the attacker's lags, K and its factorisation: once; on the MF operator path
            # every target from that factor at once (sparsedp.mf.batched)
            with reuse_scope(), scope_targets(chosen.tolist()):
                for k, j in enumerate(chosen):
                    r = mf_sensitivity(W, int(j), [int(a)], T, **options)
                    if r.exact is not None:
                        low[k], up[k], name = r.exact, r.exact + r.exact_error, "exact"
                    else:
                        low[k], up[k] = r.lower, r.upper
                        name = "certified upper" if np.isfinite(r.upper) else "lower"
                    codes[k] = KIND_CODE[name]
                    if sigma is not None and np.isfinite(up[k]):
                        eps[k] = r.epsilon(sigma, delta)
            table.put(np.full(chosen.size, a), chosen, low, up, codes, eps)
            if bar is not None:
                bar.update()
    finally:
        if bar is not None:
            bar.close()
    algorithm_name = algorithm if isinstance(algorithm, str) else repr(algorithm)
    parameters = {"family": "mf", "T": T, "sigma": sigma, "delta": delta,
                  "algorithm": algorithm_name, "trust_model": trust_model,
                  "participation_scheme": str(participation_scheme), "gradients": gradients,
                  "exact": exact, "nodes": n, "observers": _describe(observers),
                  "targets": _describe(targets),
                  "scheme": scheme if graph is not None else None}
    notes = ("matrix factorisation: attacker set = {observer}; lower <= sens^2 <= upper; "
             "epsilon = gaussian_epsilon(upper, sigma, delta)",)
    return table.privacy_map(parameters, notes, {})


class _Table:
    """The pair table of a family map, filled in any order: every selected pair with
    ``observer != target``, rows in the order of :func:`sparsedp.privacy_map` (observers
    major, targets in the given order), hop distances in the undirected pattern of W."""

    def __init__(self, graph, W, obs: np.ndarray, tgt: np.ndarray, max_memory, what: str):
        pairs = _pairs(obs, tgt)
        resources.require_within(pairs * BYTES_PER_PAIR, resources.memory_budget(max_memory),
                                 f"{what} ({pairs} pairs)", "select fewer observers or targets")
        self.graph, self.W, self.obs, self.tgt = graph, W, obs, tgt
        self.position = np.full(W.shape[0], -1, dtype=np.int64), np.full(W.shape[0], -1,
                                                                          dtype=np.int64)
        self.position[0][obs] = np.arange(obs.size)
        self.position[1][tgt] = np.arange(tgt.size)
        shape = (obs.size, tgt.size)
        self.values = {name: np.full(shape, np.nan) for name in ("lower", "upper", "epsilon")}
        self.kind = np.zeros(shape, dtype=np.int8)

    def put(self, observers, targets, lower, upper, kind, epsilon) -> None:
        """Write the pairs ``(observers[k], targets[k])`` (rows of W)."""
        at = self.position[0][observers], self.position[1][targets]
        self.values["lower"][at] = lower
        self.values["upper"][at] = upper
        self.values["epsilon"][at] = epsilon
        self.kind[at] = kind

    def privacy_map(self, parameters: dict, notes: tuple, info: dict) -> PrivacyMap:
        obs, tgt, W = self.obs, self.tgt, self.W
        keep = (obs[:, None] != tgt[None, :]).ravel()
        pattern = hop_pattern(W)
        hops = shortest_path(pattern, unweighted=True, indices=obs)[:, tgt].ravel()[keep]
        rows_type = np.int32 if W.shape[0] < 2**31 else np.int64
        names = ((self.graph.ids_of(obs), self.graph.ids_of(tgt)) if self.graph is not None
                 else (obs.astype(rows_type), tgt.astype(rows_type)))
        columns = {
            "observer": np.repeat(names[0], tgt.size)[keep],
            "target": np.tile(names[1], obs.size)[keep],
            "distance": np.where(np.isfinite(hops), hops, -1).astype(np.int32),
            "lower": self.values["lower"].ravel()[keep],
            "upper": self.values["upper"].ravel()[keep],
            "kind": KIND_NAMES[self.kind.ravel()[keep]],
            "epsilon": self.values["epsilon"].ravel()[keep],
        }
        return PrivacyMap(columns=columns, parameters=parameters, notes=notes, info=info)


def _pairs(obs: np.ndarray, tgt: np.ndarray) -> int:
    """Rows of a family table: every selected pair with ``observer != target``."""
    return int(obs.size * tgt.size - np.intersect1d(obs, tgt).size)
