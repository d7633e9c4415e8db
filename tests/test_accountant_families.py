"""The online accountants of the other families (issue 34): matrix factorisation
(sparsedp.MFAccountant) and random walks (sparsedp.RandomWalkAccountant).  At every step
their answers contain the one-shot query's (mf_sensitivity: the interval's lower bound is its
lower bound to 1e-9 relative, the certified upper bounds never below it; random_walk_rdp: the
same loss bit for bit); rounds_within is the brute-force largest T; a checkpoint continues
with identical answers; bad input gets the one-shot query's errors.  The MF accountant's
one-shot route (every case mf_sensitivity accepts beyond the bordered factor and the closed
form) is checked per family, with the monotonicity in T that its rounds_within relies on."""

from __future__ import annotations

import json
import re
import textwrap

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

import sparsedp
from sparsedp.errors import ParameterError
from sparsedp.mf import (
    antipgd,
    banded_square_root,
    decor,
    dp_d_sgd,
    mf_d_sgd,
    mf_sensitivity,
    muffliato_sgd,
    square_root,
    zip_dl,
)
from tests.conftest import brute_force_rounds, killed_and_whole_runs, slow_after

TRUST = ("pndp-eq12", "pndp-eq12-no-own")
SCHEMES = ("user-level", "single", (2, 3))


def _random_graph(seed: int) -> sp.csr_matrix:
    """Metropolis weights on the largest component of an ER graph of 12-40 nodes."""
    rng = np.random.default_rng(seed)
    G = nx.gnp_random_graph(int(rng.integers(12, 40)), float(rng.uniform(0.1, 0.3)), seed=seed)
    G = nx.convert_node_labels_to_integers(G.subgraph(max(nx.connected_components(G),
                                                          key=len)).copy())
    return sp.csr_matrix(sparsedp.gossip_matrix(G, scheme="metropolis"))


