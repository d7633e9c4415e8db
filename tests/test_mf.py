"""Matrix-factorisation accounting (sparsedp.mf) against the dense reference of Bellet et al.'s
App. A (explicit A, B, C, SVD pseudo-inverse, brute force over patterns and signs)."""

import itertools

import networkx as nx
import numpy as np
import pytest

import sparsedp
from sparsedp.errors import GossipMatrixError, ParameterError
from sparsedp.mf import (
    antipgd,
    cyclic,
    decor,
    dp_d_sgd,
    mf_d_sgd,
    mf_sensitivity,
    muffliato_sgd,
    single_use,
    user_level,
    zip_dl,
)
from sparsedp.testing import (
    dense_decor_sensitivity,
    dense_mf_sensitivity,
    dense_zip_dl_sensitivity,
)
from tests.conftest import connected_instance, slow_after

T = 4
KARATE = nx.Graph(list(nx.karate_club_graph().edges()))  # unweighted
SCHEMES = {"single": single_use(), "user-level": user_level(), "cyclic(2,2)": cyclic(2, 2)}


def _mf_noise():
    rng = np.random.default_rng(5)
    L = np.tril(rng.uniform(-0.4, 0.4, (T, T)), -1) + np.diag(rng.uniform(0.7, 1.3, T))
    return L


ALGORITHMS = {
    "dp-d-sgd": (dp_d_sgd(), 1, None),
    "antipgd": (antipgd(), 1, np.eye(T) - np.eye(T, k=-1)),
    "muffliato(2)": (muffliato_sgd(2), 2, None),
    "mf-d-sgd": (mf_d_sgd(_mf_noise()), 1, _mf_noise()),
    "mf-d-sgd(K=2)": (mf_d_sgd(_mf_noise(), K=2), 2, _mf_noise()),
}


def _graph(name):
    if name == "florentine-self-loops":
        G = nx.florentine_families_graph()
        return sparsedp.gossip_matrix(G, scheme="row-normalised-self-loops"), (0, [3])
    if name == "florentine-no-self-loops":
        G = nx.florentine_families_graph()
        return sparsedp.gossip_matrix(G, scheme="row-normalised"), (1, [3, 9])
    if name == "karate-metropolis":
        return sparsedp.gossip_matrix(KARATE, scheme="metropolis"), (33, [0])
    seed = int(name.split("-")[1])
    G = connected_instance("er", 12, seed)
    W = sparsedp.gossip_matrix(G, scheme="row-normalised-self-loops")
    rng = np.random.default_rng(seed)
    nodes = rng.permutation(12)
    return W, (int(nodes[0]), sorted(int(a) for a in nodes[1:3]))


GRAPHS = ["florentine-self-loops", "florentine-no-self-loops", "karate-metropolis", "er-1",
          "er-2"]
TRUSTS = ["ldp", "pndp", "pndp-eq12"]


def _close(a, b, rel):
    return abs(a - b) <= rel * max(abs(b), 1e-300) + 1e-13


SLOW_GRAPHS = ("karate-metropolis", "er-2", "florentine-no-self-loops")  # 1-4 s a case


@pytest.mark.parametrize("graph,alg,trust", [
    pytest.param(*case, marks=pytest.mark.slow) if case[0] in SLOW_GRAPHS else case
    for case in itertools.product(GRAPHS, ALGORITHMS, TRUSTS)])
