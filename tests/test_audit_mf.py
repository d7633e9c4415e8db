"""The audit of the matrix-factorisation accounting (DP-D-SGD, Muffliato-SGD(K) under PNDP):
the literal simulator's exact Gaussian view against mf_sensitivity, the simulated attacker
against the engine on a suite of instances, wrong models caught, reproducibility, refusals."""

from __future__ import annotations

import itertools

import networkx as nx
import numpy as np
import pytest

import sparsedp
from sparsedp.audit.mf import audit_mf
from sparsedp.audit.simulate_sgd import attackers_view, gradient_responses, noise_responses
from sparsedp.errors import NodeIndexError, ParameterError
from sparsedp.mf import mf_sensitivity, muffliato_sgd, participation


def _florentine(scheme):
    G = nx.convert_node_labels_to_integers(nx.florentine_families_graph())
    return sparsedp.gossip_matrix(G, scheme=scheme)


FLORENTINE = _florentine("row-normalised-self-loops")
FLORENTINE_NO_LOOPS = _florentine("row-normalised")
RING = sparsedp.gossip_matrix(nx.cycle_graph(10), scheme="metropolis")
WS = sparsedp.gossip_matrix(nx.connected_watts_strogatz_graph(16, 4, 0.3, seed=3),
                            scheme="metropolis")

CASES = [  # (W, target, attackers, T, algorithm, trust, participation)
    (FLORENTINE, 1, [2], 8, "dp-d-sgd", "pndp", "user-level"),
    (FLORENTINE, 14, [2], 6, "dp-d-sgd", "pndp-eq12", "user-level"),
    (FLORENTINE, 1, [2], 8, muffliato_sgd(3), "pndp", "user-level"),
    (FLORENTINE, 1, [2, 7], 8, muffliato_sgd(2), "pndp", (2, 4)),
    (FLORENTINE_NO_LOOPS, 14, [2], 6, "dp-d-sgd", "pndp", "user-level"),
    (FLORENTINE_NO_LOOPS, 14, [2], 6, muffliato_sgd(2), "pndp-eq12", "user-level"),
    (RING, 0, [3], 10, "dp-d-sgd", "pndp", "single"),
    (RING, 0, [1], 9, muffliato_sgd(2), "pndp-eq12", (3, 3)),
    (WS, 5, [0], 6, muffliato_sgd(2), "pndp", "user-level"),
    (WS, 9, [0, 12], 5, "dp-d-sgd", "pndp-eq12", "user-level"),
]


def _exact_view_sensitivity(W, target, attackers, T, K, trust, scheme):
    """``max_pi max_c c^T S_pi^T Sigma^+ S_pi c`` of the simulator's records with the exact
    covariance ``Sigma = J J^T``: ``J`` the records' response to each unit noise (the
    simulator fed the identity as its noise), ``S`` the response to each unit gradient --
    both computed by the literal simulator, the maximum by enumeration."""
    import scipy.sparse as sp

    W = sp.csr_matrix(W, dtype=float)
    view = attackers_view(W, attackers, trust, target)
    J = noise_responses(W, T, K, view)
    S = gradient_responses(W, T, K, view, target)
    Q = S.T @ np.linalg.pinv(J @ J.T, rcond=1e-10, hermitian=True) @ S
    best = 0.0
    for steps in participation.resolve(scheme).patterns(T):
        for signs in itertools.product((1.0, -1.0), repeat=len(steps) - 1):
            c = np.array((1.0, *signs))
            best = max(best, float(c @ Q[np.ix_(steps, steps)] @ c))
    return best


def _whole_graph_records(W, T, K, view, target, noise, gradients):
    """The SGD protocol on every node (the simulator before its light cone): the reference.
    ``noise``: ``(T, n, runs)``; ``gradients``: ``(T, runs)``."""
    n, runs = noise.shape[1], noise.shape[2]
    per_step = view.features(1, K)
    out = np.zeros((T * per_step, runs))
    x = np.zeros((n, runs))
    for t in range(T):
        update = noise[t].copy()
        update[target] += gradients[t]
        if view.own_noise:
            start = t * per_step + K * view.senders.size
            out[start:start + view.attackers.size] = noise[t][view.attackers]
        x = x - update
        for k in range(K):
            row = t * per_step + k * view.senders.size
            out[row:row + view.senders.size] = x[view.senders]
            x = W @ x
    return out


@pytest.mark.parametrize("K", [1, 2])
@pytest.mark.parametrize("trust", ["pndp", "pndp-eq12"])
def test_the_light_cone_records_what_the_whole_graph_run_records(K, trust):
    """The SGD simulator runs round r on the nodes within T K - 1 - r hops of the records
    only (sparsedp.audit.cone): with the same noise and gradients its records equal those of
    a run on every node; on a ring of 40 its first round holds far fewer nodes."""
    import scipy.sparse as sp

    from sparsedp.audit.simulate_sgd import _run, attackers_cone

    n, T, target = 40, 4, 5
    W = sp.csr_matrix(sparsedp.gossip_matrix(nx.cycle_graph(n), scheme="metropolis"))
    view = attackers_view(W, [0, 1], trust, target)
    cone = attackers_cone(W, T, K, view)
    rng = np.random.default_rng(2)
    noise, gradients = rng.standard_normal((T, n, 3)), rng.standard_normal((T, 3))
    simulated = (_run(cone, T, K, view, lambda t, nodes: noise[t][nodes], 0, None, 3)
                 + _run(cone, T, K, view, None, target, gradients, 3))
    np.testing.assert_allclose(
        simulated, _whole_graph_records(W, T, K, view, target, noise, gradients),
        rtol=1e-13, atol=1e-15)
    assert cone.nodes[0].size < n