def _mf_case(seed: int) -> tuple[sp.csr_matrix, int, list[int], dict]:
    """A graph, a target, one or two attackers (a neighbour of the target for every other
    seed, so that the target's own messages are observed) and the accountant's options."""
    W = _random_graph(seed)
    rng = np.random.default_rng(seed + 1000)
    n = W.shape[0]
    target = int(rng.integers(n))
    others = [i for i in range(n) if i != target]
    attackers = [int(i) for i in rng.choice(others, 1 + seed % 2, replace=False)]
    if seed % 2 == 0:
        neighbours = [int(j) for j in W[target].indices if j != target]
        attackers = [neighbours[0]]
    options = {"trust_model": TRUST[seed % 2], "participation_scheme": SCHEMES[seed % 3],
               "gradients": ("vector", "scalar")[(seed // 2) % 2]}
    return W, target, attackers, options


def _check_mf_every_step(seed: int, T: int) -> None:
    """The running bound against the one-shot lower bound at every step; the interval at
    every step up to T = 30 (the default tier), every tenth step and the last beyond (each
    is one more one-shot query)."""
    W, target, attackers, options = _mf_case(seed)
    if T > 30:  # the slow tier: no exhaustive search (2^(t-1) sign vectors) up to t = 24
        options["exact"] = False
    accountant = sparsedp.MFAccountant(W, target, attackers, sigma=2.0, **options)
    shortest = sparsedp.mf.participation.resolve(options["participation_scheme"]).shortest_run()
    for t in range(1, T + 1):
        accountant.step()
        running = accountant.upper
        if t < shortest:  # no whole pattern yet: the one-shot query refuses T
            with pytest.raises(ParameterError, match="participation"):
                accountant.interval()
            continue
        one_shot = mf_sensitivity(W, target, attackers, t, **options)
        assert running >= one_shot.lower, (t, running, one_shot.lower)
        if T > 30 and t % 10 and t < T:
            continue
        result = accountant.interval()
        assert result.T == t
        assert abs(result.lower - one_shot.lower) <= 1e-9 * max(one_shot.lower, 1e-300), t
        assert result.upper >= one_shot.lower
        assert result.upper == min(one_shot.upper, running)
        assert any(b.name == "incremental_rows" for b in result.bounds)


@pytest.mark.parametrize("seed", slow_after(range(20), keep=3))
def test_mf_interval_contains_the_one_shot_value_at_every_step(seed):
    _check_mf_every_step(seed, 200 if seed >= 3 and seed % 5 == 0 else 60 if seed >= 3
                         else 20)


def test_mf_under_local_dp_is_the_longest_pattern_exactly():
    W = _random_graph(1)
    accountant = sparsedp.MFAccountant(W, 0, None, sigma=2.0, algorithm=muffliato_sgd(3),
                                       trust_model="ldp", participation_scheme=(2, 3))
    for t in range(4, 12):
        accountant.step(1 if accountant.rounds else t)
        one_shot = mf_sensitivity(W, 0, None, accountant.rounds, algorithm=muffliato_sgd(3),
                                  trust_model="ldp", participation_scheme=(2, 3))
        assert accountant.upper == one_shot.lower == one_shot.upper == 2.0
        assert accountant.interval().lower == 2.0


def test_mf_running_bound_is_tight_far_from_the_attackers():
    """Away from the attackers every row of L^{-1} A_u has one sign, so the running bound is
    Theorem 7's entrywise sum, close to the one-shot upper bound."""
    W = sp.csr_matrix(sparsedp.gossip_matrix(nx.cycle_graph(12), scheme="metropolis"))
    accountant = sparsedp.MFAccountant(W, 0, [6], sigma=2.0, trust_model="pndp-eq12")
    accountant.step(30)
    one_shot = mf_sensitivity(W, 0, [6], 30, trust_model="pndp-eq12")
    assert one_shot.lower <= accountant.history[-1] <= one_shot.upper * (1 + 1e-6)
    # once the interval is asked, the answers are the one-shot result's own
    assert accountant.epsilon(1e-6) > one_shot.epsilon(2.0, 1e-6)  # the running bound
    result = accountant.interval()
    assert accountant.upper == result.upper == one_shot.upper
    assert accountant.epsilon(1e-6) == one_shot.epsilon(2.0, 1e-6)
    assert accountant.rdp(4.0) == one_shot.rdp(4.0, 2.0)
    pytest.importorskip("dp_accounting")
    assert accountant.to_dp_event().noise_multiplier == pytest.approx(
        2.0 / np.sqrt(one_shot.upper), rel=1e-15)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mf_rounds_within_is_the_brute_force_largest_T(seed):
    W, target, attackers, options = _mf_case(seed)
    options["participation_scheme"] = "user-level"  # the others' bounds stop at |pi| = k
    sigma, delta, limit = 3.0, 1e-5, 50

    def make():
        return sparsedp.MFAccountant(W, target, attackers, sigma=sigma, **options)

    probe = make()
    probe.step(25)
    epsilon = probe.epsilon(delta)
    expected = brute_force_rounds(make, epsilon, delta, limit)
    assert 3 <= expected < limit
    accountant = make()
    accountant.step(3)
    assert accountant.rounds_within(epsilon, delta, limit=limit) == expected
    assert accountant.rounds == 3  # looking ahead records nothing
    accountant.step(40)  # now the answer comes from the recorded steps (bisection)
    assert accountant.rounds_within(epsilon, delta, limit=limit) == expected
    true_T = mf_sensitivity(W, target, attackers, expected, **options)
    assert sparsedp.gaussian_epsilon(true_T.lower, sigma, delta) <= epsilon
    assert accountant.rounds_within(1e6, delta, limit=45) == 45


def _through_npz(state: dict, path) -> dict:
    """The state written to ``.npz`` and read back without pickle."""
    np.savez(path, **{key: np.asarray(value) for key, value in state.items()})
    with np.load(path, allow_pickle=False) as data:
        return {key: data[key] for key in data.files}


@pytest.mark.parametrize("seed", [0, 1])
def test_mf_checkpoint_continues_identically(seed, tmp_path):
    W, target, attackers, options = _mf_case(seed)
    original = sparsedp.MFAccountant(W, target, attackers, sigma=2.0, **options)
    original.step(12)
    restored = sparsedp.MFAccountant.from_state(_through_npz(original.state_dict(),
                                                             tmp_path / "mf.npz"))
    for accountant in (original, restored):
        accountant.step(9)
    assert restored.rounds == original.rounds == 21
    np.testing.assert_array_equal(restored.history, original.history)
    assert restored.epsilon(1e-6) == original.epsilon(1e-6)
    assert restored.interval().lower == original.interval().lower
    assert restored.interval().upper == original.interval().upper
    assert (restored.rounds_within(5.0, 1e-6, limit=80)
            == original.rounds_within(5.0, 1e-6, limit=80))


# -- the MF families beyond the bordered factor ------------------------------------------

# name: (algorithm, trust model, route, whether sens^2 is non-decreasing in T, T of the slow
# tier: each interval asked is one more one-shot query, whose cost grows with T)
FAMILIES = {
    "antipgd-pndp": (antipgd(), "pndp", "one-shot", True, 200),
    "dp-d-sgd-pndp": (dp_d_sgd(), "pndp", "one-shot", True, 200),
    "muffliato-sgd(2)-pndp": (muffliato_sgd(2), "pndp", "one-shot", True, 60),
    "dp-d-sgd-secldp": (dp_d_sgd(), "secldp", "closed form", True, 200),
    "antipgd-secldp": (antipgd(), "secldp", "one-shot", True, 200),
    "sr-pndp-eq12": (square_root(), "pndp-eq12", "one-shot", False, 40),
    "bsr(3)-causal-pndp": (banded_square_root(3, causal=True), "pndp", "one-shot", True, 40),
    "decor(1)-pndp": (decor(1.0), "pndp", "one-shot", True, 60),
    "zip-dl-pndp-eq12": (zip_dl(), "pndp-eq12", "one-shot", True, 60),
}


def _family_case(family: str, seed: int) -> tuple[sp.csr_matrix, int, list[int], dict]:
    """:func:`_mf_case`'s graph, target and attackers with the family's algorithm and trust
    model."""
    W, target, attackers, options = _mf_case(seed)
    algorithm, trust_model = FAMILIES[family][:2]
    return W, target, attackers, {**options, "algorithm": algorithm, "trust_model": trust_model}


def _route(accountant: sparsedp.MFAccountant) -> str:
    return ("one-shot" if accountant.one_shot else "bordered factor"
            if accountant._factor is not None else "closed form")


def _check_family_every_step(family: str, seed: int, T: int) -> None:
    """At every step up to 30 and every tenth beyond: the interval is the one-shot query's
    (or its error), the upper bound is certified against the one-shot lower bound and,
    where the accountant bisects, is never below the lower bound of the step before (sens^2
    non-decreasing in T); independent noise keeps the free bound |pi|."""
    W, target, attackers, options = _family_case(family, seed)
    if T > 30:
        options["exact"] = False
    accountant = sparsedp.MFAccountant(W, target, attackers, sigma=2.0, **options)
    route, monotone = FAMILIES[family][2:4]
    assert _route(accountant) == route
    scheme = sparsedp.mf.participation.resolve(options["participation_scheme"])
    previous_lower = 0.0
    for t in range(1, T + 1):
        accountant.step()
        if t > 30 and t % 10 and t < T:
            continue
        try:
            one_shot = mf_sensitivity(W, target, attackers, t, **options)
        except ParameterError as refusal:  # the accountant's answer is the same refusal
            with pytest.raises(ParameterError, match=re.escape(str(refusal))):
                accountant.interval()
            if t < scheme.shortest_run():  # the user-level query bounds every prefix
                user_level = mf_sensitivity(W, target, attackers, t,
                                            **{**options, "participation_scheme": "user-level"})
                assert accountant.upper == min(user_level.upper, accountant.history[t - 1])
            continue
        result = accountant.interval()
        assert result.T == t
        assert abs(result.lower - one_shot.lower) <= 1e-9 * max(one_shot.lower, 1e-300), t
        assert accountant.upper >= result.upper >= one_shot.lower  # upper: also the free bound
        assert accountant.upper == min(one_shot.upper, accountant.history[t - 1])
        if options["algorithm"].independent_noise:
            assert accountant.history[t - 1] == scheme.sizes(t)[1]
        else:
            assert accountant.history[t - 1] == np.inf
        if monotone:
            assert accountant.upper >= previous_lower * (1 - 1e-9), (t, previous_lower)
        previous_lower = one_shot.lower


FAMILY_SEEDS = [(family, seed) for family in FAMILIES for seed in range(20)]


@pytest.mark.parametrize("family, seed", slow_after(
    [case for case in FAMILY_SEEDS if case[1] == 0]
    + [case for case in FAMILY_SEEDS if case[1] > 0], keep=len(FAMILIES)))
def test_mf_family_interval_contains_the_one_shot_value_at_every_step(family, seed):
    _check_family_every_step(family, seed, 8 if seed == 0 else FAMILIES[family][4]
                             if seed % 5 == 0 else min(FAMILIES[family][4], 30))


@pytest.mark.parametrize("family", slow_after(
    ["antipgd-pndp", "sr-pndp-eq12", "dp-d-sgd-secldp", "dp-d-sgd-pndp",
     "muffliato-sgd(2)-pndp", "bsr(3)-causal-pndp", "antipgd-secldp", "decor(1)-pndp",
     "zip-dl-pndp-eq12"], keep=3))
def test_mf_family_rounds_within_is_the_brute_force_largest_T(family):
    """Bisection (sens^2 non-decreasing in T) or the scan (SR's future draws) against the
    brute force, from fresh accountants, for one case of each family on a small graph."""
    W, target, attackers, options = _family_case(family, 2)
    options.update(participation_scheme="user-level", gradients="vector")
    sigma, delta, limit = 3.0, 1e-5, 30

    def make():
        return sparsedp.MFAccountant(W, target, attackers, sigma=sigma, **options)

    probe = make()
    probe.step(9)
    epsilon = probe.epsilon(delta)
    expected = brute_force_rounds(make, epsilon, delta, limit)
    assert 9 <= expected < limit
    accountant = make()
    accountant.step(2)
    assert accountant.rounds_within(epsilon, delta, limit=limit) == expected
    assert accountant.rounds == 2  # looking ahead records nothing
    assert accountant.rounds_within(1e6, delta, limit=limit) == limit


def test_mf_family_checkpoint_continues_identically(tmp_path):
    W, target, attackers, options = _family_case("antipgd-pndp", 1)
    original = sparsedp.MFAccountant(W, target, attackers, sigma=2.0, **options)
    original.step(5)
    original.interval()  # a cached query is not part of the state
    restored = sparsedp.MFAccountant.from_state(_through_npz(original.state_dict(),
                                                             tmp_path / "mf.npz"))
    assert restored.one_shot and restored.algorithm == original.algorithm
    for accountant in (original, restored):
        accountant.step(4)
    assert restored.rounds == original.rounds == 9
    assert restored.epsilon(1e-6) == original.epsilon(1e-6)
    assert restored.interval().lower == original.interval().lower
    assert (restored.rounds_within(5.0, 1e-6, limit=20)
            == original.rounds_within(5.0, 1e-6, limit=20))


def test_mf_keeps_the_bordered_factor_and_the_closed_form_where_they_hold():
    W = sparsedp.gossip_matrix(nx.cycle_graph(8), scheme="metropolis")
    routes = {(alg.name, trust_model): _route(sparsedp.MFAccountant(
        W, 0, None if trust_model == "ldp" else [2], sigma=2.0, algorithm=alg,
        trust_model=trust_model))
        for alg in (dp_d_sgd(), muffliato_sgd(2), antipgd())
        for trust_model in ("pndp-eq12", "pndp-eq12-no-own", "pndp", "secldp", "ldp")}
    assert {key for key, route in routes.items() if route != "one-shot"} == {
        ("dp-d-sgd", "pndp-eq12"), ("dp-d-sgd", "pndp-eq12-no-own"), ("dp-d-sgd", "secldp"),
        ("dp-d-sgd", "ldp"), ("muffliato-sgd(2)", "secldp"), ("muffliato-sgd(2)", "ldp")}
    assert routes["dp-d-sgd", "pndp-eq12"] == "bordered factor"


def test_mf_non_symmetric_W_is_the_one_shot_query():
    W = sparsedp.gossip_matrix(nx.path_graph(6), scheme="row-normalised-self-loops")
    accountant = sparsedp.MFAccountant(W, 0, [2], sigma=2.0, trust_model="pndp-eq12")
    assert accountant.one_shot
    accountant.step(7)
    one_shot = mf_sensitivity(W, 0, [2], 7, trust_model="pndp-eq12")
    assert accountant.interval().lower == one_shot.lower
    assert accountant.upper == one_shot.upper


def test_mf_fixed_length_correlation_answers_at_its_length_only():
    W = sparsedp.gossip_matrix(nx.cycle_graph(8), scheme="metropolis")
    L = np.tril(np.ones((4, 4)))
    accountant = sparsedp.MFAccountant(W, 0, [2], sigma=2.0, algorithm=mf_d_sgd(L),
                                       trust_model="pndp")
    accountant.step(3)
    message = "its noise correlation is 4 x 4, the run has T = {} gradient steps"
    for answer in (lambda: accountant.upper, accountant.interval):
        with pytest.raises(ParameterError, match=message.format(3)):
            answer()
    with pytest.raises(ParameterError, match=message.format(1)):  # the scan's first step
        accountant.rounds_within(1.0, 1e-5, limit=10)
    accountant.step()
    one_shot = mf_sensitivity(W, 0, [2], 4, algorithm=mf_d_sgd(L))
    assert accountant.interval().lower == one_shot.lower
    assert accountant.epsilon(1e-5) == one_shot.epsilon(2.0, 1e-5)


@pytest.mark.parametrize("kwargs, attackers, message", [
    ({"trust_model": "pndp-foo"}, [2], "unknown trust model 'pndp-foo'"),
    ({"gradients": "matrix"}, [2], "gradients must be one of"),
    ({"exact": True}, [2], "exact=True is the exhaustive sign search"),
    ({"exact": "yes"}, [2], "exact must be 'auto', True or False"),
    ({"algorithm": "pgd"}, [2], "unknown algorithm 'pgd'"),
    ({"participation_scheme": (0, 2)}, [2], "k must be a positive integer"),
    ({"trust_model": "pndp"}, [0], "target"),
    ({"trust_model": "secldp"}, [], "the attacker set is empty"),
    ({"trust_model": "ldp"}, [2], "pass attackers=None"),
    ({"algorithm": mf_d_sgd(np.stack([np.eye(4)] * 5))}, [2],
     "one noise correlation per node for 5 nodes, W has 8"),
    ({"algorithm": mf_d_sgd(np.diag([1.0, 0.0, 1.0, 1.0])), "trust_model": "pndp"}, [2],
     "needs an invertible noise correlation"),
])
def test_mf_bad_input_gets_the_one_shot_error(kwargs, attackers, message):
    W = sparsedp.gossip_matrix(nx.cycle_graph(8), scheme="metropolis")
    with pytest.raises(ParameterError, match=message) as one_shot:
        mf_sensitivity(W, 0, attackers, 4, **kwargs)
    with pytest.raises(ParameterError, match=message) as accountant:
        sparsedp.MFAccountant(W, 0, attackers, sigma=2.0, **kwargs)
    assert str(accountant.value) == str(one_shot.value)


# -- random walks ------------------------------------------------------------------------

RW_OPTIONS = (
    {"receivers": [3], "contributions": 20},
    {},  # every other node, expected contributions (an estimate)
    {"coalition": [2, 5], "contributions": 7.5},
    {"sender_known": True, "contributions": 4, "clip": False},
)


def _rw_case(seed: int) -> tuple[sp.csr_matrix, dict]:
    W = _random_graph(seed)
    return W, {"source": 0, "sigma": 3.0, "alpha": 2.0, **RW_OPTIONS[seed % len(RW_OPTIONS)]}


def _check_rw_every_step(seed: int, T: int) -> None:
    W, options = _rw_case(seed)
    accountant = sparsedp.RandomWalkAccountant(W, **options)
    for t in range(1, T + 1):
        accountant.step()
        one_shot = sparsedp.random_walk_rdp(W, T=t, method="series", **options)
        loss = accountant.loss
        np.testing.assert_array_equal(loss.rdp, one_shot.rdp)
        np.testing.assert_array_equal(loss.receivers, one_shot.receivers)
        assert (loss.kind, loss.local_dp, loss.method) == (one_shot.kind, one_shot.local_dp,
                                                           one_shot.method)
        assert accountant.epsilon(1e-6) == one_shot.epsilon(1e-6).max()
        assert accountant.rdp(5.0) == one_shot.rdp_at(5.0).max()


@pytest.mark.parametrize("seed", slow_after(range(20), keep=4))
def test_rw_loss_is_the_one_shot_series_at_every_step(seed):
    _check_rw_every_step(seed, 200 if seed >= 4 else 30)


@pytest.mark.parametrize("seed", [0, 1, 4, 5])  # not 2, 3: clipped or local-DP losses are flat
def test_rw_rounds_within_is_the_brute_force_largest_T(seed):
    W, options = _rw_case(seed)
    delta, limit = 1e-5, 60
    probe = sparsedp.RandomWalkAccountant(W, **options)
    probe.step(20)
    epsilon = probe.epsilon(delta)
    best = 0
    for T in range(1, limit + 1):  # fresh one-shot queries
        if sparsedp.random_walk_rdp(W, T=T, method="series",
                                    **options).epsilon(delta).max() > epsilon:
            break
        best = T
    assert 1 <= best < limit
    accountant = sparsedp.RandomWalkAccountant(W, **options)
    accountant.step(2)
    assert accountant.rounds_within(epsilon, delta, limit=limit) == best
    assert accountant.rounds == 2
    accountant.step(50)
    assert accountant.rounds_within(epsilon, delta, limit=limit) == best
    assert accountant.rounds_within(1e6, delta, limit=70) == 70


@pytest.mark.parametrize("seed", [0, 2, 3])
def test_rw_checkpoint_continues_identically(seed, tmp_path):
    W, options = _rw_case(seed)
    original = sparsedp.RandomWalkAccountant(W, **options)
    original.step(11)
    restored = sparsedp.RandomWalkAccountant.from_state(_through_npz(original.state_dict(),
                                                                     tmp_path / "rw.npz"))
    np.testing.assert_array_equal(restored.loss.rdp, original.loss.rdp)
    for accountant in (original, restored):
        accountant.step(13)
    np.testing.assert_array_equal(restored.loss.rdp, original.loss.rdp)
    assert restored.epsilon(1e-6) == original.epsilon(1e-6)
    assert (restored.rounds_within(8.0, 1e-6, limit=90)
            == original.rounds_within(8.0, 1e-6, limit=90))


def test_rw_refuses_what_random_walk_rdp_refuses():
    W = sparsedp.gossip_matrix(nx.cycle_graph(8))
    with pytest.raises(ParameterError, match="sigma\\^2 >= 2 alpha"):
        sparsedp.RandomWalkAccountant(W, 0, sigma=1.0, alpha=4.0)
    with pytest.raises(ParameterError, match="coalition cannot be combined"):
        sparsedp.RandomWalkAccountant(W, 0, sigma=3.0, coalition=[2], receivers=[3])
    with pytest.raises(ParameterError, match="source"):
        sparsedp.RandomWalkAccountant(W, 0, sigma=3.0, receivers=[0, 3])
    with pytest.raises(ParameterError, match="no walk steps recorded"):
        sparsedp.RandomWalkAccountant(W, 0, sigma=3.0).epsilon(1e-5)


def test_budget_command_prints_a_line_per_family(capsys):

    from sparsedp.cli.main import main

    assert main(["budget", "--generator", "ring:12", "--target", "0", "--observer", "6",
                 "--epsilon", "6", "--delta", "1e-5", "--sigma", "3", "--limit", "300",
                 "--family", "gossip", "--family", "mf", "--family", "random-walk",
                 "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["budgets"]
    W = sparsedp.gossip_matrix(nx.cycle_graph(12))
    mf = sparsedp.MFAccountant(W, 0, [6], sigma=3.0).rounds_within(6.0, 1e-5, limit=300)
    walk = sparsedp.RandomWalkAccountant(W, 0, sigma=3.0, coalition=[6])
    assert [row["family"] for row in rows] == ["gossip", "mf", "random-walk"]
    assert rows[1] == {"family": "mf", "view": "dp-d-sgd, pndp", "target": 0,
                       "observers": [6], "rounds": mf, "reached_limit": mf == 300}
    assert rows[2]["rounds"] == walk.rounds_within(6.0, 1e-5, limit=300)
    assert 0 < mf < 300 and 0 < rows[2]["rounds"] < 300


@pytest.mark.parametrize("algorithm, trust_model", [("antipgd", "pndp"),
                                                      ("dp-d-sgd", "secldp")])
def test_budget_command_accepts_every_mf_trust_model_and_algorithm(algorithm, trust_model,
                                                                    capsys):
    from sparsedp.cli.main import main

    assert main(["budget", "--generator", "ring:12", "--target", "0", "--observer", "6",
                 "--epsilon", "6", "--delta", "1e-5", "--sigma", "3", "--limit", "40",
                 "--family", "mf", "--algorithm", algorithm, "--trust-model", trust_model,
                 "--json"]) == 0
    row = json.loads(capsys.readouterr().out)["budgets"][0]
    W = sparsedp.gossip_matrix(nx.cycle_graph(12))
    rounds = sparsedp.MFAccountant(W, 0, [6], sigma=3.0, algorithm=algorithm,
                                   trust_model=trust_model).rounds_within(6.0, 1e-5, limit=40)
    assert row == {"family": "mf", "view": f"{algorithm}, {trust_model}", "target": 0,
                   "observers": [6], "rounds": rounds, "reached_limit": False}
    assert 0 < rounds < 40


CHILD = textwrap.dedent("""
    import json, pathlib, sys
    import networkx as nx, numpy as np, sparsedp
    from sparsedp.accountant import save
    folder, family, T = pathlib.Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    checkpoint = folder / "acc.npz"
    kind = {"mf": sparsedp.MFAccountant, "random-walk": sparsedp.RandomWalkAccountant}[family]
    if checkpoint.exists():
        with np.load(checkpoint, allow_pickle=False) as data:
            accountant = kind.from_state({key: data[key] for key in data.files})
    else:
        W = sparsedp.gossip_matrix(nx.random_regular_graph(4, 40, seed=5), scheme="metropolis")
        accountant = (sparsedp.MFAccountant(W, 3, [17, 21], sigma=2.0,
                                           trust_model="pndp-eq12") if family == "mf" else
                      sparsedp.RandomWalkAccountant(W, 3, sigma=3.0, receivers=[17, 21]))
    while accountant.rounds < T:
        accountant.step()
        save(accountant, checkpoint)
        (folder / "rounds").write_text(str(accountant.rounds))
    answers = {"epsilon": accountant.epsilon(1e-6),
               "rounds_within": accountant.rounds_within(4.0, 1e-6, limit=2 * T)}
    if family == "mf":
        answers.update(history=accountant.history.tolist(), lower=accountant.interval().lower)
    else:
        answers.update(rdp=accountant.loss.rdp.tolist())
    print(json.dumps(answers))
""")


@pytest.mark.slow
@pytest.mark.parametrize("family", ["mf", "random-walk"])
def test_kill_9_and_restart_from_the_checkpoint_gives_identical_answers(family, tmp_path):
    T = 120
    resumed, whole = killed_and_whole_runs(tmp_path, CHILD, [family, T], T, kill_after=30)
    assert resumed == whole