def test_against_dense_reference(graph, alg, trust):
    """Every scheme: lower <= reference exact <= upper, Thm 7 to 1e-8, exact to 1e-7
    (5 graphs x 5 algorithms x 3 trust models x 3 schemes = 225 instances)."""
    W, (target, attackers) = _graph(graph)
    algorithm, K, noise = ALGORITHMS[alg]
    attackers = None if trust == "ldp" else attackers
    for scheme_name, scheme in SCHEMES.items():
        ref = dense_mf_sensitivity(W, target, T, scheme.patterns(T), K=K, noise=noise,
                                   trust=trust, attackers=attackers or ())
        res = mf_sensitivity(W, target, attackers, T, algorithm=algorithm, trust_model=trust,
                             participation_scheme=scheme, gradients="scalar")
        what = f"{graph} {alg} {trust} {scheme_name}"
        assert ref["range_condition"] and res.range_condition, what
        assert res.lower <= ref["exact"] * (1 + 1e-9) + 1e-13, what
        assert res.upper >= ref["exact"] * (1 - 1e-9) - 1e-13, what
        assert res.thm7 is not None and _close(res.thm7, ref["thm7"], 1e-8), (
            what, res.thm7, ref["thm7"])
        assert res.exact is not None and _close(res.exact, ref["exact"], 1e-7), (
            what, res.exact, ref["exact"])
        assert res.thm7 >= res.lower
        vector = mf_sensitivity(W, target, attackers, T, algorithm=algorithm,
                                trust_model=trust, participation_scheme=scheme)
        assert vector.exact is None or scheme_name == "single" or vector.lower == vector.upper
        _check_vector(vector, ref, what)
        assert vector.to_dict()["gradients"] == "vector"


@pytest.mark.parametrize("seed", range(10))
def test_dsgd_pndp_is_the_gossip_neighbourhood_view(seed):
    """DP-D-SGD, user level: 'pndp' = view 'neighbourhood' with the attackers' noise removed;
    'pndp-eq12' (W[a, a] > 0) = view 'neighbourhood' without noise removal, whose Thm 7 sum
    (the entrywise bound) is MFDL's value."""
    G = connected_instance("er", 20, 100 + seed)
    W = sparsedp.gossip_matrix(G, scheme="row-normalised-self-loops")
    rng = np.random.default_rng(seed)
    target, attacker = (int(x) for x in rng.choice(20, 2, replace=False))
    Tn = 6
    mf = mf_sensitivity(W, target, [attacker], Tn, gradients="scalar")
    gossip = sparsedp.squared_sensitivity(W, target, [attacker], Tn, view="neighbourhood",
                                          noise_removed=True)
    assert _close(mf.exact, gossip.exact, 1e-9) and _close(mf.upper, gossip.upper, 1e-9)
    eq12 = mf_sensitivity(W, target, [attacker], Tn, trust_model="pndp-eq12",
                          gradients="scalar")
    plain = sparsedp.squared_sensitivity(W, target, [attacker], Tn, view="neighbourhood")
    assert _close(eq12.exact, plain.exact, 1e-9)
    entrywise = next(b.value for b in plain.bounds if b.name == "entrywise")
    assert _close(eq12.thm7, entrywise, 1e-9)
    # own message observed (W[a, a] > 0): both PNDP conventions agree for DP-D-SGD
    assert _close(eq12.exact, mf.exact, 1e-7)
    ref = dense_mf_sensitivity(W, target, Tn, [np.arange(Tn)], trust="pndp-eq12",
                               attackers=[attacker])
    assert _close(eq12.thm7, ref["thm7"], 1e-8)


def test_pndp_conventions_differ_without_self_loops():
    """Without W[a, a] the attacker does not receive its own message: eq. 12 sees less."""
    W = sparsedp.gossip_matrix(nx.florentine_families_graph(), scheme="row-normalised")
    a = mf_sensitivity(W, 0, [8], 5, gradients="scalar")
    b = mf_sensitivity(W, 0, [8], 5, trust_model="pndp-eq12", gradients="scalar")
    assert a.exact != pytest.approx(b.exact, rel=1e-3)


def test_thm7_overstates_and_exceeds_local_dp_for_a_neighbour():
    """Direct neighbour of the attacker: M has negative entries, sum |M| > exact."""
    W = sparsedp.gossip_matrix(nx.florentine_families_graph(), scheme="row-normalised-self-loops")
    r = mf_sensitivity(W, 2, [5], 8, trust_model="pndp-eq12", gradients="scalar")
    assert r.thm7 > r.exact * 1.1 and r.thm7 > 8 > r.exact  # Thm 7's sum is worse than LDP
    assert r.upper < 8


