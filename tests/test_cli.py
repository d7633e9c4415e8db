"""The ``sparsedp account`` command."""

import json
import subprocess
import sys

import pytest

from sparsedp.cli.main import main


def run(capsys, *argv):
    code = main(["account", "--no-progress", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_default_json_parses_and_is_consistent(capsys):
    code, out, _ = run(capsys, "--json", "--rounds", "30")
    assert code == 0
    record = json.loads(out)
    for key in ("squared_sensitivity_lower", "squared_sensitivity_upper", "epsilon"):
        assert isinstance(record[key], float)
    assert 0 < record["squared_sensitivity_lower"] <= record["squared_sensitivity_upper"]
    assert record["epsilon"] > 0
    assert record["graph"]["nodes"] == 2000


def test_human_report(capsys):
    code, out, _ = run(capsys, "--rounds", "8")
    assert code == 0
    assert "certified upper" in out and "epsilon <=" in out and "exact" in out


@pytest.fixture
def edge_file(tmp_path):
    path = tmp_path / "edges.txt"
    # a 6-cycle with a chord, arbitrary ids; one duplicate and one self-loop to be dropped
    path.write_text(
        "# toy graph\n100 205\n205 310\n310 415\n415 520\n520 625\n625 100\n100 415\n"
        "100 205\n310 310\n"
    )
    return path


def test_edge_list_ids_are_the_files_ids(capsys, edge_file):
    code, out, _ = run(capsys, "--graph", str(edge_file), "--target", "310", "--observer",
                       "100", "--observer", "625", "--rounds", "6", "--json")
    assert code == 0
    record = json.loads(out)
    assert record["target"] == 310 and record["observers"] == [100, 625]
    assert record["graph"]["nodes"] == 6 and record["graph"]["edges"] == 7
    assert record["squared_sensitivity_exact"] is not None


def test_gram_method_and_preconditioner(capsys, edge_file):
    """row-normalised weights are not symmetric: auto takes the Gram assembly; the
    matrix-free path with either preconditioner reports the same exact value."""
    base = ["--graph", str(edge_file), "--scheme", "row-normalised", "--target", "310",
            "--observer", "100", "--rounds", "6", "--json"]
    records = []
    for extra in ([], ["--method", "matrix-free", "--preconditioner", "gram"],
                  ["--method", "matrix-free", "--preconditioner", "stationary"]):
        code, out, _ = run(capsys, *base, *extra)
        assert code == 0
        records.append(json.loads(out))
    assert records[0]["method"] == "gram"
    assert [r["solver"]["preconditioner"] for r in records[1:]] == ["gram", "stationary"]
    exact = records[0]["squared_sensitivity_exact"]
    for r in records[1:]:
        assert r["squared_sensitivity_exact"] == pytest.approx(exact, rel=1e-8)


@pytest.mark.parametrize(
    "argv,message",
    [
        (["--target", "999"], "unknown node id 999 for target"),
        (["--observer", "7"], "unknown node id 7 for observer"),
        (["--rounds", "0"], "T"),
        (["--sigma", "0"], "sigma"),
        (["--sigma", "-2"], "sigma"),
        (["--delta", "1.5"], "delta"),
        (["--delta", "0"], "delta"),
    ],
)
def test_user_mistakes_are_one_line(capsys, edge_file, argv, message):
    code, out, err = run(capsys, "--graph", str(edge_file), *argv)
    assert code == 2 and out == ""
    assert err.startswith("sparsedp: error:") and message in err
    assert err.count("\n") == 1 and "Traceback" not in err


def test_disconnected_graph_file(capsys, tmp_path):
    path = tmp_path / "two.txt"
    path.write_text("1 2\n2 3\n7 8\n")
    code, _, err = run(capsys, "--graph", str(path))
    assert code == 2 and "2 connected components" in err


def test_directed_file_warns_in_one_line(capsys, tmp_path):
    path = tmp_path / "directed.txt"
    path.write_text("# Directed graph\n1 2\n2 3\n3 1\n3 4\n")
    code, _, err = run(capsys, "--graph", str(path), "--rounds", "3")
    assert code == 0
    assert err.startswith("sparsedp: warning: directed input symmetrised")


def test_missing_file(capsys, tmp_path):
    code, _, err = run(capsys, "--graph", str(tmp_path / "nope.txt"))
    assert code == 2 and "nope.txt" in err


@pytest.mark.slow  # the installed command in a subprocess
def test_console_script_entry_point():
    proc = subprocess.run(
        [sys.executable, "-m", "sparsedp.cli", "account", "--rounds", "5", "--json"],
        capture_output=True, text=True, check=False, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["rounds"] == 5


def test_views_from_the_command_line(capsys, edge_file):
    code, out, _ = run(capsys, "--json", "--graph", str(edge_file), "--target", "310",
                       "--observer", "100", "--rounds", "6", "--view", "neighbourhood")
    record = json.loads(out)
    assert code == 0 and record["view"] == "neighbourhood"
    assert record["observers"] == [100, 205, 415, 625]  # closed neighbourhood of 100
    code, out, _ = run(capsys, "--json", "--graph", str(edge_file), "--rounds", "6",
                       "--view", "local-dp")
    record = json.loads(out)
    assert record["squared_sensitivity_lower"] == record["squared_sensitivity_upper"] == 6
    code, _, err = run(capsys, "--json", "--graph", str(edge_file), "--target", "310",
                       "--observer", "310", "--rounds", "4", "--noise-removed")
    assert code == 2 and "the target 310 is among the observers" in err


def test_view_without_observers_refuses_observer(capsys):
    code, _, err = run(capsys, "--view", "target-v1", "--observer", "3")
    assert code == 2 and "fixes its own observers" in err


def test_randomwalk_report_lists_the_most_exposed_receivers_first(capsys):
    """On a ring the receivers next to the source are the most exposed; the text report
    lists them first (not receivers 1..10) and explains shared values and equal epsilons."""
    code = main(["randomwalk", "--generator", "ring:30", "--rounds", "10", "--sigma", "3"])
    out, _ = capsys.readouterr()
    assert code == 0
    listed = [int(line.split()[1].rstrip(":")) for line in out.splitlines()
              if line.startswith("  receiver")]
    assert listed[:2] in ([1, 29], [29, 1]) and len(listed) == 10
    assert set(listed) == {1, 29, 2, 28, 3, 27, 4, 26, 5, 25}
    assert "most exposed 10 of 29 receivers" in out
    assert "2 receivers share the largest RDP" in out and "clipped" in out
    assert "every receiver has the same epsilon" in out and "alpha_max" in out


def _all_parsers(parser):
    import argparse

    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                yield from _all_parsers(child)


def test_every_option_with_a_default_shows_it_in_help():
    from sparsedp.cli.main import build_parser

    for parser in _all_parsers(build_parser()):
        text = " ".join(parser.format_help().split())
        for action in parser._actions:
            if action.option_strings and action.default not in (None, False, "==SUPPRESS=="):
                helped = " ".join((action.help or "").split())
                assert "default" in helped or f"(default: {action.default})" in text, (
                    parser.prog, action.option_strings)


def test_randomwalk_csv_and_plot_match_the_json(capsys, tmp_path):
    import csv

    table, figure = tmp_path / "pairs.csv", tmp_path / "pairs.png"
    code = main(["randomwalk", "--generator", "ring:12", "--rounds", "10", "--sigma", "3",
                 "--json", "--csv", str(table), "--plot", str(figure)])
    record = json.loads(capsys.readouterr().out)
    assert code == 0
    rows = list(csv.DictReader(table.open()))
    assert [int(r["receiver"]) for r in rows] == record["receivers"]
    assert [float(r["rdp"]) for r in rows] == record["rdp"]
    assert [int(r["graph_distance"]) for r in rows] == [min(v, 12 - v) for v in range(1, 12)]
    assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list(tmp_path.glob(".sparsedp-*"))  # no temporary left behind


def test_ppac_leakage_csv_keeps_infinity(capsys, tmp_path):
    graph = tmp_path / "leaf.txt"
    graph.write_text("0 1\n0 2\n1 2\n0 3\n")
    table = tmp_path / "leak.csv"
    code = main(["ppac", "leakage", "--graph", str(graph), "--attacker", "0", "--horizon", "5",
                 "--csv", str(table)])
    capsys.readouterr()
    assert code == 0
    text = table.read_text().splitlines()
    assert text[0] == "victim,graph_distance,nats,kind,status"
    assert "3,1,inf,exact,recoverable" in text


def test_export_to_a_missing_directory_is_one_error_line(capsys, tmp_path):
    code = main(["randomwalk", "--generator", "ring:12", "--rounds", "10", "--sigma", "3",
                 "--csv", str(tmp_path / "missing" / "x.csv")])
    assert code == 2
    assert "no directory" in capsys.readouterr().err


def test_account_on_an_edge_list_with_string_labels(capsys, tmp_path):
    """Labels are what the user types and reads: 'alice', and '1' in a file whose ids are
    labels because one of them ('x') is not an integer."""
    names = tmp_path / "names.txt"
    names.write_text("alice bob\nbob carol\ncarol alice\n")
    code, out, _ = run(capsys, "--graph", str(names), "--target", "alice", "--observer", "carol",
                       "--rounds", "3", "--json")
    record = json.loads(out)
    assert code == 0 and record["target"] == "alice" and record["observers"] == ["carol"]
    mixed = tmp_path / "mixed.txt"
    mixed.write_text("1 2\n2 x\nx 1\n")
    code, out, _ = run(capsys, "--graph", str(mixed), "--target", "1", "--observer", "x",
                       "--rounds", "3", "--json")
    assert code == 0 and json.loads(out)["target"] == "1"


def test_randomwalk_certify_option_sets_the_kind(capsys, monkeypatch):
    """Log-Green with a cap beyond the dense size (lowered here): the default certifies the
    spectrum's upper end (kind upper), --certify never leaves it an estimate and says so."""
    monkeypatch.setattr("sparsedp.randomwalk.log_green.DENSE_MAX_N", 50)
    args = ["randomwalk", "--generator", "ring:300", "--rounds", "2000", "--sigma", "20",
            "--method", "log-green", "--contributions", "2", "--json"]
    kinds = {}
    for certify in ("auto", "never"):
        assert main([*args, "--certify", certify]) == 0
        record = json.loads(capsys.readouterr().out)
        kinds[certify] = (record["kind"], record["method"])
    assert kinds["auto"][0] == "upper" and "certified at mu" in kinds["auto"][1]
    assert kinds["never"][0] == "estimate" and "not certified: certify=False" in kinds["never"][1]
