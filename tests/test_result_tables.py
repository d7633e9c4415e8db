"""Results for other tools: tabular results as Arrow tables and pandas frames (one conversion
path, :mod:`sparsedp.tables`), and short reprs of every result class (:mod:`sparsedp.reprs`)."""

import dataclasses
import inspect
import sys
import typing

import networkx as nx
import numpy as np
import pytest

import sparsedp
from sparsedp.audit.gossip import AuditResult
from sparsedp.audit.mf import MFAuditResult
from sparsedp.audit.ppac import PPACAuditResult
from sparsedp.audit.randomwalk import RandomWalkAuditResult
from sparsedp.audit.statistics import PrivacyLowerBounds
from sparsedp.errors import MissingExtraError, ParameterError
from sparsedp.gossip.banded import BandedInterval
from sparsedp.learning.simulator import SimulationResult
from sparsedp.maps.privacy_map import PrivacyMap
from sparsedp.maps.sweep import SweepResult
from sparsedp.mf.summary import DistanceSummary, distance_summary
from sparsedp.ppac.convergence import ConvergenceBounds
from sparsedp.randomwalk.muffliato_sgd import MuffliatoSGDBound
from sparsedp.reprs import short_repr
from sparsedp.tables import Rows

pd = pytest.importorskip("pandas")
pa = pytest.importorskip("pyarrow")

REPR_LIMIT = 400  # characters of a real result's repr, whatever the size of its data
FIELD_LIMIT = 40  # characters a field may take in the repr, whatever the size of its value


def assert_converts(result):
    """``to_arrow()`` and ``to_pandas()`` hold the table's columns: same names, integer and
    float dtypes kept, values equal (NaN as null in Arrow, NaN again in pandas), strings equal
    (categorical or not)."""
    columns = result.table_columns()
    table = result.to_arrow()
    frame = result.to_pandas()
    assert table.column_names == list(frame.columns) == list(columns)
    assert table.num_rows == len(frame) == len(next(iter(columns.values())))
    for name, values in columns.items():
        values = np.asarray(values)
        got = frame[name]
        if values.dtype.kind in "iub":
            assert got.dtype == values.dtype, name
            np.testing.assert_array_equal(got.to_numpy(), values)
        elif values.dtype.kind == "f":
            assert got.dtype == values.dtype, name
            np.testing.assert_array_equal(got.to_numpy(), values)  # NaN where NaN
            assert table.column(name).null_count == int(np.isnan(values).sum())
        else:
            assert got.astype(object).tolist() == values.tolist(), name
        if name in result.categorical:
            assert isinstance(got.dtype, pd.CategoricalDtype), name
    return frame


def test_privacy_map_round_trip_keeps_dtypes_and_values():
    G = nx.relabel_nodes(nx.cycle_graph(10), {i: f"v{i}" for i in range(10)})
    m = sparsedp.privacy_map(G, ["v0", "v3"], "all", T=4, sigma=1.0, delta=1e-5,
                             upper="entrywise")
    frame = assert_converts(m)
    assert str(frame["distance"].dtype) == "int32"
    assert frame["observer"].tolist()[:2] == ["v0", "v0"]
    assert set(frame["kind"].cat.categories) <= {"exact", "certified upper", "lower"}
    schema = m.to_arrow().schema
    assert str(schema.field("kind").type).startswith("dictionary<values=string")
    assert str(schema.field("observer").type) == "string"


def test_a_map_without_uppers_has_null_uppers_and_a_float32_map_stays_float32():
    m = sparsedp.privacy_map(nx.path_graph(6), [0], "all", T=3, upper="none", float32=True)
    frame = assert_converts(m)
    assert str(frame["lower"].dtype) == "float32"
    assert m.to_arrow().column("upper").null_count == len(m) == 5  # no self pair
    assert frame["upper"].isna().all()


def test_summaries_convert_with_flattened_statistics():
    m = sparsedp.privacy_map(nx.cycle_graph(8), [0, 2], "all", T=5, sigma=2.0, delta=1e-5)
    by_distance = m.by_distance()
    assert isinstance(by_distance, list)  # still the list of row dicts it was
    frame = assert_converts(by_distance)
    for row, (_, line) in zip(by_distance, frame.iterrows(), strict=True):
        assert line["distance"] == row["distance"] and line["pairs"] == row["pairs"]
        assert line["upper_max"] == row["upper"]["max"]
        assert line["epsilon_mean"] == row["epsilon"]["mean"]
    per_target = m.per_target()
    frame = assert_converts(per_target)
    assert frame["worst_upper"].tolist() == [r["worst_upper"] for r in per_target]
    assert str(frame["worst_observer"].dtype) == "int64"


