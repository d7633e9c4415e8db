"""Tabular results as Arrow tables and pandas data frames: the one conversion path.

A tabular result (a privacy map, a per-target worst case, a summary, the leakage of every
victim, ...) is a set of equal-length columns; :class:`Tabular` gives it ``to_arrow()`` and
``to_pandas()`` from its :meth:`Tabular.table_columns`.  The path is always columns ->
``pyarrow.Table`` (:func:`arrow_table`) -> ``pandas.DataFrame``, so both agree, and the
Parquet store of a map writes the same Arrow table (:mod:`sparsedp.maps.store`).

Column types: integer and float numpy columns keep their dtype (ids and distances stay
integers); NaN in a float column, which the results use for "not computed", becomes a null
(pandas reads it back as NaN); the columns named in ``categorical`` (kinds, families,
schemes) become dictionary-encoded strings (``category`` in pandas); other strings stay
strings; an object column (node labels, ``None`` for "none") is converted value by value
(``None`` becomes a null).  pyarrow and pandas are optional: the extras ``sparsedp[map]``
(pyarrow) and ``sparsedp[pandas]`` (both), imported only when a conversion runs.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import ModuleType
from typing import Any

import numpy as np

from sparsedp.errors import MissingExtraError

__all__ = ["Rows", "Tabular", "arrow_table", "optional_module"]


def optional_module(name: str, extra: str, purpose: str) -> ModuleType:
    """The optional module ``name``, imported now, or a one-line :class:`MissingExtraError`
    naming the extra that installs it.

    Parameters
    ----------
    name : str
        The module (``"pyarrow"``, ``"pandas"``, ``"pyarrow.parquet"``).
    extra : str
        The extra of ``sparsedp`` that installs it (``"map"``, ``"pandas"``).
    purpose : str
        What needs it, for the message (``"to_pandas()"``).

    Returns
    -------
    module

    Raises
    ------
    MissingExtraError
        The module cannot be imported (also an ``ImportError`` and a ``ParameterError``).

    Examples
    --------
    >>> from sparsedp.tables import optional_module
    >>> optional_module("json", "map", "reading").__name__
    'json'
    """
    try:
        return importlib.import_module(name)
    except ImportError:
        top = name.split(".")[0]
        raise MissingExtraError(f"{purpose} needs {top}, which is not installed: "
                                f"pip install 'sparsedp[{extra}]'") from None


def arrow_table(columns: Mapping[str, Any], categorical: tuple[str, ...] = (),
                purpose: str = "to_arrow()") -> Any:
    """The equal-length ``columns`` (name -> numpy array or sequence) as a ``pyarrow.Table``
    (column types: module docstring).

    Parameters
    ----------
    columns : mapping of str to array-like
        The table, one entry per row in each column.
    categorical : tuple of str
        Names of string columns to store dictionary-encoded (pandas ``category``).
    purpose : str
        What asked, for the error when pyarrow is missing.

    Returns
    -------
    pyarrow.Table

    Raises
    ------
    MissingExtraError
        pyarrow is not installed (extra ``sparsedp[map]``).

    Examples
    --------
    >>> import numpy as np
    >>> from sparsedp.tables import arrow_table
    >>> t = arrow_table({"distance": np.array([1, 2], dtype=np.int32),
    ...                  "upper": np.array([0.5, np.nan]),
    ...                  "kind": np.array(["exact", "lower"])}, categorical=("kind",))
    >>> [str(f.type) for f in t.schema]
    ['int32', 'double', 'dictionary<values=string, indices=int32, ordered=0>']
    >>> t.column("upper").null_count
    1
    """
    pa = optional_module("pyarrow", "map", purpose)
    arrays = {}
    for name, column in columns.items():
        values = np.asarray(column)
        if values.dtype.kind == "f":
            arrays[name] = pa.array(values, mask=np.isnan(values))
        elif values.dtype.kind in "iub":
            arrays[name] = pa.array(values)
        else:
            converted = (pa.array(values, type=pa.string()) if values.dtype.kind in "UT"
                         else pa.array(values.tolist()))  # labels of any type, None
            # categories in order of appearance (a hash table: fast on 10^8 rows)
            arrays[name] = converted.dictionary_encode() if name in categorical else converted
    return pa.table(arrays)


class Tabular:
    """``to_arrow()`` and ``to_pandas()`` for a result whose :meth:`table_columns` is a table.

    A subclass defines :meth:`table_columns` and, for its kind-like string columns,
    :attr:`categorical`.

    Examples
    --------
    >>> import networkx as nx, sparsedp
    >>> m = sparsedp.privacy_map(nx.cycle_graph(6), observers=[0], T=4)
    >>> df = m.to_pandas()
    >>> list(df.columns), str(df["distance"].dtype), str(df["kind"].dtype)
    (['observer', 'target', 'distance', 'lower', 'upper', 'kind', 'epsilon'], 'int32', 'category')
    """

    categorical: tuple[str, ...] = ()

    def table_columns(self) -> dict[str, Any]:
        """The table: column name -> numpy array (one entry per row)."""
        raise NotImplementedError

    def to_arrow(self) -> Any:
        """The table as a ``pyarrow.Table`` (:func:`arrow_table`; extra ``sparsedp[map]``).

        Returns
        -------
        pyarrow.Table

        Raises
        ------
        MissingExtraError
            pyarrow is not installed.
        """
        return arrow_table(self.table_columns(), self.categorical)

    def to_pandas(self) -> Any:
        """The table as a ``pandas.DataFrame``, through :meth:`to_arrow` (extra
        ``sparsedp[pandas]``): integer columns stay integers, nulls read as NaN (floats) or
        None, categorical columns are ``category``.

        Returns
        -------
        pandas.DataFrame

        Raises
        ------
        MissingExtraError
            pandas or pyarrow is not installed.
        """
        optional_module("pandas", "pandas", "to_pandas()")
        return arrow_table(self.table_columns(), self.categorical,
                           purpose="to_pandas()").to_pandas()


class Rows(list, Tabular):
    """A summary as a list of row dicts (plain Python values) that also converts to a table:
    a nested dict ``{"lower": {"min": ..}}`` becomes the column ``lower_min``; a missing
    value (``None``) a null.

    Examples
    --------
    >>> from sparsedp.tables import Rows
    >>> rows = Rows([{"distance": 1, "upper": {"min": 0.5, "max": 2.0}},
    ...              {"distance": 2, "upper": None}])
    >>> rows[0]["distance"], sorted(rows.table_columns())
    (1, ['distance', 'upper_max', 'upper_min'])
    >>> rows.table_columns()["upper_min"].tolist()
    [0.5, nan]
    """

    def __init__(self, rows=(), categorical: tuple[str, ...] = ()) -> None:
        super().__init__(rows)
        self.categorical = categorical

    def table_columns(self) -> dict[str, Any]:
        """The rows as columns (nested dicts flattened to ``name_key``): int64 when every
        value is an integer, float64 when every value is a number or None (None as NaN),
        object otherwise."""
        nested = {name for row in self for name, value in row.items() if isinstance(value, dict)}
        flat = [_flatten(row, nested) for row in self]
        names = list(dict.fromkeys(name for row in flat for name in row))
        columns = {}
        for name in names:
            values = [row.get(name) for row in flat]
            if all(isinstance(v, int) for v in values):
                columns[name] = np.array(values, dtype=np.int64)
            elif all(v is None or isinstance(v, (int, float)) for v in values):
                columns[name] = np.array([np.nan if v is None else v for v in values],
                                         dtype=np.float64)
            else:
                columns[name] = np.array(values, dtype=object)
        return columns


def _flatten(row: dict, nested: set) -> dict:
    """A row with its nested dicts spread into ``name_key`` entries; a ``None`` where other
    rows have a nested dict is left out (its entries are missing: NaN)."""
    out = {}
    for name, value in row.items():
        if isinstance(value, dict):
            out.update({f"{name}_{key}": v for key, v in value.items()})
        elif name not in nested:
            out[name] = value
    return out
