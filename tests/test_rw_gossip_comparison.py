"""The Fig. 1-style comparison (reduced size) and the random-walk CLI subcommands."""

import json
import math
import pathlib
import runpy

import numpy as np
import pytest

from sparsedp import graphs
from sparsedp.cli.main import main
from sparsedp.randomwalk.gossip_comparison import compare_by_distance
from sparsedp.randomwalk.pairwise import loss_by_distance

SCRIPT = pathlib.Path(__file__).resolve().parents[1] / "docs" / "scripts" / "randomwalk_fig1.py"


def test_loss_by_distance():
    rows = loss_by_distance(np.array([1, 2, 1, 3, 2]), np.array([0.5, 0.2, 0.7, 0.1, 0.4]))
    assert [r["distance"] for r in rows] == [1, 2, 3]
    assert rows[0] == {"distance": 1, "count": 2, "min": 0.5, "mean": 0.6, "max": 0.7}


def test_compare_by_distance_on_a_small_grid():
    g = graphs.grid(7, 7)
    rec = compare_by_distance(g, source=24, alpha=2.0)  # the centre
    assert rec["nodes"] == 49
    for name in ("random_walk", "random_walk_sender_known", "gossip_chebyshev",
                 "gossip_plain"):
        rows = rec["by_distance"][name]
        assert sum(r["count"] for r in rows) == 48
        assert [r["distance"] for r in rows] == list(range(1, 7))
        for r in rows:
            assert 0 <= r["min"] <= r["mean"] <= r["max"] <= 1.0 + 1e-12
    rw_mean = [r["mean"] for r in rec["by_distance"]["random_walk"]]
    assert all(a > b for a, b in zip(rw_mean, rw_mean[1:], strict=False))  # decays
    # gossip saturates the neighbours (round-0 message), the random walk does not
    assert rec["by_distance"]["gossip_chebyshev"][0]["min"] == pytest.approx(1.0)
    assert rec["by_distance"]["random_walk"][0]["max"] < 1.0
    assert rec["rounds"]["random_walk"] == math.ceil(49 * math.log(49))


def test_figure_script_quick(tmp_path):
    runpy.run_path(str(SCRIPT), run_name="not_main")["run"](quick=True, seed=0, out=tmp_path)
    record = json.loads((tmp_path / "randomwalk_fig1_quick.json").read_text())
    assert len(record["graphs"]) == 4
    assert (tmp_path / "randomwalk_fig1_quick.png").stat().st_size > 1000


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_randomwalk_json(capsys):
    code, out, _ = run(capsys, "randomwalk", "--generator", "ring:20", "-T", "100",
                       "--sigma", "2", "--contributions", "2", "--json")
    assert code == 0
    rec = json.loads(out)
    assert rec["kind"] == "upper" and len(rec["rdp"]) == 19 and len(rec["epsilon"]) == 19
    assert max(rec["rdp"]) <= rec["local_dp"]
    code, out, _ = run(capsys, "randomwalk", "--generator", "grid:5x5", "-T", "50",
                       "--sigma", "3", "--method", "log-green", "--coalition", "3",
                       "--coalition", "7")
    assert code == 0 and "coalition [3, 7]" in out and "estimate" in out


def test_cli_muffliato_json(capsys):
    code, out, _ = run(capsys, "muffliato", "--generator", "hypercube:5", "-T", "10",
                       "--sigma", "1", "--accelerated", "--receiver", "31", "--json")
    assert code == 0
    rec = json.loads(out)
    assert rec["receivers"] == [31] and rec["mechanism"].startswith("muffliato (Chebyshev")


@pytest.mark.parametrize("argv,message", [
    (["randomwalk", "--generator", "ring:20", "-T", "10", "--sigma", "1"], "2 alpha"),
    (["randomwalk", "--generator", "ring:2", "-T", "10", "--sigma", "3"], "n must be"),
    (["randomwalk", "--generator", "blob:3", "-T", "10", "--sigma", "3"], "unknown generator"),
    (["muffliato", "--generator", "ring:9", "-T", "0", "--sigma", "1"], "T"),
    (["muffliato", "--generator", "ring:9", "-T", "3", "--sigma", "1", "--source", "99"],
     "unknown node"),
])
def test_cli_errors_are_one_line(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith("sparsedp: error:") and message in err and err.count("\n") == 1
