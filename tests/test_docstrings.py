"""Docstrings of the public API (issue 21, scope 9).

* Every example in the package's docstrings runs as a doctest: one test per module that has
  examples, failing on any example whose output differs.
* Every function and class in ``sparsedp.__all__`` has a numpydoc docstring: a Parameters
  section naming each parameter (Attributes or Parameters naming each field, for a
  dataclass), Returns and Raises for a function, and an Examples section with at least one
  ``>>>`` line.  numpydoc is not a dependency, so the sections are parsed here.
* Both checks are shown to fail on a broken docstring.
"""

from __future__ import annotations

import dataclasses
import doctest
import importlib
import inspect
import pkgutil
import re

import pytest

import sparsedp
import sparsedp.errors

OPTIONFLAGS = doctest.ELLIPSIS
NEEDS = {"sparsedp.privacy.interop": "dp_accounting",
         "sparsedp.accountant.gossip": "dp_accounting",  # examples that need an optional extra
         "sparsedp.tables": "pandas", "sparsedp.maps.privacy_map": "pandas",
         "sparsedp.maps.store": "pyarrow"}
SECTION = re.compile(r"^(?P<indent>[ \t]*)(?P<name>[A-Z][A-Za-z ]+)\n(?P=indent)-{3,}[ \t]*$",
                     re.MULTILINE)
ERRORS = {name for name, obj in vars(sparsedp.errors).items() if inspect.isclass(obj)}


def _modules_with_examples() -> list[str]:
    """Every module of the package (but ``__main__``) whose docstrings hold an example."""
    every = ["sparsedp", *(info.name for info in
                          pkgutil.walk_packages(sparsedp.__path__, "sparsedp.")
                          if not info.name.endswith("__main__"))]
    return [name for name in every if any(
        test.examples for test in doctest.DocTestFinder().find(importlib.import_module(name)))]


def _public() -> list[tuple[str, object]]:
    return [(name, getattr(sparsedp, name)) for name in sparsedp.__all__
            if inspect.isfunction(getattr(sparsedp, name))
            or inspect.isclass(getattr(sparsedp, name))]


def _run_doctests(module) -> tuple[int, int, str]:
    """(failed, attempted, report) of every example in ``module``."""
    report: list[str] = []
    runner = doctest.DocTestRunner(optionflags=OPTIONFLAGS)
    for test in doctest.DocTestFinder().find(module):
        runner.run(test, out=report.append)
    failed, attempted = runner.summarize(verbose=False)
    return failed, attempted, "".join(report)


@pytest.mark.parametrize("module_name", _modules_with_examples())
def test_docstring_examples_run(module_name):
    if module_name in NEEDS:
        pytest.importorskip(NEEDS[module_name])
    failed, attempted, report = _run_doctests(importlib.import_module(module_name))
    assert attempted > 0
    assert failed == 0, report


def _sections(doc: str) -> dict[str, str]:
    """numpydoc sections of a docstring (``inspect.cleandoc`` form): name -> body."""
    found = list(SECTION.finditer(doc))
    return {m["name"]: doc[m.end():found[k + 1].start() if k + 1 < len(found) else len(doc)]
            for k, m in enumerate(found)}


def _entries(body: str) -> set[str]:
    """Names of the entries of a Parameters/Attributes section: the unindented lines, before
    any `` : type``; ``a, b : float`` documents both."""
    names = set()
    for line in body.splitlines():
        if line.strip() and not line[0].isspace():
            head = line.split(" : ")[0]
            names.update(n.strip().lstrip("*") for n in head.split(","))
    return names


def docstring_problems(obj) -> list[str]:
    """What the docstring of a public function or class lacks (empty when complete)."""
    doc = inspect.getdoc(obj)
    if not doc:
        return ["no docstring"]
    sections = _sections(doc)
    problems = []
    examples = sections.get("Examples", "")
    if not re.search(r"^>>> ", examples, re.MULTILINE):
        problems.append("no Examples section with a >>> line")
    if inspect.isclass(obj) and issubclass(obj, Exception):
        return problems  # raised by the package, not built by the caller
    if inspect.isclass(obj):
        fields = [f.name for f in dataclasses.fields(obj)] if dataclasses.is_dataclass(obj) else []
        documented = _entries(sections.get("Parameters", "")) | _entries(
            sections.get("Attributes", ""))
        missing = [f for f in fields if f not in documented]
        if fields and missing:
            problems.append(f"fields not in Parameters/Attributes: {missing}")
        return problems
    params = [p.name for p in inspect.signature(obj).parameters.values()]
    if params and "Parameters" not in sections:
        problems.append("no Parameters section")
    elif params:
        missing = [p for p in params if p not in _entries(sections["Parameters"])]
        if missing:
            problems.append(f"parameters not documented: {missing}")
    if "Returns" not in sections:
        problems.append("no Returns section")
    if "Raises" not in sections:
        problems.append("no Raises section")
    else:
        named = _entries(sections["Raises"])
        if not named & ERRORS:
            problems.append(f"Raises names none of the package's errors: {sorted(named)}")
    return problems


@pytest.mark.parametrize("name, obj", _public(), ids=[name for name, _ in _public()])
def test_public_docstring_is_numpydoc(name, obj):
    assert docstring_problems(obj) == [], name


def test_every_public_function_and_class_is_checked():
    checked = {name for name, _ in _public()}
    errors = {"GossipMatrixError", "GraphError", "ParameterError", "SparseDPError"}
    assert errors <= checked
    assert len(checked) == len(sparsedp.__all__)  # __all__ holds only functions and classes


def _complete(x: float, delta: float = 0.5) -> float:
    """Halve.

    Parameters
    ----------
    x, delta : float
        A number.

    Returns
    -------
    float
        Half of it.

    Raises
    ------
    ParameterError
        Never.

    Examples
    --------
    >>> _complete(4.0)
    2.0
    """
    return x * delta


def test_the_checks_catch_a_broken_docstring():
    assert docstring_problems(_complete) == []

    def broken(x: float, delta: float = 0.5) -> float:
        return x * delta

    broken.__doc__ = _complete.__doc__.split("    Examples")[0]
    assert docstring_problems(broken) == ["no Examples section with a >>> line"]
    broken.__doc__ = _complete.__doc__.replace("x, delta : float", "x : float")
    assert docstring_problems(broken) == ["parameters not documented: ['delta']"]
    broken.__doc__ = _complete.__doc__.replace("ParameterError", "ValueError")
    assert docstring_problems(broken) == ["Raises names none of the package's errors: "
                                          "['ValueError']"]
    broken.__doc__ = None
    assert docstring_problems(broken) == ["no docstring"]


def test_a_wrong_example_output_fails(monkeypatch):
    module = importlib.import_module(__name__)
    monkeypatch.setattr(module._complete, "__doc__",
                        _complete.__doc__.replace("    2.0\n", "    2.5\n"))
    failed, attempted, report = _run_doctests(module)
    assert (failed, attempted) == (1, 1)
    assert "Expected:\n    2.5\nGot:\n    2.0" in report
