"""pyarrow, for the checks that read parquet files (the curate stage, the joint download): an optional
extra (``a1x-tui[data]``, 170 MB of an install that otherwise needs none of it), imported on use.
Where it is missing, those checks fail in one line naming the extra, and preflight says so first."""

from __future__ import annotations

from typing import Any

NO_PYARROW = "pyarrow is not installed (pip install 'a1x-tui[data]')"


def parquet() -> Any:
    """``pyarrow.parquet``, or None where the ``data`` extra is not installed."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        return None
    return pq


def parquet_missing() -> bool:
    """No pyarrow here (found without importing it)."""
    import importlib.util

    return importlib.util.find_spec("pyarrow") is None
