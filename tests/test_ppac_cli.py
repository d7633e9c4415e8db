"""The ``sparsedp ppac`` command."""

import json

from sparsedp.cli.main import main


def run(capsys, *argv):
    code = main(["ppac", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_leakage_json_on_the_papers_example(capsys):
    code, out, _ = run(capsys, "leakage", "--json")
    assert code == 0
    record = json.loads(out)
    assert record["attacker"] == 4 and record["horizon"] == "infinity"
    assert sorted(record["victims"]) == [1, 2, 3, 5, 6]
    assert record["infinite_count"] == 0 and record["units"] == "nats"
    assert all(k == "estimate" for k in record["kind"])


def test_leakage_reports_infinite_leakage(capsys, tmp_path):
    path = tmp_path / "edges.txt"
    path.write_text("10 20\n20 30\n30 40\n40 10\n30 50\n")  # 50 is a leaf of 30
    code, out, _ = run(capsys, "leakage", "--graph", str(path), "--attacker", "30",
                       "--victim", "50", "--horizon", "0", "--json")
    assert code == 0
    record = json.loads(out)
    assert record["nats"] == ["infinity"] and record["kind"] == ["exact"]
    code, out, _ = run(capsys, "leakage", "--graph", str(path), "--attacker", "30")
    assert code == 0 and "infinite" in out


def test_simulate_text_and_errors(capsys):
    code, out, _ = run(capsys, "simulate", "--realisations", "20", "--rounds", "120")
    assert code == 0 and "Lemma B.5 per run respected: True" in out
    code, _, err = run(capsys, "leakage", "--attacker", "99")
    assert code == 2 and "unknown node id" in err
