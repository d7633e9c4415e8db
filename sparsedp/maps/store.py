"""The on-disk store of a privacy map: one Parquet file (pyarrow, the optional extra
``sparsedp[map]``) holding the table and, in its schema metadata, the map's parameters.

Writing is atomic (:func:`sparsedp.files.write_atomically`: a temporary file in the same
directory, then ``os.replace``, with the permissions the umask gives), so a reader never sees
half a table.  A path that already holds a map with other parameters, or a file
that is not a sparsedp map, is refused (:func:`check_store`): a store is never overwritten
with a different map.  The same parameters give the same table, so such a store is replaced.

Columns: ``observer`` and ``target`` (rows of W, or the graph's labels: integers or
strings), ``distance`` (int32, -1 unreachable), ``lower``, ``upper``, ``epsilon`` (float64, or
float32 for a map built with ``float32=True``; null where not computed, NaN in the map),
``kind`` (string): the Arrow table of :func:`sparsedp.tables.arrow_table`, as
:meth:`PrivacyMap.to_arrow <sparsedp.maps.privacy_map.PrivacyMap.to_arrow>` gives it but
with ``kind`` as plain strings.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from sparsedp.errors import ParameterError
from sparsedp.files import write_atomically
from sparsedp.maps.privacy_map import PrivacyMap
from sparsedp.tables import arrow_table, optional_module

METADATA_KEY = b"sparsedp.map.parameters"


def require_pyarrow() -> None:
    """ParameterError (one line, how to install it) unless pyarrow is importable."""
    _parquet()


def _parquet():
    """``pyarrow.parquet``, or a one-line MissingExtraError (a ParameterError) saying how to
    install it."""
    return optional_module("pyarrow.parquet", "map", "writing or reading a Parquet map")


def stored_parameters(path) -> dict | None:
    """The parameters recorded in the map store at ``path``, or ``None`` if none exists there.
    ParameterError when ``path`` exists but is not a sparsedp map store."""
    path = Path(path)
    if not path.exists():
        return None
    pq = _parquet()
    try:
        metadata = pq.read_schema(path).metadata or {}
    except Exception as exc:  # pyarrow raises several types for a file that is not Parquet
        raise ParameterError(f"{path} exists and is not a sparsedp map store (not a Parquet "
                             f"file: {exc}); refusing to overwrite it") from None
    if METADATA_KEY not in metadata:
        raise ParameterError(f"{path} exists and is not a sparsedp map store (no map "
                             "parameters recorded); refusing to overwrite it")
    return json.loads(metadata[METADATA_KEY])


def check_store(path, parameters: dict) -> bool:
    """Refuse (ParameterError, one line) a ``path`` holding a map with other parameters or a
    file that is not a map; return whether a store with these parameters exists."""
    existing = stored_parameters(path)
    if existing is None:
        return False
    refuse_other_parameters(path, "a map", existing, parameters)
    return True


def refuse_other_parameters(path, what: str, existing: dict, parameters: dict) -> None:
    """ParameterError (one line, naming up to three differing keys) unless the ``existing``
    parameters recorded at ``path`` are ``parameters`` (compared as stored in JSON)."""
    wanted = json.loads(json.dumps(parameters))  # as stored: tuples become lists
    if existing != wanted:
        differing = sorted(k for k in set(existing) | set(wanted)
                           if existing.get(k) != wanted.get(k))
        shown = ", ".join(f"{k}: {existing.get(k)!r} there, {wanted.get(k)!r} here"
                          for k in differing[:3])
        raise ParameterError(f"{path} holds {what} with different parameters ({shown}); "
                             "choose another output path for other parameters, or remove it")


def write_map(privacy_map: PrivacyMap, path: str | os.PathLike,
              parameters: dict | None = None) -> Path:
    """Write a privacy map's table to ``path`` as Parquet, atomically, with its parameters in
    the schema metadata (module docstring).

    Parameters
    ----------
    privacy_map : PrivacyMap
        The map (:func:`sparsedp.privacy_map`, :func:`sparsedp.random_walk_map`,
        :func:`sparsedp.mf_map`).
    path : str or path-like
        The Parquet file; written through a temporary file in the same directory.
    parameters : dict, optional
        The parameters recorded with it (default: the map's).

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    ParameterError
        ``path`` holds a map with other parameters, or a file that is not a map store.
    MissingExtraError
        pyarrow is not installed (extra ``sparsedp[map]``).

    Examples
    --------
    >>> import networkx as nx, sparsedp, tempfile, os
    >>> m = sparsedp.privacy_map(nx.cycle_graph(6), observers=[0], T=4, sigma=2.0, delta=1e-5)
    >>> path = sparsedp.write_map(m, os.path.join(tempfile.mkdtemp(), "map.parquet"))
    >>> back = sparsedp.read_map(path)
    >>> len(back), back.parameters == m.parameters, back.rows()[1] == m.rows()[1]
    (5, True, True)
    """
    pq = _parquet()
    parameters = privacy_map.parameters if parameters is None else parameters
    path = Path(path)
    check_store(path, parameters)
    table = arrow_table(privacy_map.columns).replace_schema_metadata(
        {METADATA_KEY: json.dumps(parameters).encode()})
    write_atomically(path, lambda temporary: pq.write_table(table, temporary))
    return path


def stored_rows(path) -> int:
    """The number of rows of the map stored at ``path`` (from the Parquet footer)."""
    pq = _parquet()
    return pq.read_metadata(path).num_rows


def read_map(path: str | os.PathLike) -> PrivacyMap:
    """The privacy map stored at ``path`` by :func:`write_map`: its table and parameters
    (the summaries are recomputed from the table; nulls read back as NaN).

    Parameters
    ----------
    path : str or path-like
        A Parquet file written by :func:`write_map` (or ``sparsedp map --out``).

    Returns
    -------
    PrivacyMap
        The table (``lower``, ``upper``, ``epsilon`` as float64) and the stored parameters.

    Raises
    ------
    ParameterError
        No file at ``path``, or a file that is not a map store.
    MissingExtraError
        pyarrow is not installed (extra ``sparsedp[map]``).

    Examples
    --------
    >>> import networkx as nx, sparsedp, tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "map.parquet")
    >>> _ = sparsedp.write_map(sparsedp.privacy_map(nx.path_graph(4), [0], T=3), path)
    >>> sparsedp.read_map(path).columns["distance"].tolist()
    [1, 2, 3]
    """
    pq = _parquet()
    parameters = stored_parameters(path)
    if parameters is None:
        raise ParameterError(f"no map store at {path}")
    table = pq.read_table(path)
    columns = {}
    for name in table.column_names:
        values = table.column(name).to_numpy()  # float nulls become NaN
        if name in ("lower", "upper", "epsilon"):
            columns[name] = np.asarray(values, dtype=np.float64)
        elif name == "kind":
            columns[name] = np.asarray(values, dtype=np.dtypes.StringDType())
        else:
            columns[name] = values
    return PrivacyMap(columns=columns, parameters=parameters)
