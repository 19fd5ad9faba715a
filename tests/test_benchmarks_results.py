"""benchmarks/RESULTS.md stays a reference: its contents list every section, and every citation of one of its
sections (or of a file under benchmarks/history/) in the code, docs and benchmarks names one that exists."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "RESULTS.md"
HISTORY = REPO / "benchmarks" / "history"
SCANNED = ("src", "docs", "benchmarks", "tests", "scripts")
SUFFIXES = {".py", ".md", ".sh", ".yaml", ".toml"}
# `benchmarks/RESULTS.md#anchor`, `RESULTS.md, "Heading"`, `RESULTS.md ("Heading")` and the same of a history
# file; a quoted heading may be the start of a longer one ("Fine-tuning speed levers").
CITATION = re.compile(r'(?P<file>(?:benchmarks/)?(?:RESULTS|history/[\w.-]+)\.md)'
                      r'`?(?:#(?P<anchor>[\w-]+)|,?\s*\(?(?:section\s+)?"(?P<title>[^"\n]+)")?')


def headings(path: Path) -> list[str]:
    """The text of every Markdown heading of `path`, outside code blocks."""
    out, fenced = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (match := re.match(r"#{1,6} (.+)", line)):
            out.append(match.group(1).strip())
    return out


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def scanned_files() -> list[Path]:
    files = [REPO / "README.md"]
    for top in SCANNED:
        files += [p for p in sorted((REPO / top).rglob("*")) if p.suffix in SUFFIXES and p.is_file()]
    return [p for p in files if p != Path(__file__).resolve()]


def test_the_contents_list_every_section_in_order() -> None:
    text = RESULTS.read_text(encoding="utf-8")
    sections = [h.removeprefix("## ") for h in re.findall(r"^## .+$", text, re.MULTILINE)]
    assert sections[0] == "Contents", "RESULTS.md opens with its contents"
    listed = re.findall(r"^- \[(.+)\]\(#([\w-]+)\)$", text.split("\n## ", 2)[1], re.MULTILINE)
    missing = [s for s in sections[1:] if s not in [name for name, _ in listed]]
    assert not missing, "add to the contents of benchmarks/RESULTS.md: " + "; ".join(
        f"- [{s}](#{slug(s)})" for s in missing)
    assert [name for name, _ in listed] == sections[1:], "the contents list the sections in their order"
    assert [anchor for _, anchor in listed] == [slug(s) for s in sections[1:]], "a contents link misses its section"


def test_every_history_file_the_results_link_exists() -> None:
    for link in re.findall(r"\]\((history/[^)]*)\)", RESULTS.read_text(encoding="utf-8")):
        assert (RESULTS.parent / link).exists(), f"benchmarks/RESULTS.md links {link}, which does not exist"


def test_every_cited_section_exists() -> None:
    cited = 0
    for path in scanned_files():
        for match in CITATION.finditer(path.read_text(encoding="utf-8")):
            where = f"{path.relative_to(REPO)}: {match.group(0)!r}"
            cited_file = HISTORY.parent / match.group("file").removeprefix("benchmarks/")
            assert cited_file.is_file(), f"{where} cites a file that does not exist"
            titles = headings(cited_file)
            if match.group("anchor"):
                assert match.group("anchor") in {slug(t) for t in titles}, f"{where}: no such section"
            if match.group("title"):
                title = match.group("title")
                assert any(t == title or t.startswith(title) for t in titles), f"{where}: no such section"
            cited += bool(match.group("anchor") or match.group("title"))
    assert cited >= 5, "the code and docs cite sections of benchmarks/RESULTS.md: the pattern no longer finds them"