def test_ldp_closed_forms():
    W = sparsedp.gossip_matrix(KARATE)
    r = mf_sensitivity(W, 0, None, 7, trust_model="ldp")
    assert r.lower == r.upper == 7.0
    r = mf_sensitivity(W, 0, None, 6, algorithm=antipgd(), trust_model="ldp",
                       gradients="scalar")
    assert r.exact == pytest.approx(91.0, rel=1e-9)  # sum_(s,t) (T - max(s, t))
    r = mf_sensitivity(W, 0, None, 6, trust_model="ldp", participation_scheme=single_use())
    assert r.upper == 1.0


@pytest.mark.parametrize("scheme", [single_use(), user_level(), cyclic(2, 2)])
def test_range_condition_failure_is_infinite(scheme):
    L = np.diag([1.0, 0.0, 1.0, 1.0])  # no noise at step 1
    W = sparsedp.gossip_matrix(nx.florentine_families_graph())
    r = mf_sensitivity(W, 0, None, 4, algorithm=mf_d_sgd(L), trust_model="ldp",
                       participation_scheme=scheme)
    ref = dense_mf_sensitivity(W, 0, 4, scheme.patterns(4), noise=L)
    assert not ref["range_condition"]
    assert not r.range_condition and r.upper == float("inf") and r.lower == float("inf")
    assert r.to_dict()["upper"] == "infinity"


def test_bad_input_is_one_line():
    W = sparsedp.gossip_matrix(nx.florentine_families_graph())
    cases = [
        (ParameterError, dict(target=0, attackers=[0])),
        (ParameterError, dict(target=0, attackers=[])),
        (ParameterError, dict(target=0, attackers=[1], participation_scheme=cyclic(3, 3))),
        (ParameterError, dict(target=0, attackers=[1], trust_model="ldp")),
        (ParameterError, dict(target=0, attackers=[1], trust_model="cdp")),
        (ParameterError, dict(target=0, attackers=[1], gradients="matrix")),
    ]
    for error, kwargs in cases:
        with pytest.raises(error) as info:
            mf_sensitivity(W, T=5, **kwargs)
        assert "\n" not in str(info.value)
    bad = W.toarray()
    bad[0, 0] += 0.5
    with pytest.raises(GossipMatrixError):
        mf_sensitivity(bad, 0, [1], 5)
    with pytest.raises(ParameterError):
        mf_d_sgd(np.ones((3, 2)))  # not square (any square L is a correlation)
    with pytest.raises(ParameterError):
        muffliato_sgd(0)


@pytest.mark.parametrize("algorithm", [dp_d_sgd(), decor(1.0), zip_dl(), antipgd()])
def test_bad_input_is_one_line_for_every_algorithm(algorithm):
    """Issue 14's list: attacker = target (also inside a coalition), empty attacker set,
    participation longer than T, a non-stochastic or negative W, attackers under 'ldp'; each
    a one-line SparseDPError.  (A C that does not factor A cannot be passed: the API builds
    A, B, C from the constructors, A = B C by construction wherever C exists; a singular
    noise correlation, the only case without C, is refused under PNDP and infinite under LDP
    exactly where the range condition fails.)"""
    W = sparsedp.gossip_matrix(nx.florentine_families_graph())
    bad = W.toarray()
    bad[0, 0] += 0.5
    negative = W.toarray()
    j = int(np.flatnonzero(negative[1])[-1])
    negative[1, j] += negative[1, 1] + 0.1
    negative[1, 1] = -0.1  # rows still sum to 1, one entry negative
    cases = [
        dict(W=W, target=0, attackers=[0]),
        dict(W=W, target=0, attackers=[1, 0]),
        dict(W=W, target=0, attackers=[]),
        dict(W=W, target=0, attackers=[1], participation_scheme=cyclic(3, 3)),
        dict(W=W, target=0, attackers=[1], participation_scheme=(2, 5)),
        dict(W=W, target=0, attackers=[1], trust_model="ldp"),
        dict(W=W, target=0, attackers=None, trust_model="pndp"),
        dict(W=bad, target=0, attackers=[1]),
        dict(W=W, target=15, attackers=[1]),
        dict(W=negative, target=0, attackers=[2]),
    ]
    for kwargs in cases:
        with pytest.raises(sparsedp.SparseDPError) as info:
            mf_sensitivity(T=5, algorithm=algorithm, **kwargs)
        assert "\n" not in str(info.value), str(info.value)


