"""The ``sparsedp mf`` command."""

import json

import pytest

from sparsedp.cli.main import main


def _run(capsys, *argv):
    code = main(["mf", "--no-progress", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_one_pair_json_matches_the_library(capsys):
    code, out, _ = _run(capsys, "--json", "-T", "6", "--gradients", "scalar",
                        "--attacker", "Medici", "--target", "Strozzi")
    assert code == 0
    record = json.loads(out)
    assert record["attackers"] == ["Medici"] and record["target"] == "Strozzi"
    assert record["lower"] <= record["exact"] <= record["upper"]
    assert record["rdp"] == pytest.approx(record["upper"])  # alpha = 2, sigma = 1


def test_summary_and_text(capsys, tmp_path):
    csv = tmp_path / "mf.csv"
    code, out, _ = _run(capsys, "--summary", "-T", "4", "--csv", str(csv))
    assert code == 0 and "d =   1" in out
    assert csv.read_text().startswith("node,distance,rdp_upper")


@pytest.mark.parametrize("argv", [
    ["--attacker", "Medici", "--target", "Medici"],
    ["--trust", "ldp", "--attacker", "Medici"],
    ["--participation", "3,5", "-T", "4"],
    ["--participation", "often"],
    ["-K", "2"],
    ["--algorithm", "decor"],
    ["--secret-scale", "1.0"],
    ["--own-copy-noise"],
    ["--algorithm", "decor", "--secret-scale", "-1"],
    ["--algorithm", "zip-dl", "--attacker", "Strozzi", "--target", "Strozzi"],
])
def test_errors_are_one_line(capsys, argv):
    code, out, err = _run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith("sparsedp: error: ") and err.count("\n") == 1


def test_ldp_antipgd_and_muffliato(capsys):
    code, out, _ = _run(capsys, "--trust", "ldp", "--algorithm", "antipgd", "-T", "6",
                        "--gradients", "scalar", "--json")
    assert code == 0 and json.loads(out)["exact"] == pytest.approx(91.0)
    code, out, _ = _run(capsys, "--algorithm", "muffliato-sgd", "-K", "2", "-T", "3", "--json")
    assert code == 0 and json.loads(out)["algorithm"]["name"] == "muffliato-sgd(2)"


def test_decor_and_zip_dl(capsys):
    """The new algorithms and trust models through the CLI equal the library."""
    import networkx as nx

    import sparsedp
    from sparsedp.mf import decor, mf_sensitivity, zip_dl

    W = sparsedp.gossip_matrix(nx.florentine_families_graph(), scheme="row-normalised-self-loops")
    code, out, _ = _run(capsys, "--algorithm", "decor", "--secret-scale", "1.5", "-T", "4",
                        "--trust", "pndp-eq12", "--json")
    assert code == 0
    lib = mf_sensitivity(W, 14, [0], 4, algorithm=decor(1.5), trust_model="pndp-eq12")
    assert json.loads(out)["upper"] == pytest.approx(lib.upper, rel=1e-12)
    code, out, _ = _run(capsys, "--algorithm", "zip-dl", "-T", "3", "--trust", "secldp",
                        "--json")
    assert code == 0
    lib = mf_sensitivity(W, 14, [0], 3, algorithm=zip_dl(), trust_model="secldp")
    assert json.loads(out)["upper"] == pytest.approx(lib.upper, rel=1e-12)
    code, out, _ = _run(capsys, "--algorithm", "zip-dl", "--own-copy-noise", "-T", "3",
                        "--json")
    lib = mf_sensitivity(W, 14, [0], 3, algorithm=zip_dl(True))
    assert code == 0 and json.loads(out)["upper"] == pytest.approx(lib.upper, rel=1e-12)
    code, out, _ = _run(capsys, "--algorithm", "zip-dl", "-T", "3", "--summary")
    assert code == 0 and "d =   1" in out
