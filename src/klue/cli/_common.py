"""Small helpers shared by the CLI modules."""

from __future__ import annotations

import sys
from typing import NoReturn

from rich.console import Console

# Results and tables go to stdout; progress and messages to stderr, so `--json` output stays clean.
stdout = Console()
stderr = Console(stderr=True)


def fail(message: str, code: int = 2) -> NoReturn:
    """Stop with one clear sentence on stderr and exit code 2 (bad input or missing data)."""
    print(f"klue: error: {message}", file=sys.stderr)
    sys.exit(code)