def test_too_large_dense_assemblies_are_refused_in_one_line():
    """Zip-DL and DECOR under PNDP assemble B B^T densely: beyond the limit, a one-line
    ParameterError, never a silent approximation."""
    W = sparsedp.gossip_matrix(KARATE)
    hub = int(np.argmax(W.getnnz(axis=1)))  # 17 neighbours: 17 x 500 kept rows
    for algorithm, trust, attackers in ((zip_dl(), "ldp", None), (decor(1.0), "pndp", [hub])):
        with pytest.raises(ParameterError) as info:
            mf_sensitivity(W, 0, attackers, 500, algorithm=algorithm, trust_model=trust)
        assert "\n" not in str(info.value) and "exceeds" in str(info.value)


def test_muffliato_rdp_composition_is_below_the_joint_value():
    """Muffliato-SGD(K) with one gradient step is Muffliato averaging: the attacker v (W[v, v]
    = 0, max-degree weights) receives ``e_w^T W^t (x + eta)`` from its neighbours w for
    t < K, and neither its own message nor its noise ('pndp-eq12').  ``muffliato_rdp``
    composes these messages as if their noises were independent; the joint Gaussian
    mechanism of the same messages (MF, dense reference and a direct pseudo-inverse agree)
    reveals the target completely here, so the composed value is not an upper bound."""
    G = connected_instance("er", 20, 307)
    W = sparsedp.gossip_matrix(G, scheme="max-degree")
    v, u, K = 5, 0, 2
    assert W[v, v] == 0 and nx.shortest_path_length(G, u, v) == 2
    mf = mf_sensitivity(W, u, [v], 1, algorithm=muffliato_sgd(K), trust_model="pndp-eq12",
                        gradients="scalar")
    ref = dense_mf_sensitivity(W, u, 1, [np.arange(1)], K=K, trust="pndp-eq12", attackers=[v])
    Wd = W.toarray()
    H = np.array([np.linalg.matrix_power(Wd, t)[w] for t in range(K) for w in sorted(G[v])])
    a = H[:, u]
    joint = a @ np.linalg.pinv(H @ H.T) @ a
    assert mf.lower == pytest.approx(1.0, abs=1e-9) and ref["exact"] == pytest.approx(1.0)
    assert joint == pytest.approx(1.0)
    composed = sparsedp.muffliato_rdp(W, u, K, sigma=1.0, alpha=2.0, receivers=[v]).rdp[0]
    assert composed == pytest.approx(float(np.sum(a**2 / np.diag(H @ H.T))), rel=1e-9)
    assert composed < 0.48  # 0.4717
    assert mf.rdp(alpha=2.0, sigma=1.0) == pytest.approx(1.0, abs=1e-9)  # local DP


@pytest.mark.parametrize("graph", GRAPHS)
@pytest.mark.parametrize("trust", ["ldp", "secldp"])
def test_decor_against_dense_reference(graph, trust):
    """DECOR with every message public: M = c I_T (App. A.5 built with explicit secrets and
    known-noise rows), for every scheme; 5 graphs x 2 trust models x 3 schemes."""
    W, (target, attackers) = _graph(graph)
    attackers = None if trust == "ldp" else attackers
    for scheme in SCHEMES.values():
        ref = dense_decor_sensitivity(W, target, T, scheme.patterns(T), secret_scale=1.5,
                                      attackers=attackers or ())
        M = ref["M"]
        assert np.allclose(M, M[0, 0] * np.eye(T), atol=1e-10)
        res = mf_sensitivity(W, target, attackers, T, algorithm=decor(1.5), trust_model=trust,
                             participation_scheme=scheme)
        assert res.lower <= ref["exact"] * (1 + 1e-9) and res.upper >= ref["exact"] * (1 - 1e-9)
        assert _close(res.thm7, ref["thm7"], 1e-8) and _close(res.exact, ref["exact"], 1e-7)


