"""The Koskela & Kulkarni figure script (docs/scripts/gossip_figures.py) in --quick mode."""

import json
import pathlib
import runpy

import pytest

SCRIPT = pathlib.Path(__file__).resolve().parents[1] / "docs" / "scripts" / "gossip_figures.py"


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("gossip_figures")
    script = runpy.run_path(str(SCRIPT), run_name="not_main")
    records = script["main"](["--quick", "--figure", "all", "--seed", "1", "--out", str(out)])
    return script, out, records


def test_v2_files_written_and_match_the_returned_records(quick_run):
    _, out, records = quick_run
    for name in ("v2_fig1", "v2_fig2"):
        assert (out / f"gossip_{name}_quick.png").stat().st_size > 10_000
        on_disk = json.loads((out / f"gossip_{name}_quick.json").read_text())
        assert on_disk["quick"] is True and on_disk["seed"] == 1
        assert len(on_disk["instances"]) == 2
    assert json.loads((out / "gossip_v2_fig1_quick.json").read_text()) == json.loads(
        json.dumps(records["v2-fig1"]))


def test_v2_fig1_bounds_are_ordered_and_approach_one_over_n(quick_run):
    _, _, records = quick_run
    for inst in records["v2-fig1"]["instances"]:
        i = inst["observer"]
        assert inst["neighbour"] != i and inst["non-neighbour"] != i
        assert inst["distance_non_neighbour"] >= 2
        for pair in ("neighbour", "non-neighbour"):
            rows = inst["curves"][pair]["rows"]
            assert [r["T"] for r in rows] == [1, 2, 4, 8, 16, 30, 60]
            for r in rows:
                assert 0.0 <= r["lower"] <= r["upper"] <= r["T"]
                if r["T"] <= 16:  # exhaustive search ran, inside the certified interval
                    assert r["lower"] - 1e-12 <= r["exact"] <= r["upper"] + 1e-12
            # j is not the observer: nothing of j reaches i at T = 1 (S W^0 e_j = 0)
            assert rows[0]["upper"] == pytest.approx(0.0, abs=1e-12)
        # non-neighbour (distance >= 2): Delta^2 / T grows towards 1/n from below (Thm 13)
        non = [r["lower"] / r["T"] for r in inst["curves"]["non-neighbour"]["rows"]]
        assert all(b >= a - 1e-12 for a, b in zip(non, non[1:], strict=False))
        last = inst["curves"]["non-neighbour"]["rows"][-1]
        one_over_n = inst["one_over_n"]
        assert 0.3 * one_over_n < last["lower"] / 60 <= last["upper"] / 60 < one_over_n


def test_v2_gap_table_is_never_negative(quick_run):
    _, _, records = quick_run
    for name in ("v2-fig1", "v2-fig2"):
        for inst in records[name]["instances"]:
            table = inst["gap_table"]
            assert {(row["pair"], row["T"]) for row in table} == {
                (p, T) for p in ("neighbour", "non-neighbour") for T in (30, 60)}
            for row in table:
                assert row["gap"] >= 0.0 and 0.0 <= row["relative_gap"] < 1.0


def test_v2_fig2_claim_status_is_consistent_with_the_bounds(quick_run):
    script, _, records = quick_run
    status = script["claim_status"]
    assert status(1.05, 1.0, 1.0) == "verified"
    assert status(1.2, 1.0, 1.05) == "refuted"
    assert status(1.12, 1.0, 1.05) == "undecided"
    assert status(1e-20, 0.0, 0.0) == "zero"
    for inst in records["v2-fig2"]["instances"]:
        for pair in ("neighbour", "non-neighbour"):
            claim = inst["claim"][pair]
            for r in claim["rows"]:
                # the spectral bound is a certified upper bound, so never below the lower one
                assert r["spectral"] >= r["lower"] - 1e-12
                assert r["lower"] <= r["upper"]
                assert r["status"] == status(r["spectral"], r["lower"], r["upper"])
            listed = (claim["verified_T"] + claim["refuted_T"] + claim["undecided_T"]
                      + claim["zero_T"])
            assert sorted(listed) == [r["T"] for r in claim["rows"]]


def test_v1_figure_written_or_skipped(quick_run):
    _, out, records = quick_run
    record = records["v1-fig1"]
    if record is None:  # the engine lacks view="secure-summation-v1"
        assert not (out / "gossip_v1_fig1_quick.json").exists()
        return
    inst = record["instances"][0]
    assert inst["scheme"] == "max-degree" and inst["n"] == 100
    for pair in ("neighbour", "non-neighbour"):
        for r in inst["curves"][pair]["rows"]:
            assert 0.0 <= r["lower"] <= r["upper"]
    assert all(row["gap"] >= 0.0 for row in inst["gap_table"])
    assert (out / "gossip_v1_fig1_quick.png").stat().st_size > 10_000
