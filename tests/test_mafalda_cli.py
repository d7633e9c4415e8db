"""``sparsedp mafalda``: the table agrees with the library, bad input is one line (status 2)."""

import json
from pathlib import Path

import jsonschema
import networkx as nx
import numpy as np

from sparsedp.cli.main import main
from sparsedp.graphs.weights import gossip_matrix
from sparsedp.mf import cyclic
from sparsedp.mf.optimise import optimise_correlation
from sparsedp.mf.utility import utility_gram


def test_json_matches_library_and_saves_C(capsys, tmp_path):
    out = tmp_path / "C.npy"
    code = main(["mafalda", "-T", "24", "--participation", "3,8", "--json", "--no-progress",
                 "--save", str(out)])
    assert code == 0
    text = capsys.readouterr().out
    rec = json.loads(text, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    schema = json.loads((Path(__file__).resolve().parents[1] / "docs" / "schemas"
                         / "mafalda.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(rec, schema, cls=jsonschema.Draft202012Validator)
    W = gossip_matrix(nx.florentine_families_graph(), scheme="row-normalised-self-loops")
    ref = optimise_correlation(utility_gram(W, 24).H, cyclic(3, 8), progress=False)
    got = rec["correlations"]["mafalda"]
    assert np.isclose(got["objective"], ref.objective, rtol=1e-12)
    assert np.array_equal(np.load(out), ref.C)
    objs = {k: v["objective"] for k, v in rec["correlations"].items()}
    assert min(objs, key=objs.get) == "mafalda"


def test_bad_input_is_one_line(capsys):
    code = main(["mafalda", "-T", "25", "--participation", "3,8", "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and "not a multiple of the participation period" in err
    code = main(["mafalda", "-T", "24", "--participation", "3,8", "--save", "C.txt"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "\n" not in err and ".npy" in err
