"""CoNLL-U reading: one bad cell is one error, in the reader and in `klue data validate`, `klue train` and
`klue score` (a bad HEAD used to add a "words must be numbered" error for every following word)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from klue.cli import app
from klue.errors import DataError, ProblemLog
from klue.io.conllu import read_sentences

runner = CliRunner()
N_WORDS = 25


def _row(i: int, parent: int, cells: dict[str, str]) -> str:
    values = {"id": str(i), "form": f"말{i}", "lemma": f"말{i}", "upos": "NOUN", "xpos": "NNG", "feats": "_",
              "head": str(parent), "deprel": "root" if parent == 0 else "dep", "deps": "_", "misc": "_"} | cells
    return "\t".join(values.values())


def _sentence(k: int, bad: dict[str, str] | None = None, drop: int | None = None) -> str:
    """A chain of N_WORDS words (word i's head is i + 1, the last is the root); `bad` replaces cells of word
    1, `drop` leaves a word line out."""
    rows = []
    for i in range(1, N_WORDS + 1):
        if i == drop:
            continue
        cells = bad if i == 1 and bad is not None else {}
        rows.append(_row(i, 0 if i == N_WORDS else i + 1, cells))
    return f"# sent_id = s{k}\n# text = {' '.join(f'말{i}' for i in range(1, N_WORDS + 1))}\n" + "\n".join(rows) + "\n"


BAD_CELLS = {
    "a HEAD that is not a number": ({"head": "x"}, None, "HEAD 'x' is not an integer"),
    "a HEAD outside the sentence": ({"head": "99"}, None, "word 1: HEAD 99 is out of range 0..25"),
    "an ID out of order": ({"id": "7"}, None, "ID '7': words must be numbered 1, 2, ... (expected 1)"),
    "a line with a column missing": ({"misc": "_\t_"}, None, "expected 10 tab-separated CoNLL-U columns, found 11"),
    "a word line missing": (None, 5, "ID '6': words must be numbered 1, 2, ... (expected 5)"),
}


def _file(tmp_path: Path, bad: dict[str, str] | None, drop: int | None) -> Path:
    path = tmp_path / "ko_mine-ud-dev.conllu"
    text = "\n".join([_sentence(1), _sentence(2, bad, drop), _sentence(3)])
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("case", list(BAD_CELLS))
def test_one_bad_cell_is_one_error(tmp_path: Path, case: str) -> None:
    bad, drop, message = BAD_CELLS[case]
    path = _file(tmp_path, bad, drop)
    log = ProblemLog(str(path))
    sentences = read_sentences(path, log)
    assert [p.message for p in log.errors] == [message]
    assert [s.sent_id for s in sentences] == ["s1", "s3"]  # the bad sentence is left out, the others kept


def _error_lines(text: str, path: Path) -> list[str]:
    return [line for line in text.splitlines() if f"{path}:" in line and ": error:" in line]


def test_validate_train_and_score_report_one_error_for_one_bad_head(tmp_path: Path) -> None:
    path = _file(tmp_path, {"head": "x"}, None)
    validate = runner.invoke(app, ["data", "validate", str(path), "--task", "dp"], env={"COLUMNS": "300"})
    assert validate.exit_code == 2 and len(_error_lines(validate.output, path)) == 1, validate.output

    train = runner.invoke(app, ["train", "--task", "dp", "--model", "classic", "--train", str(path),
                                "--eval-fraction", "0.5", "--output", str(tmp_path / "run")])
    assert isinstance(train.exception, DataError)
    # the reading layer leads with how the format was told (a hint, not a problem of a cell)
    assert [p.message for p in train.exception.problems if p.path == str(path) and p.severity == "error"
            and not p.message.startswith("read as")] == ["HEAD 'x' is not an integer"]

    predictions = tmp_path / "p.jsonl"
    predictions.write_text("".join(json.dumps({"guid": f"s{k}", "heads": [0] * N_WORDS, "deprels": ["dep"] * N_WORDS})
                                   + "\n" for k in (1, 2, 3)), encoding="utf-8")
    score = runner.invoke(app, ["score", "--task", "dp", "--gold", str(path), "--predictions", str(predictions)])
    assert isinstance(score.exception, DataError)
    # the first line names the format read (and the option that changes it); then the one error of the file
    assert [p.message for p in score.exception.problems if p.path == str(path) and p.severity == "error"
            and not p.message.startswith("read as the")] == ["HEAD 'x' is not an integer"]