def test_a_summary_column_without_values_is_float_nan():
    rows = Rows([{"distance": 1, "lower": None, "upper": {"min": 1.0, "max": 2.0}},
                 {"distance": 2, "lower": None, "upper": None}])
    columns = rows.table_columns()
    assert list(columns) == ["distance", "lower", "upper_min", "upper_max"]
    assert columns["distance"].dtype == np.int64
    np.testing.assert_array_equal(columns["upper_min"], [1.0, np.nan])
    assert columns["lower"].dtype == np.float64 and np.isnan(columns["lower"]).all()


def test_random_walk_map_and_sweep_columns_are_tables():
    m = sparsedp.random_walk_map(nx.cycle_graph(6), targets=[0, 1], T=20, sigma=10.0,
                                 delta=1e-5, contributions=3)
    assert_converts(m)  # lower: NaN throughout (no lower bound), null in Arrow
    rows = len(m)
    swept = PrivacyMap(columns={"graph": np.full(rows, "er:6:0.5:1"),
                                "family": np.full(rows, "random-walk"), **m.columns},
                       parameters={})
    frame = assert_converts(swept)
    assert frame["family"].cat.categories.tolist() == ["random-walk"]


def test_worst_case_distance_summary_leakage_and_pairwise_loss_convert():
    worst = sparsedp.per_target_worst_case(nx.cycle_graph(8), T=5, sigma=1.0, delta=1e-5)
    assert_converts(worst)
    W = sparsedp.gossip_matrix(nx.path_graph(5))
    summary = distance_summary(W, [0], 3)
    frame = assert_converts(summary)
    assert frame["target"].tolist() == [1, 2, 3, 4] and frame["distance"].tolist() == [1, 2, 3, 4]
    assert frame["upper"].tolist() == [r.upper for r in summary.results]
    G = nx.cycle_graph(6)
    layout = sparsedp.ppac_layout(G, {k: (k + 1) % 6 for k in range(6)})
    leakage = sparsedp.ppac_leakage(layout, sparsedp.laplacian_consensus_matrix(G, scale=3),
                                    attacker=0, horizon=3)
    frame = assert_converts(leakage)
    assert frame["nats"].tolist() == leakage.nats.tolist()
    loss = sparsedp.random_walk_rdp(W, source=0, T=20, sigma=10.0, alpha=4.0,
                                    contributions=3)
    assert_converts(loss)
    coalition = sparsedp.random_walk_rdp(W, source=0, T=20, sigma=10.0, alpha=4.0,
                                         contributions=3, coalition=[2, 3])
    frame = coalition.to_pandas()
    assert frame["receivers"].tolist()[0].tolist() == [2, 3]
    assert frame["rdp"].tolist() == coalition.rdp.tolist()


def test_every_tabular_result_of_the_public_api_converts():
    """The results returned by the public functions that hold tables have the methods."""
    leakage = typing.get_type_hints(sparsedp.ppac_leakage)["return"]
    tabular = {sparsedp.PrivacyMap, sparsedp.WorstCase, sparsedp.PairwiseLoss,
               DistanceSummary, leakage}
    for cls in tabular:
        assert callable(cls.to_pandas) and callable(cls.to_arrow), cls


@pytest.mark.parametrize("missing, extra", [("pandas", "pandas"), ("pyarrow", "map")])
def test_a_missing_extra_is_one_clear_error(monkeypatch, missing, extra):
    m = sparsedp.privacy_map(nx.cycle_graph(5), [0], "all", T=3)
    monkeypatch.setitem(sys.modules, missing, None)  # import now raises ImportError
    with pytest.raises(MissingExtraError) as info:
        m.to_pandas()
    assert str(info.value) == (f"to_pandas() needs {missing}, which is not installed: "
                               f"pip install 'sparsedp[{extra}]'")
    assert isinstance(info.value, ImportError) and isinstance(info.value, ParameterError)
    if missing == "pyarrow":
        with pytest.raises(MissingExtraError, match=r"to_arrow\(\) needs pyarrow.*sparsedp\[map\]"):
            m.to_arrow()


# --- short reprs ---------------------------------------------------------------------------

