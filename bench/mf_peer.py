"""Side by side with MFDL, the code of Bellet et al. (issue 32): every target of attacker 0
under PNDP, one process per side and row, one BLAS thread, peak memory, values compared.

    python bench/mf_peer.py [--rows quick|all] [--mfdl DIR [--mfdl-python PY]]
                            [--max-mfdl-gb 6] [--match LABEL] [--blas-threads 1]
                            [--record | --out FILE]

Rows: the issue's table (D-SGD, AntiPGD, AntiPGD with cyclic participation b = 5 and
Muffliato-SGD(2) and BSR, MFDL's banded square root with 5 epochs, on MFDL's ``"erdos"``
graphs: ``erdos_renyi_graph(n, log(n) / n)``, the
first connected seed, ``W = A / deg`` as ``get_communication_matrix``; user level unless
said; T gradient steps).  ``--rows quick``: the rows with n <= 300.

Sides, each in its own process (``--child``) on ``--blas-threads`` BLAS threads (default 1;
``pinned_blas`` where threadpoolctl is installed, the usual environment variables for all):

``sparsedp``
    :func:`sparsedp.mf.distance_summary` over every target (``gradients="scalar"``,
    ``exact="auto"`` for T <= ``EXHAUSTIVE_T_MAX``, where the exhaustive sign search
    costs less than the diagonal-shift search it makes unnecessary, ``exact=False`` above),
    its certified Theorem 7 value per target.
``mfdl``
    with ``--mfdl DIR`` (a checkout of github.com/dimiarbre/MFDL, commit c8529295): MFDL's
    own functions from ``MFDL/simulations/workloads_generator.py`` composed as its
    ``compute_muffliato_privacy_loss`` does (``build_DL_workload`` over ``K T`` rounds, the
    injection columns, ``build_projection_workload``, the attacker's noise lines,
    ``pinv(B) @ B``, ``C^T (.) C``, ``compute_cyclic_repetitions_1node``, squared).
    MFDL needs Python >= 3.12 (its f-strings): ``--mfdl-python`` runs this side with another
    interpreter (numpy, scipy and networkx are all it needs there).
    ``torch`` and ``fedivertex``, imported at the top of those modules but used by none of
    these functions, are replaced by empty modules when they are not installed (said in the
    output).  Rows whose dense ``(n K T)^2`` matrices would exceed ``--max-mfdl-gb`` are not
    run.
``transcription``
    always: the same formula, ``sum |C_u^T B^+ B C_u|`` with ``B^+ B`` the projector
    onto B's row space from an SVD of B (MFDL's ``pinv`` cut-off, ``1e-15 sigma_max``) and
    B built row by row (``S W^l``, l < K T), never the ``(nT)^2`` projector: an independent
    check of the values at every size.

Printed and written (``bench/results/mf_peer.json``): per row, each side's CPU and wall
seconds (the computation: not the imports, the graph or a warm-up run on 20 nodes) and peak
RSS (the process's), the largest ``|ours - theirs| / max(1, |theirs|)`` over the targets,
and the issue's published MFDL time next to the measured one.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import subprocess
import sys
import time
import types

import numpy as np

# (label, algorithm, n, T, participation interval b (None: user level), MFDL's published
# time from issue 32, "" where it gave none)
ROWS = [
    ("D-SGD", "dp-d-sgd", 100, 10, None, "0.16 s"),
    ("D-SGD", "dp-d-sgd", 1000, 20, None, "134 s, 13 GB"),
    ("AntiPGD", "antipgd", 300, 30, None, "3.7-14 s"),
    ("AntiPGD", "antipgd", 1000, 10, None, "11-22 s"),
    ("AntiPGD", "antipgd", 1000, 20, None, "46 s"),
    ("AntiPGD cyclic b=5", "antipgd", 300, 30, 5, "3.1-3.4 s"),
] + [("Muffliato-SGD(2)", "muffliato-sgd(2)", n, T, None, "<= 16 s" if n <= 300 else "")
     for n in (100, 300, 1000) for T in (10, 20, 30)
] + [("BSR (5 epochs: band T / 5)", "bsr", n, 30, None, "0.37-71 s") for n in (100, 300, 1000)]
BSR_EPOCHS = 5
# The exhaustive sign search (two per target, on the sandwich's ends) against the shift
# search it replaces, all targets of attacker 0, one process: D-SGD n = 100, T = 10 0.30 s
# with it and 0.82-0.92 s without; n = 1000, T = 20 14.5 s with it and 6.8-8.2 s without.
EXHAUSTIVE_T_MAX = 12


def mfdl_graph(n: int, seed: int = 0):
    """MFDL's ``get_graph("erdos", n, seed)`` and ``get_communication_matrix`` (dense)."""
    import networkx as nx

    tries = 0
    while True:  # MFDL's get_erdos_renyi_graph: seeds 1000 seed + tries
        G = nx.erdos_renyi_graph(n, np.log(n) / n, seed=1000 * seed + tries)
        tries += 1
        if nx.is_connected(G):
            break
    A = nx.to_numpy_array(G)
    return A / A.sum(axis=1, keepdims=True)