def test_secldp_without_secrets_is_local_dp():
    W = sparsedp.gossip_matrix(nx.florentine_families_graph())
    assert mf_sensitivity(W, 0, [8], 5, trust_model="secldp").upper == 5.0


@pytest.mark.parametrize("K", [2, 3])
def test_muffliato_rows_certified_by_structure_without_rationals(monkeypatch, K):
    """Beyond the exact rational elimination (limit 0 here), the rows the recursion proves
    dependent are dropped and B B^T on the rest is certified positive definite: a certified
    interval around the dense reference, Theorem 7 to 1e-8."""
    from sparsedp.mf import exact_rows

    monkeypatch.setattr(exact_rows, "EXACT_WORK_LIMIT", 0)
    W, (target, attackers) = _graph("florentine-self-loops")
    res = mf_sensitivity(W, target, attackers, T, algorithm=muffliato_sgd(K),
                         gradients="scalar")
    ref = dense_mf_sensitivity(W, target, T, [np.arange(T)], K=K, trust="pndp",
                               attackers=attackers)
    assert res.solver["rows_decided_by"] == "structure" and not res.solver["estimate"]
    assert res.lower <= ref["exact"] * (1 + 1e-9) <= res.upper * (1 + 1e-9)
    assert _close(res.thm7, ref["thm7"], 1e-8)
    assert not any(b.kind == "estimate" for b in res.bounds)


def test_muffliato_float_fallback_reports_estimates(monkeypatch):
    """Where neither the structure, nor lambda_min, nor exact rationals decide the rows (here
    the structural step is disabled and the exact limit is 0), a pivoted Cholesky of the
    computed B B^T drops rows: lower bounds stay certified, the other upper bounds become
    estimates, |pi| stays."""
    from sparsedp.mf import blocks, exact_rows

    monkeypatch.setattr(exact_rows, "EXACT_WORK_LIMIT", 0)
    monkeypatch.setattr(blocks, "structural_observations",
                        lambda W, observed, known, T, K: np.ones(K * T * observed.size, bool))
    W, (target, attackers) = _graph("florentine-self-loops")
    res = mf_sensitivity(W, target, attackers, T, algorithm=muffliato_sgd(2),
                         gradients="scalar")
    ref = dense_mf_sensitivity(W, target, T, [np.arange(T)], K=2, trust="pndp",
                               attackers=attackers)
    assert res.solver["rows_decided_by"] == "float" and res.solver["estimate"]
    assert res.lower <= ref["exact"] * (1 + 1e-9) <= res.upper * (1 + 1e-9)
    assert res.upper == T and res.thm7 is None
    assert any(b.kind == "estimate" for b in res.bounds)
    assert any("estimates" in note for note in res.notes)


def test_privacy_conversions():
    W = sparsedp.gossip_matrix(nx.florentine_families_graph())
    r = mf_sensitivity(W, 0, [8], 6)
    assert r.mu(2.0) == pytest.approx(np.sqrt(r.upper) / 2.0)
    assert r.rdp(3.0, 2.0) == pytest.approx(3.0 * r.upper / 8.0)
    assert r.epsilon(2.0, 1e-5) == sparsedp.gaussian_epsilon(r.upper, 2.0, 1e-5)


