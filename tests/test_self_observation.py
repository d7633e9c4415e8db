"""One rule for a target among its own observers, in every family, library and command alike
(issue 31; docs/views.md): a ParameterError naming the node and its role, and the privacy
maps leave the self pairs out."""

from __future__ import annotations

import re

import networkx as nx
import numpy as np
import pytest

import sparsedp
from sparsedp import ppac
from sparsedp.audit.ppac import audit_ppac
from sparsedp.cli.main import main
from sparsedp.errors import ParameterError
from sparsedp.mf.algorithms import muffliato_sgd

WHY = "a node holds its own data, so no privacy guarantee towards itself exists"
RING = sparsedp.gossip_matrix(nx.cycle_graph(8))
FLORENTINE = sparsedp.gossip_matrix(nx.florentine_families_graph(),
                                    scheme="row-normalised-self-loops")


def _ppac(call):
    G = nx.cycle_graph(6)
    layout = ppac.ppac_layout(G, {k: (k + 1) % 6 for k in range(6)})
    return call(layout, ppac.laplacian_consensus_matrix(G, scale=3))


LIBRARY = {
    "gossip": (lambda: sparsedp.squared_sensitivity(RING, 3, [1, 3], 4),
               "the target 3 is among the observers"),
    "gossip neighbourhood": (lambda: sparsedp.squared_sensitivity(RING, 3, [3], 4,
                                                                  view="neighbourhood"),
                             "the target 3 is among the observers"),
    "gossip cost": (lambda: sparsedp.estimate_cost(RING, 3, [3], 4),
                    "the target 3 is among the observers"),
    "random walk": (lambda: sparsedp.random_walk_rdp(RING, 3, 5, 4.0, receivers=[3]),
                    "the source 3 is among the receivers"),
    "random-walk coalition": (lambda: sparsedp.random_walk_rdp(RING, 3, 5, 4.0,
                                                               coalition=[2, 3]),
                              "the source 3 is among the coalition"),
    "muffliato": (lambda: sparsedp.muffliato_rdp(RING, 3, 5, 4.0, receivers=[3]),
                  "the source 3 is among the receivers"),
    "mf": (lambda: sparsedp.mf_sensitivity(FLORENTINE, 7, [7], 4),
           "the target 7 is among the attackers"),
    "mf muffliato-sgd": (lambda: sparsedp.mf_sensitivity(FLORENTINE, 7, [2, 7], 4,
                                                         algorithm=muffliato_sgd(2)),
                         "the target 7 is among the attackers"),
    "ppac leakage": (lambda: _ppac(lambda lay, W: sparsedp.ppac_leakage(lay, W, 4, 3,
                                                                         victims=[1, 4])),
                     "the attacker 4 is among the victims"),
    "ppac pair status": (lambda: ppac.pair_status(nx.cycle_graph(6), 4, 4),
                         "the victim 4 is the attacker"),
    "ppac audit": (lambda: _ppac(lambda lay, W: audit_ppac(lay, W, 4, 4, 3, trials=100)),
                   "the attacker 4 is among the victims"),
}


@pytest.mark.parametrize("family", list(LIBRARY))
def test_every_library_entry_refuses_a_target_among_its_observers(family):
    call, who = LIBRARY[family]
    with pytest.raises(ParameterError, match=re.escape(f"{who}: {WHY}")):
        call()


COMMANDS = {
    "account": (["account", "--target", "3", "--observer", "3"],
                "the target 3 is among the observers"),
    "account coalition": (["account", "--target", "3", "--observer", "0", "--observer", "3"],
                          "the target 3 is among the observers"),
    "mf": (["mf", "--target", "Medici", "--attacker", "Medici"],
           "the target 'Medici' is among the attackers"),
    "randomwalk": (["randomwalk", "-T", "5", "--sigma", "4", "--generator", "ring:8",
                    "--source", "3", "--receiver", "3"], "the source 3 is among the receivers"),
    "muffliato": (["muffliato", "-T", "5", "--sigma", "4", "--generator", "ring:8",
                   "--source", "3", "--receiver", "3"], "the source 3 is among the receivers"),
    "ppac": (["ppac", "leakage", "--attacker", "4", "--victim", "4"],
             "the attacker 4 is among the victims"),
    "audit gossip": (["audit", "--generator", "ring:8", "--target", "3", "--observer", "3"],
                     "the target 3 is among the observers"),
    "audit dp-d-sgd": (["audit", "--family", "dp-d-sgd", "--target", "Medici", "--observer",
                        "Medici"], "the target 'Medici' is among the observers"),
    "audit randomwalk": (["audit", "--family", "randomwalk", "--generator", "ring:8",
                          "--target", "3", "--observer", "3"],
                         "the target 3 is among the observers"),
    "audit ppac": (["audit", "--family", "ppac", "--target", "4", "--observer", "4"],
                   "the target 4 is among the observers"),
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_every_command_refuses_a_target_among_its_observers(command, capsys):
    argv, who = COMMANDS[command]
    assert main(argv) == 2
    assert capsys.readouterr().err == f"sparsedp: error: {who}: {WHY}\n"


@pytest.mark.parametrize("make", [
    lambda G: sparsedp.privacy_map(G, T=4),
    lambda G: sparsedp.privacy_map(G, T=4, upper="entrywise"),
    lambda G: sparsedp.privacy_map(G, T=4, view="neighbourhood"),
    lambda G: sparsedp.random_walk_map(G, T=4, sigma=4.0),
    lambda G: sparsedp.mf_map(G, T=3, scheme="metropolis"),
], ids=["gossip", "gossip entrywise", "gossip neighbourhood", "random walk", "mf"])
def test_maps_leave_the_self_pairs_out(make):
    G = nx.cycle_graph(6)
    m = make(G)
    pairs = set(zip(m.columns["observer"].tolist(), m.columns["target"].tolist(), strict=True))
    assert pairs == {(a, j) for a in G for j in G if a != j}
    assert len(m) == 30 and (m.columns["distance"] >= 1).all()
    assert np.isfinite(m.columns["upper"]).all()


def test_a_map_keeps_the_pairs_of_a_self_pair_free_selection():
    m = sparsedp.privacy_map(nx.cycle_graph(6), observers=[0, 1], targets=[2, 3], T=4)
    assert len(m) == 4