def bsr_encoder(T: int, epochs: int) -> np.ndarray:
    """MFDL's ``BSR_local_factorization(T, epochs)`` (which needs torch) transcribed: the
    square root ``y`` of the all-ones prefix-sum workload by MFDL's recursion, ``C =
    toeplitz(y)`` (symmetric), the entries ``C[i, j]`` with ``i - j >= T // epochs`` (at least
    1) zeroed."""
    from scipy.linalg import toeplitz

    y = np.zeros(T)
    y[0] = 1.0
    for k in range(1, T):
        y[k] = (1.0 - np.dot(y[1:k], y[1:k][::-1])) / (2 * y[0])
    C = toeplitz(y)
    C[np.subtract.outer(np.arange(T), np.arange(T)) >= max(1, T // epochs)] = 0.0
    return C


def noise_matrices(algorithm: str, T: int) -> tuple[int, np.ndarray, np.ndarray]:
    """``K``, the local noise correlation ``L`` (as applied) and ``C_local = L^{-1}``."""
    if algorithm == "bsr":
        C = bsr_encoder(T, BSR_EPOCHS)
        return 1, np.linalg.inv(C), C
    if algorithm == "antipgd":
        return 1, np.eye(T) - np.eye(T, k=-1), np.tril(np.ones((T, T)))
    K = 2 if algorithm == "muffliato-sgd(2)" else 1
    return K, np.eye(T), np.eye(T)


def patterns(T: int, b: int | None) -> list[np.ndarray]:
    return [np.arange(T)] if b is None else [np.arange(i, T, b) for i in range(b)]


def thm7_from_projector_factor(V: np.ndarray, C_local: np.ndarray, n: int, T: int,
                               b: int | None, targets) -> np.ndarray:
    """``max_pi sum_(s,t in pi) |M_st|``, ``M = C_u^T V V^T C_u`` for every target u
    (V: an orthonormal basis of B's row space, columns indexed ``t n + v``)."""
    Y = np.einsum("rsv,st->rtv", V.T.reshape(-1, T, n), C_local)  # V^T (C_local kron I)
    out = []
    for u in targets:
        M = Y[:, :, u].T @ Y[:, :, u]
        out.append(max(float(np.abs(M[np.ix_(p, p)]).sum()) for p in patterns(T, b)))
    return np.array(out)


def transcription(W: np.ndarray, algorithm: str, n: int, T: int, b: int | None) -> dict:
    """The ``transcription`` side (module docstring)."""
    K, L, C_local = noise_matrices(algorithm, T)
    R, attacker = K * T, 0
    observed = np.flatnonzero(W[attacker] > 0)  # build_projection_workload
    lags = [np.eye(n)[observed]]
    for _ in range(R - 1):
        lags.append(lags[-1] @ W)
    rows = []
    for r in range(R):  # message rows: block t = S W^(r - t K), mixed by L
        H = np.zeros((observed.size, T, n))
        for t in range(r // K + 1):
            H[:, t] = lags[r - t * K]
        rows.append(np.einsum("atv,ts->asv", H, L).reshape(-1, T * n))
    known = np.zeros((T, T * n))
    known[np.arange(T), np.arange(T) * n + attacker] = 1.0  # the attacker's noise lines
    B = np.vstack(rows + [known])
    _, s, Vt = np.linalg.svd(B, full_matrices=False)
    rank = int((s > 1e-15 * s[0]).sum())  # numpy pinv's default cut-off
    targets = [u for u in range(n) if u != attacker]
    values = thm7_from_projector_factor(Vt[:rank].T, C_local, n, T, b, targets)
    return {"targets": targets, "thm7": values.tolist()}


def sparsedp_side(W: np.ndarray, algorithm: str, n: int, T: int, b: int | None) -> dict:
    import scipy.sparse as sp

    from sparsedp.mf import antipgd, banded_square_root, cyclic, dp_d_sgd, muffliato_sgd, user_level
    from sparsedp.mf.summary import distance_summary

    W = sp.csr_matrix(W)
    algo = {"dp-d-sgd": dp_d_sgd(), "antipgd": antipgd(),
            "muffliato-sgd(2)": muffliato_sgd(2),
            "bsr": banded_square_root(max(1, T // BSR_EPOCHS))}[algorithm]
    scheme = user_level() if b is None else cyclic(T // b, b)
    summary = distance_summary(W, [0], T, algorithm=algo, participation_scheme=scheme,
                               gradients="scalar", exact="auto" if T <= EXHAUSTIVE_T_MAX
                               else False, progress=False)
    certified = all(r.thm7 is not None for r in summary.results)
    return {"targets": list(summary.targets), "certified": certified,
            "thm7": [np.nan if r.thm7 is None else r.thm7 for r in summary.results],
            "method": summary.results[0].method,
            "rows_decided_by": summary.results[0].solver.get("rows_decided_by")}


def import_mfdl(directory: str) -> list[str]:
    """Import MFDL's workload module from ``directory``; the names of the modules stubbed."""
    stubbed = []
    for name in ("torch", "fedivertex"):  # imported at module level, unused here
        try:
            __import__(name)
        except ImportError:
            module = types.ModuleType(name)
            module.GraphLoader = None
            sys.modules[name] = module
            stubbed.append(name)
    sys.path.insert(0, directory)
    __import__("MFDL.simulations.workloads_generator")
    return stubbed


def mfdl_side(W: np.ndarray, algorithm: str, n: int, T: int, b: int | None) -> dict:
    from MFDL.simulations import workloads_generator as wg

    K, L, C_local = noise_matrices(algorithm, T)
    attacker = 0
    workload = wg.build_DL_workload(matrix=W, nb_steps=K * T, initial_power=0)
    injections = np.concatenate([np.arange(t * K * n, t * K * n + n) for t in range(T)])
    A = workload[:, injections]  # W_R (I_T kron E_K)
    projection = wg.build_projection_workload(communication_matrix=W, attacker_node=attacker,
                                              nb_steps=K * T)
    B = A[np.argmax(projection, axis=1)] @ np.kron(L, np.eye(n))
    lines = np.zeros((T, n * T))
    lines[np.arange(T), np.arange(T) * n + attacker] = 1.0
    B = np.vstack([B, lines])
    C = np.kron(C_local, np.eye(n))
    X = C.T @ (np.linalg.pinv(B) @ B) @ C
    interval = 1 if b is None else b
    targets = [u for u in range(n) if u != attacker]
    values = [wg.compute_cyclic_repetitions_1node(X=X, participation_interval=interval,
                                                  nb_steps=T, nb_nodes=n, node=u) ** 2
              for u in targets]
    return {"targets": targets, "thm7": values}


def child(side: str, spec: dict) -> None:
    """One side of one row; the graph, the imports and a warm-up run on a 20-node graph
    (lazy imports, cached kernels, BLAS start-up) are not timed."""
    args = (mfdl_graph(spec["n"]), spec["algorithm"], spec["n"], spec["T"], spec["b"])
    stubbed = import_mfdl(spec["mfdl"]) if side == "mfdl" else []
    if side == "sparsedp":
        import sparsedp.mf.summary  # noqa: F401
    function = {"sparsedp": sparsedp_side, "mfdl": mfdl_side, "transcription": transcription}
    pinning = contextlib.nullcontext()
    if side != "mfdl":  # MFDL's interpreter may lack threadpoolctl: the environment pins it
        from blas_pinning import pinned_blas
        pinning = pinned_blas(spec["blas_threads"])
    with pinning:
        function[side](mfdl_graph(20), spec["algorithm"], 20, 3, None)  # warm-up, not timed
        start_cpu, start_wall = time.process_time(), time.perf_counter()
        out = function[side](*args)
    if stubbed:
        out["stubbed"] = stubbed
    out.update(cpu_s=time.process_time() - start_cpu, wall_s=time.perf_counter() - start_wall,
               peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    print(json.dumps(out))


def run_side(side: str, spec: dict, python: str = sys.executable) -> dict:
    threads = str(spec["blas_threads"])
    env = dict(os.environ, OMP_NUM_THREADS=threads, OPENBLAS_NUM_THREADS=threads,
               MKL_NUM_THREADS=threads, SPARSEDP_BLAS_THREADS=threads)
    done = subprocess.run([python, __file__, "--child", side, json.dumps(spec)],
                          capture_output=True, text=True, env=env)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr else "failed"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def mfdl_gigabytes(n: int, T: int, K: int) -> float:
    """MFDL's dense matrices: the ``(n K T)^2`` workload and three ``(n T)^2`` products."""
    return 8 * ((n * K * T) ** 2 + 3 * (n * T) ** 2) / 1e9


def agreement(ours: dict, theirs: dict) -> float | None:
    if "thm7" not in ours or "thm7" not in theirs:
        return None
    a, b = np.array(ours["thm7"], dtype=float), np.array(theirs["thm7"], dtype=float)
    return float(np.max(np.abs(a - b) / np.maximum(1.0, np.abs(b))))


def main() -> None:
    if sys.argv[1:2] == ["--child"]:  # before the helpers: MFDL's interpreter may lack them
        child(sys.argv[2], json.loads(sys.argv[3]))
        return
    from blas_pinning import add_blas_option
    from outputs import add_output_options, output_path

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", choices=("quick", "all"), default="quick")
    ap.add_argument("--mfdl", help="a checkout of MFDL (its MFDL/ package inside)")
    ap.add_argument("--mfdl-python", help="the interpreter for MFDL's side (Python >= 3.12)")
    ap.add_argument("--max-mfdl-gb", type=float, default=6.0)
    ap.add_argument("--match", default="", help="only the rows whose label contains this")
    add_output_options(ap)
    add_blas_option(ap)
    args = ap.parse_args()
    records = []
    for label, algorithm, n, T, b, published in ROWS:
        if (args.rows == "quick" and n > 300) or args.match not in label:
            continue
        spec = {"algorithm": algorithm, "n": n, "T": T, "b": b, "mfdl": args.mfdl,
                "blas_threads": args.blas_threads}
        ours = run_side("sparsedp", spec)
        reference = run_side("transcription", spec)
        record = {"row": f"{label} n = {n}, T = {T}", "published_mfdl": published,
                  "sparsedp": _summary(ours), "transcription": _summary(reference),
                  "agreement_transcription": agreement(ours, reference)}
        K = noise_matrices(algorithm, T)[0]
        if args.mfdl and mfdl_gigabytes(n, T, K) <= args.max_mfdl_gb:
            theirs = run_side("mfdl", spec, args.mfdl_python or sys.executable)
            record.update(mfdl=_summary(theirs), agreement_mfdl=agreement(ours, theirs))
            if "cpu_s" in theirs and "cpu_s" in ours:
                record["cpu_ratio_mfdl_over_sparsedp"] = theirs["cpu_s"] / ours["cpu_s"]
        elif args.mfdl:
            record["mfdl"] = f"not run: {mfdl_gigabytes(n, T, K):.1f} GB > {args.max_mfdl_gb}"
        records.append(record)
        print(json.dumps(record), flush=True)
    output_path(args, "mf_peer.json").write_text(json.dumps(records, indent=1))


def _summary(side: dict) -> dict:
    return {k: v for k, v in side.items() if k not in ("thm7", "targets")}


if __name__ == "__main__":
    main()