@pytest.mark.parametrize("alg", ["antipgd", "muffliato(2)"])
def test_matrix_free_operators_match_the_dense_matrices(alg):
    """MFSystem's B (a LinearOperator: sparse products only) and A_u equal App. A's explicit
    matrices (observed rows; the known-noise columns deleted, the target's columns of A)."""
    from sparsedp.mf.operators import MFSystem
    from sparsedp.mf.trust import resolve
    from sparsedp.testing import dense_mf_matrices

    W, (target, attackers) = _graph("florentine-no-self-loops")
    algorithm, K, noise = ALGORITHMS[alg]
    L = algorithm.noise_matrix(T)
    obs = resolve("pndp", W, target, attackers)
    system = MFSystem(W, obs.observed, obs.known_noise, T, K, L)
    ref = dense_mf_matrices(W, T, K=K, noise=noise, trust="pndp", attackers=attackers)
    n, m, R = W.shape[0], obs.observed.size, K * T
    rows = R * m  # the message rows come first, in round-major order
    keep_cols = [t * n + v for t in range(T) for v in range(n) if v not in attackers]
    B = system.B @ np.eye(T * n)
    assert np.allclose(B[:, keep_cols], ref["B"][:rows][:, keep_cols], atol=1e-13)
    assert np.allclose(np.delete(B, keep_cols, axis=1), 0.0)
    Au = ref["A"][:rows][:, [t * n + target for t in range(T)]]
    assert np.allclose(system.A_target(target), Au, atol=1e-13)
    Y = np.random.default_rng(0).standard_normal((rows, 3))
    assert np.allclose(system.B.T @ Y, B.T @ Y, atol=1e-12)


def _check_against(res, ref, what, vector=None):
    """lower <= reference <= upper, Theorem 7 to 1e-8 and the exact value to 1e-7."""
    assert ref["range_condition"] and res.range_condition, what
    assert res.lower <= ref["exact"] * (1 + 1e-9) + 1e-13, (what, res.lower, ref["exact"])
    assert res.upper >= ref["exact"] * (1 - 1e-9) - 1e-13, (what, res.upper, ref["exact"])
    assert res.thm7 is not None and _close(res.thm7, ref["thm7"], 1e-8), (
        what, res.thm7, ref["thm7"])
    assert res.exact is not None and _close(res.exact, ref["exact"], 1e-7), (
        what, res.exact, ref["exact"])
    if vector is not None:
        _check_vector(vector, ref, what)


def _check_vector(vector, ref, what):
    """Vector gradients: the reported interval meets the reference SDP bracket
    (:func:`sparsedp.testing.sdp_max`), which lies above the scalar (sign) maximum."""
    sdp_low, sdp_high = ref["vector"]
    assert sdp_low >= ref["exact"] * (1 - 1e-9) - 1e-13, what  # SDP >= sign maximum
    assert vector.lower <= sdp_high * (1 + 1e-9) + 1e-13, (what, vector.lower, sdp_high)
    assert vector.upper * (1 + 2e-9) + 2e-13 >= sdp_low, (what, vector.upper, sdp_low)


ZIP_TRUSTS = ["ldp", "pndp", "pndp-eq12", "secldp"]


@pytest.mark.parametrize("graph,trust,own", slow_after(itertools.product(GRAPHS, ZIP_TRUSTS,
                                                                          [False, True]), 6))
def test_zip_dl_against_dense_reference(graph, trust, own):
    """Zip-DL: the message-noise assembly (2|E| sources, plus the own copies' with
    ``own_copy_noise``) against the paper's n^2 virtual-slot simulation, every scheme, single
    attackers and coalitions (5 graphs x 4 trust models x 2 variants x 3 schemes = 120
    instances)."""
    W, (target, attackers) = _graph(graph)
    attackers = None if trust == "ldp" else attackers
    for scheme_name, scheme in SCHEMES.items():
        ref = dense_zip_dl_sensitivity(W, target, T, scheme.patterns(T), trust=trust,
                                       attackers=attackers or (), own_copy_noise=own)
        res = mf_sensitivity(W, target, attackers, T, algorithm=zip_dl(own), trust_model=trust,
                             participation_scheme=scheme, gradients="scalar")
        vector = mf_sensitivity(W, target, attackers, T, algorithm=zip_dl(own),
                                trust_model=trust, participation_scheme=scheme)
        _check_against(res, ref, f"zip-dl {graph} {trust} own={own} {scheme_name}", vector)


