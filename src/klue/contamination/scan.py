"""`klue contamination scan` (being built: issue 41)."""

from __future__ import annotations

from typing import Any

from klue.errors import DataError


def run_scan_command(**options: Any) -> None:
    raise DataError("klue contamination scan is being built (issue 41)")
