"""Small helpers shared by the CLI modules."""

from __future__ import annotations

import sys
from typing import Any, NoReturn

from rich.console import Console

# Results and tables go to stdout; progress and messages to stderr, so `--json` output stays clean.
stdout = Console()
stderr = Console(stderr=True)


def fail(message: str, code: int = 2) -> NoReturn:
    """Stop with one clear sentence on stderr and exit code 2 (bad input or missing data)."""
    print(f"klue: error: {message}", file=sys.stderr)
    sys.exit(code)


def metric_mode(mode: str) -> str:
    """`--mode`, checked: one of the metric modes (DataError naming them otherwise)."""
    from klue.errors import DataError
    from klue.metrics.report import METRIC_MODES

    if mode not in METRIC_MODES:
        raise DataError(f"--mode must be one of {', '.join(METRIC_MODES)}, not {mode!r}")
    return mode


def parse_key_values(items: list[str], option: str) -> dict[str, Any]:
    """`["learning_rate=1e-3", "epochs=2"]` -> dict; values are read as YAML scalars (`fp16=true` is a bool,
    an empty value is null). `option` names the flag or argument for the error."""
    import yaml

    from klue.errors import DataError

    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise DataError(f"{option} {item!r} is not key=value")
        out[key.strip()] = yaml.safe_load(value) if value.strip() else None
    return out
