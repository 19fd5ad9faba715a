"""`klue ARGS` run inside the test process, seen as a subprocess would see it: the exit code, stdout and stderr.

For tests whose subject is a command's work and its files, not the process boundary (signals, exit codes of a
killed process, environment isolation): a `klue` subprocess that loads a model pays for importing torch and
transformers again, about 3 CPU seconds each time on this project's machine, which the test process has paid
once. The command runs through `klue.cli.main`, so a klue error ends it with its exit code and one line on
stderr, as on the command line."""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from unittest import mock


@dataclass(frozen=True)
class Done:
    """What `subprocess.run(..., capture_output=True, text=True)` gives, for the fields the tests read."""

    returncode: int
    stdout: str
    stderr: str


def klue_in_process(*args: str, cwd: Path | None = None, environ: Mapping[str, str] | None = None) -> Done:
    """`environ`, like subprocess's `env`: the whole environment the command sees (restored afterwards)."""
    from klue.cli import main

    out, err = io.StringIO(), io.StringIO()
    code: int = 0
    argv = sys.argv
    sys.argv = ["klue", *args]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                (contextlib.chdir(cwd) if cwd is not None else contextlib.nullcontext()), \
                (mock.patch.dict(os.environ, environ, clear=True) if environ is not None else contextlib.nullcontext()):
            try:
                main()
            except SystemExit as exit_:
                code = exit_.code if isinstance(exit_.code, int) else 0 if exit_.code is None else 1
    finally:
        sys.argv = argv
    return Done(code, out.getvalue(), err.getvalue())
