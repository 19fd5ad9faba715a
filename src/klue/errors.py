"""Errors that point at the offending file and place.

Readers and scorers collect every problem they find in a `ProblemLog` and raise one `DataError` that
lists them all, so a user fixes a file in one pass instead of one error per run. The CLI turns a
`DataError` into a readable message and its `exit_code`: 2, or 3 for `UnreachableError` (README, "Exit codes").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Problem:
    """One thing wrong (or suspicious) in an input file.

    `location` is a line (``"line 12"``), a JSON path (``"$[3].labels.real-label"``) or both.
    """

    path: str
    location: str
    message: str
    severity: Severity = "error"

    def __str__(self) -> str:
        return self.text()

    def text(self, name_errors: bool = True) -> str:
        """`path:location: severity: message`; `name_errors=False` leaves out the word "error" (a CLI line
        that already starts "klue: error:" need not say it twice)."""
        where = f"{self.path}:{self.location}" if self.location else self.path
        # A pathless error is an option's problem: its message alone (the CLI adds "klue: error:").
        unsaid = self.severity == "error" and not (name_errors and where)
        severity = "" if unsaid else f"{self.severity}: "
        return f"{where}: {severity}{self.message}" if where else f"{severity}{self.message}"


class DataError(Exception):
    """Bad input: a data file, a prediction file or an option that names one."""

    exit_code = 2  # what the CLI exits with (README, "Exit codes")

    def __init__(self, problems: list[Problem] | str, path: str | Path | None = None) -> None:
        if isinstance(problems, str):
            problems = [Problem(str(path) if path is not None else "", "", problems)]
        self.problems: list[Problem] = list(problems)
        super().__init__(self.summary())

    def summary(self, limit: int = 20, name_errors: bool = True) -> str:
        errors = [p for p in self.problems if p.severity == "error"] or self.problems
        lines = [p.text(name_errors) for p in errors[:limit]]
        if len(errors) > limit:
            lines.append(f"... and {len(errors) - limit} more problems")
        return "\n".join(lines)


class UnreachableError(DataError):
    """A server klue needs answers nothing at all (refused, no route, DNS, connect timeout, after every
    retry): the download host, an LLM or embedding server. Its own exit code, so a script can wait and retry."""

    exit_code = 3


class HasProblems:
    """Anything that holds a `problems` list: its errors and its warnings."""

    problems: list[Problem]

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def warnings(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == "warning"]


@dataclass
class ProblemLog(HasProblems):
    """Collects the problems found in one file; `raise_if_errors` ends a read that found any."""

    path: str
    problems: list[Problem] = field(default_factory=list)

    def error(self, location: str, message: str) -> None:
        self.problems.append(Problem(self.path, location, message, "error"))

    def warning(self, location: str, message: str) -> None:
        self.problems.append(Problem(self.path, location, message, "warning"))

    def raise_if_errors(self) -> None:
        if self.errors:
            raise DataError(self.problems)