def _public_result_classes() -> set:
    """The dataclasses in ``sparsedp.__all__`` and those returned by its functions."""
    found = set()
    for name in sparsedp.__all__:
        value = getattr(sparsedp, name)
        if inspect.isclass(value):
            candidates = [value]
        else:
            hints = typing.get_type_hints(value)
            candidates = typing.get_args(hints.get("return")) or [hints.get("return")]
        found.update(c for c in candidates if inspect.isclass(c) and dataclasses.is_dataclass(c))
    return found


RESULT_CLASSES = _public_result_classes() | {
    DistanceSummary, SweepResult, AuditResult, MFAuditResult, PPACAuditResult,
    RandomWalkAuditResult, PrivacyLowerBounds, ConvergenceBounds, BandedInterval,
    SimulationResult, MuffliatoSGDBound}


def test_the_public_result_classes_are_found():
    names = {c.__name__ for c in RESULT_CLASSES}
    assert {"SensitivityResult", "Bound", "MFResult", "PrivacyMap", "WorstCase", "PairwiseLoss",
            "SpectralInfo", "LeakageResult", "Graph", "ClosedForm", "LogGreenColumns",
            "LogDetResult", "MeanLoss", "PPACLayout"} <= names


def _large_values():
    """Values of every shape a field may hold, each large."""
    return [np.arange(10**6, dtype=np.float64), tuple(range(5000)), list(range(5000)),
            {str(k): k for k in range(1000)}, "a note " * 1000, np.zeros((3000, 3000 // 100)),
            1.2345678901234567e-300, None, (sparsedp.Bound("ones", 1.0, "lower", "x" * 500),) * 50]


@pytest.mark.parametrize("cls", sorted(RESULT_CLASSES, key=lambda c: c.__name__),
                         ids=lambda c: c.__name__)
def test_every_result_repr_is_short_whatever_the_size(cls):
    assert cls.__repr__ is short_repr
    values = _large_values()
    result = object.__new__(cls)  # every field large, without running __post_init__
    fields = dataclasses.fields(cls)
    for k, field in enumerate(fields):
        object.__setattr__(result, field.name, values[k % len(values)])
    text = repr(result)
    limit = len(cls.__name__) + 2 + FIELD_LIMIT * len(fields)
    assert text.startswith(f"{cls.__name__}(") and len(text) <= limit, text
    for field in fields:  # each field is named: the repr still says what is there
        assert f"{field.name}=" in text


def test_reprs_of_real_results_name_the_numbers_and_summarise_the_rest():
    W = sparsedp.gossip_matrix(nx.cycle_graph(12))
    r = sparsedp.squared_sensitivity(W, target=0, observers=[6], T=300, exact=False)
    text = repr(r)
    assert len(text) <= REPR_LIMIT and len(r.signs) == 300
    assert f"upper={r.upper!r}" in text and "signs=<tuple of 300>" in text
    m = sparsedp.privacy_map(nx.cycle_graph(200), "all", [0, 1], T=3, upper="none")
    assert repr(m) == ("PrivacyMap(columns=<dict of 7>, parameters=<dict of 11>, "
                       "notes=<tuple of 1>, info=<dict of 4>)")
    assert repr(sparsedp.as_graph(nx.cycle_graph(5000))) == (
        "Graph(adjacency=<csr_matrix 5000x5000>, node_ids=<int64 array 5000>)")
    assert repr(sparsedp.Bound("ones", 0.5, "lower", "c = 1")) == (
        "Bound(name='ones', value=0.5, kind='lower', description='c = 1')")


def test_every_accountant_repr_is_short_after_many_rounds():
    """The accountants are not dataclasses: their repr summarises their public attributes
    (it raised TypeError before)."""
    W = sparsedp.gossip_matrix(nx.cycle_graph(12))
    accountants = [sparsedp.Accountant(W, 0, [6], sigma=2.0),
                   sparsedp.TargetsAccountant(W, [6], sigma=2.0),
                   sparsedp.ObserversAccountant(W, 0, sigma=2.0),
                   sparsedp.GraphAccountant(W, sigma=2.0),
                   sparsedp.RandomWalkAccountant(W, 0, sigma=3.0, receivers=[6], contributions=3),
                   sparsedp.MFAccountant(W, 0, [6], sigma=3.0, trust_model="pndp-eq12")]
    for accountant in accountants:
        accountant.step(40)
        text = repr(accountant)
        name = type(accountant).__name__
        assert text.startswith(f"{name}(") and "sigma=" in text and len(text) <= 1000, text