def test_zip_dl_noise_sources_are_the_directed_edges():
    """One virtual noise source per directed edge (2|E|), not n^2; Theorem 5's factorisation
    A = B C exists (C = B^+ A: every column of A in range(B))."""
    G = nx.florentine_families_graph()
    W = sparsedp.gossip_matrix(G, scheme="row-normalised-self-loops")
    res = mf_sensitivity(W, 0, None, 3, algorithm=zip_dl(), trust_model="ldp")
    assert res.solver["noise_sources"] == 2 * G.number_of_edges() == 40
    ref = dense_zip_dl_sensitivity(W, 0, 3, [np.arange(3)])
    assert ref["noise_sources"] == 40
    A, B = ref["A"], ref["B"]
    assert np.allclose(B @ (np.linalg.pinv(B) @ A), A, atol=1e-9)


def test_zip_dl_ldp_exceeds_local_dp():
    """A node's own copy carries no noise, so under LDP the accumulated gradient is released
    each step with fresh noise only: a leaf (Acciaiuoli, W[u, u] = 1/2) reveals
    x_t = sum_(k <= t) 2^(k - t) g_k + noise, sens^2 = 1 + 1.5^2 + 1.75^2 + 1.875^2 > T."""
    W = sparsedp.gossip_matrix(nx.florentine_families_graph(), scheme="row-normalised-self-loops")
    res = mf_sensitivity(W, 0, None, 4, algorithm=zip_dl(), trust_model="ldp",
                         gradients="scalar")
    assert res.exact == pytest.approx(9.828125, rel=1e-9) and res.lower > 4
    own = mf_sensitivity(W, 0, None, 4, algorithm=zip_dl(own_copy_noise=True),
                         trust_model="ldp", gradients="scalar")
    assert 4 < own.lower and own.upper < res.lower  # noise on the own copy helps, not enough


DECOR_PNDP = ["pndp", "pndp-eq12"]


@pytest.mark.parametrize("graph,trust", list(itertools.product(GRAPHS, DECOR_PNDP)))
def test_decor_pndp_against_dense_reference(graph, trust):
    """DECOR with the attackers' messages only (App. A.5's form): against the explicit
    [I, s Inc] construction with the known-noise and known-secret rows (5 graphs x 2 trust
    models x 3 schemes, single attackers and coalitions)."""
    W, (target, attackers) = _graph(graph)
    for scheme_name, scheme in SCHEMES.items():
        ref = dense_decor_sensitivity(W, target, T, scheme.patterns(T), secret_scale=1.5,
                                      attackers=attackers, trust=trust)
        res = mf_sensitivity(W, target, attackers, T, algorithm=decor(1.5), trust_model=trust,
                             participation_scheme=scheme, gradients="scalar")
        vector = mf_sensitivity(W, target, attackers, T, algorithm=decor(1.5),
                                trust_model=trust, participation_scheme=scheme)
        _check_against(res, ref, f"decor {graph} {trust} {scheme_name}", vector)


@pytest.mark.parametrize("seed", range(10))
def test_decor_without_secrets_is_dp_d_sgd(seed):
    """Cross-check on 10 random graphs: DECOR(0) under PNDP (dense assembly) equals DP-D-SGD
    under PNDP (the gossip engine) and the gossip neighbourhood view; DECOR(0) under LDP is
    local DP; Zip-DL's PNDP value lies below its LDP value (fewer observations)."""
    G = connected_instance("er", 16, 200 + seed)
    W = sparsedp.gossip_matrix(G, scheme="row-normalised-self-loops")
    rng = np.random.default_rng(seed)
    target, attacker = (int(x) for x in rng.choice(16, 2, replace=False))
    Tn = 5
    for trust in ("pndp", "pndp-eq12"):
        d0 = mf_sensitivity(W, target, [attacker], Tn, algorithm=decor(0.0),
                            trust_model=trust, gradients="scalar")
        sgd = mf_sensitivity(W, target, [attacker], Tn, trust_model=trust,
                             gradients="scalar")
        assert _close(d0.exact, sgd.exact, 1e-8) and _close(d0.thm7, sgd.thm7, 1e-8)
    gossip = sparsedp.squared_sensitivity(W, target, [attacker], Tn, view="neighbourhood",
                                          noise_removed=True)
    assert _close(d0.upper, gossip.upper, 1e-7) or d0.lower <= gossip.upper
    assert mf_sensitivity(W, target, None, Tn, algorithm=decor(0.0),
                          trust_model="ldp").upper == pytest.approx(Tn, rel=1e-12)
    local = sparsedp.squared_sensitivity(W, target, None, Tn, view="local-dp")
    assert mf_sensitivity(W, target, None, Tn, trust_model="ldp").upper == local.upper == Tn
    zl = mf_sensitivity(W, target, None, Tn, algorithm=zip_dl(), trust_model="ldp",
                        gradients="scalar")
    zp = mf_sensitivity(W, target, [attacker], Tn, algorithm=zip_dl(), gradients="scalar")
    assert zp.lower <= zl.upper * (1 + 1e-9)