@pytest.mark.parametrize("case", range(len(CASES)))
def test_the_simulators_exact_gaussian_view_is_the_engines_value(case):
    """The literal simulator's view, with its covariance by linearity (no sampling), has the
    squared sensitivity that mf_sensitivity reports as exact (to 1e-7 relative)."""
    W, target, attackers, T, algorithm, trust, scheme = CASES[case]
    algo = sparsedp.mf.algorithms.resolve(algorithm)
    engine = mf_sensitivity(W, target, attackers, T, algorithm=algo, trust_model=trust,
                            participation_scheme=scheme, gradients="scalar")
    simulated = _exact_view_sensitivity(W, target, attackers, T, algo.K, trust, scheme)
    assert engine.exact is not None
    assert simulated == pytest.approx(engine.exact, rel=1e-7, abs=1e-10)


@pytest.mark.parametrize("case", range(len(CASES)))
def test_the_simulated_attacker_matches_the_engine(case):
    """10 instances (2 algorithms, K = 1, 2, 3, both PNDP variants, with and without
    self-loops, coalitions, user-level / single / cyclic participation): the attacker's
    interval on sens^2 at its own choice of signs holds the engine's exact value, and no
    empirical lower bound exceeds a certified upper one (Bonferroni-corrected confidence)."""
    W, target, attackers, T, algorithm, trust, scheme = CASES[case]
    result = audit_mf(W, target, attackers, T, algorithm=algorithm, trust_model=trust,
                      participation_scheme=scheme, trials=20_000, seed=case,
                      confidence=1 - 0.01 / len(CASES))
    assert result.passed, result.verdict
    assert result.sensitivity_low <= result.engine_upper
    assert result.sensitivity_high >= result.engine_lower
    assert 0 <= result.epsilon_lower <= result.epsilon_upper


def test_an_off_by_one_in_the_gossip_rounds_is_caught():
    """The value of Muffliato-SGD(2) claimed for a run with 3 gossip rounds per step."""
    wrong = mf_sensitivity(FLORENTINE, 14, [2], 6, algorithm=muffliato_sgd(2),
                           gradients="scalar")
    result = audit_mf(FLORENTINE, 14, [2], 6, algorithm=muffliato_sgd(3), trials=20_000,
                      engine=wrong)
    assert not result.passed and "model mismatch" in result.verdict
    assert result.sensitivity_low > wrong.upper  # the claimed value is below the truth


def test_an_attacker_that_subtracts_its_own_noise_is_not_the_eq12_model():
    """Without self-loops, eq. 12's model (own noise not used) is below what an attacker that
    subtracts its own noise learns: caught; with self-loops the two models agree."""
    kwargs = dict(algorithm=muffliato_sgd(2), gradients="scalar")
    eq12 = mf_sensitivity(FLORENTINE_NO_LOOPS, 14, [2], 6, trust_model="pndp-eq12", **kwargs)
    result = audit_mf(FLORENTINE_NO_LOOPS, 14, [2], 6, algorithm=muffliato_sgd(2),
                      trust_model="pndp", trials=20_000, engine=eq12)
    assert not result.passed and "model mismatch" in result.verdict
    assert "trust=pndp" in result.verdict and "target=14" in result.verdict
    eq12_loops = mf_sensitivity(FLORENTINE, 14, [2], 6, trust_model="pndp-eq12", **kwargs)
    agree = audit_mf(FLORENTINE, 14, [2], 6, algorithm=muffliato_sgd(2), trust_model="pndp",
                     trials=20_000, engine=eq12_loops)
    assert agree.passed, agree.verdict


def test_one_gradient_step_too_few_is_caught():
    wrong = mf_sensitivity(FLORENTINE, 1, [2], 7, gradients="scalar")
    result = audit_mf(FLORENTINE, 1, [2], 8, trials=20_000, engine=wrong)
    assert not result.model_matches and not result.bound_holds


def test_the_audit_is_reproducible_and_independent_of_the_thread_count():
    one = audit_mf(RING, 0, [2], 4, algorithm=muffliato_sgd(2), trials=6000, seed=4,
                   batch=1000, threads=1)
    two = audit_mf(RING, 0, [2], 4, algorithm=muffliato_sgd(2), trials=6000, seed=4,
                   batch=1000, threads=3)
    assert one.to_dict() == two.to_dict()
    other = audit_mf(RING, 0, [2], 4, algorithm=muffliato_sgd(2), trials=6000, seed=5,
                     batch=1000)
    assert other.sensitivity_estimate != one.sensitivity_estimate


@pytest.mark.parametrize("kwargs, message", [
    (dict(algorithm="antipgd"), "DP-D-SGD and Muffliato-SGD"),
    (dict(trust_model="ldp"), "unknown trust model"),
    (dict(attackers=[]), "attacker set is empty"),
    (dict(attackers=[0]), "target 0 is among the attackers"),
    (dict(T=0), "T must be a positive integer"),
    (dict(trials=5), "trials must be an integer >= 8"),
    (dict(participation_scheme=(4, 4)), "need T >= 13"),
])
def test_bad_input_is_one_clear_error(kwargs, message):
    args = dict(W=RING, target=0, attackers=[3], T=4, trials=1000)
    args.update(kwargs)
    with pytest.raises(ParameterError, match=message):
        audit_mf(**args)


def test_an_attacker_outside_the_rows_is_an_index_error():
    with pytest.raises(IndexError, match=r"unknown node id 99 for attacker: W has the rows 0\.\.") \
            as caught:
        audit_mf(RING, 0, [3, 99], 4, trials=1000)
    assert isinstance(caught.value, NodeIndexError)
