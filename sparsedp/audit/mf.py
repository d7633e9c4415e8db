"""Audit of the matrix-factorisation accounting of DP-D-SGD and Muffliato-SGD(K) under PNDP:
simulate the algorithm, attack it, compare with :func:`sparsedp.mf.mf_sensitivity`.

:func:`audit_mf` checks one instance ``(W, target, attackers, T, algorithm, trust,
participation)`` from the other side, with scalar gradients (``gradients="scalar"``: the
engine's exhaustive sign search is then the exact ``sens^2``):

1. the engine reports ``[lower, upper]`` on ``sens^2 = max_pi max_c c^T M_pi c`` for unit
   noise;
2. the algorithm is run literally (:mod:`sparsedp.audit.simulate_sgd`): once without noise
   per gradient step with only the target's gradient, 1 at that step (the columns ``S`` of
   the attacker's mean shifts), and ``trials`` times with noise only;
3. **the attacker picks its attack from simulations only**: from ``trials / 4`` runs it
   estimates ``Q = sigma^2 S^T Sigma_hat^+ S`` and takes the pattern ``pi`` and signs ``c``
   maximising ``c^T Q_pi c`` (:mod:`sparsedp.audit.search`: exhaustive over signs for
   patterns of at most 20 steps, else an ascent from many starts; a shift outside the
   noise's range wins outright: it is infinite);
4. from ``trials / 4`` fresh runs, ``sigma^2 m^T Sigma_hat^+ m`` for ``m = S_pi c`` with its
   exact interval (:func:`sparsedp.audit.statistics.mahalanobis`: the choice of ``c`` used
   other runs, so the interval is exact for that ``c``); it must overlap the engine's
   interval (**model mismatch** otherwise), in particular not lie above its upper bound
   (**upper bound violated**): ``c^T M c <= sens^2`` for every ``c``, so an upper bound below
   the truth is caught when the attacker's choice is worth more than it, a value above the
   truth when the choice is the maximiser (it is, up to the estimation error, in every
   instance measured);
5. the likelihood-ratio test on the remaining ``trials / 2`` runs per hypothesis gives lower
   bounds on epsilon and mu that must not exceed the engine's certified ones (**bound
   violated**).

The engine's ``sens^2`` is for ``C = I`` (the noise ``N(0, sigma^2)`` per node and step) and
unit-bounded gradients: the mechanism is ``sigma / sqrt(sens^2)``-GDP, epsilon is
``gaussian_epsilon(upper, sigma, delta)``.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from sparsedp import defaults, validation
from sparsedp.audit.batches import (
    MAX_FEATURES,
    GaussianVerdict,
    check_parameters,
    error_counts,
    plan_batches,
    run_batches,
    second_moment,
    verdict_fields,
)
from sparsedp.audit.search import strongest_attack
from sparsedp.audit.simulate_sgd import (
    attackers_cone,
    attackers_view,
    gradient_responses,
    simulate,
)
from sparsedp.audit.statistics import lower_bounds, mahalanobis, shift_gram, thresholds
from sparsedp.errors import ParameterError
from sparsedp.linalg.stochastic import check_gossip_matrix
from sparsedp.mf import algorithms, participation
from sparsedp.mf.result import MFResult
from sparsedp.mf.sensitivity import mf_sensitivity
from sparsedp.progress import progress_bar
from sparsedp.reprs import short_repr

__all__ = ["MFAuditResult", "audit_mf"]


@dataclass(frozen=True)
class MFAuditResult(GaussianVerdict):
    """One audited instance: the engine's ``sens^2`` interval, the attacker's estimate at its
    own choice of pattern and signs with the interval at ``confidence``, the empirical lower
    bounds on epsilon and mu against the certified ones, and the verdict."""

    algorithm: str
    K: int
    trust: str
    participation: str
    target: int
    attackers: tuple[int, ...]
    T: int
    sigma: float
    delta: float
    trials: int
    seed: int
    batch: int
    confidence: float
    engine_lower: float
    engine_upper: float
    epsilon_upper: float
    mu_upper: float
    steps: tuple[int, ...]
    signs: tuple[int, ...]
    sensitivity_estimate: float
    sensitivity_low: float
    sensitivity_high: float
    features: int
    epsilon_lower: float
    mu_lower: float
    model_matches: bool
    bound_holds: bool
    upper_holds: bool

    __repr__ = short_repr

    QUANTITY = "sens^2"

    @property
    def instance(self) -> str:
        return (f"algorithm={self.algorithm} trust={self.trust} "
                f"participation={self.participation} target={self.target} "
                f"attackers={','.join(map(str, self.attackers))} T={self.T} "
                f"sigma={self.sigma:g}")



def audit_mf(W, target: int, attackers, T: int = defaults.AUDIT_ROUNDS, *,
             algorithm=defaults.ALGORITHM, trust_model: str = defaults.TRUST_MODEL,
             participation_scheme=defaults.PARTICIPATION, sigma: float = defaults.SIGMA,
             delta: float = defaults.DELTA, trials: int = defaults.AUDIT_TRIALS,
             seed: int = defaults.SEED, confidence: float = defaults.CONFIDENCE,
             engine: MFResult | None = None,
             batch: int | None = None, threads: int | None = None,
             progress=None) -> MFAuditResult:
    """Audit :func:`~sparsedp.mf.mf_sensitivity` for one instance (module docstring).

    ``algorithm``: ``"dp-d-sgd"``, ``muffliato_sgd(K)`` or ``"muffliato-sgd(K)"`` (the
    algorithms with independent noise; others are refused).  ``engine``: the result to audit
    (default: ``mf_sensitivity`` with the same arguments and scalar gradients); passing one
    computed for another model shows what a mismatch looks like.  ``batch``: runs simulated at
    once (default: chosen from the graph's size, :func:`~sparsedp.audit.batches.plan_batches`).
    ``threads``: batches run concurrently (fewer when their batches do not fit the memory
    budget together); the result does not depend on it.
    """
    check_parameters(T, sigma, delta, trials, confidence, batch)
    algo = algorithms.resolve(algorithm)
    if not algo.independent_noise or algo.correlation == "decor":
        raise ParameterError(f"the SGD audit simulates DP-D-SGD and Muffliato-SGD(K) "
                             f"(independent noise), not {algo.name}")
    scheme = participation.resolve(participation_scheme)
    patterns = scheme.patterns(T)
    W = sp.csr_matrix(check_gossip_matrix(W, require=("nonnegative", "row_stochastic")),
                      dtype=np.float64)
    target = validation.node_index(target, W.shape[0], "target")
    view = attackers_view(W, attackers, trust_model, target)
    features = view.features(T, algo.K)
    if features > MAX_FEATURES:
        raise ParameterError(f"the attackers record {features} numbers per run (more than "
                             f"{MAX_FEATURES}): audit a smaller T or fewer attackers")
    cone = attackers_cone(W, T, algo.K, view)  # the nodes a run simulates (audit.cone)
    batch, threads = plan_batches(batch, 4 * cone.size + features, features, threads)
    if engine is None:
        engine = mf_sensitivity(W, target, list(view.attackers), T, algorithm=algo,
                                trust_model=trust_model, participation_scheme=scheme,
                                gradients="scalar", exact="auto")
    responses = gradient_responses(W, T, algo.K, view, target, cone)

    def moment(rng, size):
        return second_moment(simulate(W, T, algo.K, view, sigma, size, rng, cone))

    choose, train = trials // 4, trials // 4
    test = trials - choose - train
    seeds = np.random.SeedSequence(seed).spawn(3)
    bar = progress_bar(progress, total=trials, desc="audit", unit="run")
    try:
        with ThreadPoolExecutor(threads) as pool:
            gram = shift_gram(run_batches(pool, choose, batch, seeds[0], bar, moment), choose,
                              responses)
            steps, signs = strongest_attack(gram, patterns, seed=seed)
            shift = responses[:, steps] @ signs
            estimate = mahalanobis(run_batches(pool, train, batch, seeds[1], bar, moment),
                                   train, shift, confidence)
            taus = thresholds(estimate, test)
            shift_score = float(estimate.weights @ shift)
            counts = run_batches(
                pool, test, batch, seeds[2], bar,
                lambda rng, size: error_counts(
                    simulate(W, T, algo.K, view, sigma, size, rng, cone),
                    estimate.weights, taus, shift_score))
    finally:
        if bar is not None:
            bar.close()
    bounds = lower_bounds(counts[0], counts[1], test, delta, confidence)
    return MFAuditResult(
        algorithm=algo.name, K=algo.K, trust=trust_model, participation=scheme.name,
        target=int(target), attackers=tuple(int(a) for a in view.attackers), T=int(T),
        sigma=float(sigma), delta=float(delta), trials=int(trials), seed=int(seed),
        batch=int(batch),
        confidence=float(confidence), steps=tuple(int(s) for s in steps),
        signs=tuple(int(c) for c in signs), features=features,
        **verdict_fields(engine.lower, engine.upper, sigma, delta, estimate, bounds))