@pytest.mark.parametrize("seed", range(10))
def test_muffliato_messages_joint_value_on_random_graphs(seed):
    """Cross-check on 10 random graphs (docs/mf.md, relation to muffliato_rdp):
    Muffliato-SGD(K) with one step under 'pndp-eq12' (W[v, v] = 0) is the joint Gaussian
    mechanism of exactly the messages muffliato_rdp composes (a direct pseudo-inverse of
    those rows), and muffliato_rdp is their one-by-one composition."""
    G = connected_instance("er", 18, 400 + seed)
    W = sparsedp.gossip_matrix(G, scheme="max-degree")
    Wd = W.toarray()
    v = int(np.argmax([d for _, d in sorted(G.degree())]))
    assert Wd[v, v] == 0
    u = next(int(x) for x in range(18) if x != v)
    K = 3
    mf = mf_sensitivity(W, u, [v], 1, algorithm=muffliato_sgd(K), trust_model="pndp-eq12",
                        gradients="scalar")
    H = np.array([np.linalg.matrix_power(Wd, t)[w] for t in range(K) for w in sorted(G[v])])
    a = H[:, u]
    joint = float(a @ np.linalg.pinv(H @ H.T) @ a)
    assert mf.lower <= joint * (1 + 1e-9) + 1e-12 <= mf.upper * (1 + 2e-9) + 2e-12
    composed = sparsedp.muffliato_rdp(W, u, K, sigma=1.0, alpha=2.0, receivers=[v]).rdp[0]
    assert composed == pytest.approx(min(1.0, float(np.sum(a**2 / np.diag(H @ H.T)))),
                                     rel=1e-9)


@pytest.mark.parametrize("trust", ["pndp", "pndp-eq12", "secldp"])
def test_adjacent_coalition_zip_dl_and_decor(trust):
    """A coalition of two adjacent attackers (Medici, Salviati) against Pazzi: messages between
    attackers are dropped as functions of the coalition's knowledge (Zip-DL 'pndp', 'secldp')
    or kept (the reference keeps every one); both agree."""
    W = sparsedp.gossip_matrix(nx.florentine_families_graph(), scheme="row-normalised-self-loops")
    attackers, target = [1, 9], 10
    assert W[1, 9] > 0 and W[9, 10] > 0
    ref = dense_zip_dl_sensitivity(W, target, T, [np.arange(T)], trust=trust,
                                   attackers=attackers)
    res = mf_sensitivity(W, target, attackers, T, algorithm=zip_dl(), trust_model=trust,
                         gradients="scalar")
    _check_against(res, ref, f"zip-dl coalition {trust}")
    if trust != "secldp":
        ref = dense_decor_sensitivity(W, target, T, [np.arange(T)], secret_scale=0.7,
                                      attackers=attackers, trust=trust)
        res = mf_sensitivity(W, target, attackers, T, algorithm=decor(0.7),
                             trust_model=trust, gradients="scalar")
        _check_against(res, ref, f"decor coalition {trust}")
