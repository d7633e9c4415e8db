"""``sparsedp audit --family ...``: every family runs from the command line, its JSON record is
the library's audit of the same instance, a wrong model exits 3 naming the instance, and
options of another family are refused in one line."""

from __future__ import annotations

import json

import networkx as nx
import pytest

import sparsedp
from sparsedp.audit.mf import audit_mf
from sparsedp.audit.ppac import audit_ppac
from sparsedp.audit.randomwalk import audit_random_walk
from sparsedp.cli import audit as cli_audit
from sparsedp.cli.main import main
from sparsedp.mf import mf_sensitivity, muffliato_sgd

QUICK = ["--rounds", "4", "--trials", "12000", "--progress", "never", "--json"]


def _json(capsys) -> dict:
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("family", cli_audit.FAMILIES)
def test_every_family_passes_on_its_default_instance(family, capsys):
    assert main(["audit", "--family", family, *QUICK]) == 0
    record = _json(capsys)
    assert record["family"] == family and record["passed"] and record["verdict"] == "pass"


def test_the_mf_record_is_the_library_audit_of_the_same_instance(capsys):
    """Florentine families, Muffliato-SGD(3), a two-attacker coalition, (2, 3)-cyclic
    participation: the command's numbers are audit_mf's, with the nodes as labels."""
    argv = ["audit", "--family", "muffliato-sgd", "-K", "3", "--observer", "Medici",
            "--observer", "Strozzi", "--target", "Ginori", "--participation", "2,3",
            "--seed", "7", *QUICK]
    assert main(argv) == 0
    record = _json(capsys)
    g = sparsedp.as_graph(nx.florentine_families_graph())
    W = sparsedp.gossip_matrix(g, scheme="row-normalised-self-loops")
    direct = audit_mf(W, g.index_of("Ginori"), g.indices_of(["Medici", "Strozzi"]), 4,
                      algorithm=muffliato_sgd(3), participation_scheme=(2, 3), trials=12000,
                      seed=7)
    assert record["attackers"] == ["Medici", "Strozzi"] and record["target"] == "Ginori"
    for key in ("engine_lower", "engine_upper", "sensitivity_low", "sensitivity_high",
                "epsilon_lower", "epsilon_upper"):
        assert record[key] == getattr(direct, key)
    assert record["participation"] == "cyclic(2,3)" and record["K"] == 3


def test_the_randomwalk_and_ppac_records_are_the_library_audits(capsys):
    assert main(["audit", "--family", "randomwalk", "--generator", "ring:12", "--target", "0",
                 "--observer", "3", "--sigma", "2.5", "--rounds", "15", "--trials", "8000",
                 "--json"]) == 0
    record = _json(capsys)
    W = sparsedp.gossip_matrix(nx.cycle_graph(12), scheme="metropolis")
    direct = audit_random_walk(W, 0, 3, 15, 2.5, trials=8000)
    assert record["rdp_low"] == direct.rdp_low and record["engine_rdp"] == direct.engine_rdp
    assert main(["audit", "--family", "ppac", "--target", "3", "--observer", "5", "--rounds",
                 "2", "--trials", "8000", "--json"]) == 0
    record = _json(capsys)
    from sparsedp.cli.ppac import ppac_instance

    _, layout, Wp, _ = ppac_instance(None, "", 0, None)
    direct = audit_ppac(layout, Wp, 5, 3, 2, trials=8000)
    assert (record["nats_low"], record["engine_nats"]) == (direct.nats_low, direct.engine_nats)


def test_a_wrong_mf_model_exits_3_and_names_the_instance(capsys, monkeypatch):
    """The command audits the value of Muffliato-SGD(K - 1): one gossip round too few."""
    def wrong(W, target, attackers, T, *, algorithm, **kwargs):
        claimed = mf_sensitivity(W, target, attackers, T, gradients="scalar",
                                 algorithm=muffliato_sgd(algorithm.K - 1))
        return audit_mf(W, target, attackers, T, algorithm=algorithm, engine=claimed, **kwargs)

    monkeypatch.setattr(cli_audit, "audit_mf", wrong)
    status = main(["audit", "--family", "muffliato-sgd", "-K", "3", "--rounds", "6",
                   "--trials", "20000", "--progress", "never"])
    out = capsys.readouterr().out
    assert status == 3
    assert "model mismatch" in out and "algorithm=muffliato-sgd(3)" in out
    assert "target=14" in out


@pytest.mark.parametrize("argv, message", [
    (["--family", "ppac", "-K", "3"], "-K is not an option of --family ppac"),
    (["--family", "dp-d-sgd", "--view", "neighbourhood"], "--view is not an option"),
    (["--family", "gossip", "--trust", "pndp"], "--trust is not an option"),
    (["--family", "ppac", "--scheme", "metropolis"], "--scheme is not an option"),
    (["--family", "randomwalk", "--observer", "1", "--observer", "2"], "one --observer"),
    (["--family", "randomwalk", "--sigma", "1"], "sigma^2 >= 2 alpha"),
    (["--family", "dp-d-sgd", "--participation", "x"], "--participation: expected"),
    (["--family", "muffliato-sgd", "--target", "Medici", "--observer", "Medici"],
     "the target 'Medici' is among the observers"),
])
def test_bad_options_are_one_line_errors(argv, message, capsys):
    assert main(["audit", *argv, "--trials", "1000", "--rounds", "3"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and message in err
