"""The names of what a study writes into its directory."""

from __future__ import annotations

__all__ = ["RESULTS", "STUDY_JSON", "HISTORIES", "STUDY_FILES", "FIXED_COLUMNS"]

RESULTS = "results.csv"
STUDY_JSON = "study.json"
HISTORIES = "histories"
STUDY_FILES = (RESULTS, STUDY_JSON, "results.parquet")
"""The files a study writes under fixed names (no plot may take one)."""

FIXED_COLUMNS = ("run_id", "index", "status", "runtime_s", "message", "worker")
"""The columns of results.csv that every study has (the parameters and outputs are
between ``index`` and ``status``)."""
