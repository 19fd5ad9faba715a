"""PII detection quality on hand-written Korean sentences, pseudonym shape and consistency, file outputs."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from klue.pretraining.pii import PII_KINDS, PiiDetector, PiiSpan, pseudonymise, score_spans
from klue.pretraining.pii_parallel import pseudonymise_files
from klue.scoring import RunRequest

HERE = Path(__file__).parent
_MARK = re.compile(r"\[\[(\w+):(.*?)\]\]")


def parse_annotated(line: str) -> tuple[str, list[PiiSpan]]:
    """`[[kind:text]]` marks -> (plain text, gold spans)."""
    out: list[str] = []
    spans: list[PiiSpan] = []
    position = last = 0
    for match in _MARK.finditer(line):
        out.append(line[last:match.start()])
        position += match.start() - last
        spans.append(PiiSpan(position, position + len(match.group(2)), match.group(1)))
        out.append(match.group(2))
        position += len(match.group(2))
        last = match.end()
    out.append(line[last:])
    return "".join(out), spans


def load(name: str) -> list[tuple[str, list[PiiSpan]]]:
    lines = (HERE / name).read_text(encoding="utf-8").splitlines()
    return [parse_annotated(line) for line in lines if line.strip() and not line.startswith("#")]


@pytest.fixture(scope="module")
def detector() -> PiiDetector:
    return PiiDetector()


def test_test_sets_are_large_enough_and_well_formed() -> None:
    tuned, held_out = load("pii_testset.txt"), load("pii_heldout.txt")
    assert len(tuned) + len(held_out) >= 90
    kinds = {s.kind for _, spans in tuned + held_out for s in spans}
    assert kinds == set(PII_KINDS)
    assert sum(1 for _, spans in tuned + held_out if not spans) >= 20  # hard negatives


# Floors. pii_testset.txt was written together with the detector (measured P 100 / R 98.4 overall, names
# R 96.8): its floors guard against regressions. pii_heldout.txt was written after tuning and never tuned
# on (measured P 95.0 / R 90.5 overall; names P 88.9 / R 80.0): a realistic estimate, floors a few points
# under it for Kiwi model changes. Structured kinds (numbers, e-mail, URL, address) are regular-language
# patterns: near perfect on both sets.
@pytest.mark.parametrize(("name", "precision", "recall", "name_precision", "name_recall"),
                         [("pii_testset.txt", 97.0, 95.0, 93.0, 90.0), ("pii_heldout.txt", 90.0, 85.0, 80.0, 70.0)])
def test_precision_and_recall_floors(detector: PiiDetector, name: str, precision: float, recall: float,
                                     name_precision: float, name_recall: float) -> None:
    cases = load(name)
    gold = [spans for _, spans in cases]
    pred = [detector.detect(text) for text, _ in cases]
    overall = score_spans(gold, pred)
    assert overall.precision >= precision and overall.recall >= recall, overall
    names = score_spans(gold, pred, "name")
    assert names.precision >= name_precision and names.recall >= name_recall, names
    structured = [score_spans(gold, pred, k) for k in PII_KINDS if k != "name"]
    tp = sum(s.tp for s in structured)
    assert tp / (tp + sum(s.fp for s in structured)) >= 0.95
    assert tp / (tp + sum(s.fn for s in structured)) >= 0.95


def test_hard_negatives_stay_untouched(detector: PiiDetector) -> None:
    for text in ["정부는 이상한 조사 결과를 발표했다.", "고객센터 1588-1234는 평일에만 운영됩니다.",
                 "오늘은 2023-05-17이고 가격은 1,299,000원이다.", "서울 강남구 일대에 비가 내렸다."]:
        assert pseudonymise(text, detector, random.Random(0)).text == text


def _luhn(digits: str) -> bool:
    total = 0
    for i, c in enumerate(reversed(digits)):
        v = int(c) * (2 if i % 2 else 1)
        total += v - 9 if v > 9 else v
    return total % 10 == 0


def test_pseudonyms_keep_kind_and_shape(detector: PiiDetector) -> None:
    text = ("홍길동 씨의 번호는 010-1234-5678, 주민번호 900101-1234567, 카드 1234-5678-9012-3456, "
            "메일 gildong@naver.com, 주소 서울특별시 강남구 테헤란로 152입니다.")
    result = pseudonymise(text, detector, random.Random(7))
    out = result.text
    for original in ("홍길동", "010-1234-5678", "900101-1234567", "1234-5678-9012-3456", "gildong@", "테헤란로 152"):
        assert original not in out
    assert re.search(r"010-[1-9]\d{3}-\d{4}", out)
    rrn = re.search(r"(\d{6})-(\d{7})", out)
    assert rrn and rrn.group(2)[0] == "1"
    digits = rrn.group(1) + rrn.group(2)
    weights = (2, 3, 4, 5, 6, 7, 8, 9, 2, 3, 4, 5)
    assert (11 - sum(int(d) * w for d, w in zip(digits, weights, strict=False)) % 11) % 10 == int(digits[-1])
    assert 1 <= int(digits[2:4]) <= 12
    card = re.search(r"\d{4}-\d{4}-\d{4}-\d{4}", out)
    assert card and _luhn(card.group().replace("-", ""))
    assert re.search(r"[a-z0-9]+@naver\.com", out)
    assert re.search(r"서울특별시 강남구 [가-힣]+(로|길) \d{3}", out)
    name = out.split(" ")[0]
    assert re.fullmatch(r"[가-힣]{3}", name)
    assert dict(result.counts) == {"name": 1, "phone": 1, "rrn": 1, "card": 1, "email": 1, "address": 1}
    assert detector.detect(out)  # the pseudonymised text still looks like PII of the same kinds


def test_same_original_same_pseudonym_within_a_document(detector: PiiDetector) -> None:
    text = "김민수 교수는 010-2222-3333을 썼다. 다시 말해 김민수 교수의 번호는 010-2222-3333이다."
    out = pseudonymise(text, detector, random.Random(1)).text
    phones = re.findall(r"010-\d{4}-\d{4}", out)
    assert len(phones) == 2 and phones[0] == phones[1]
    names = re.findall(r"([가-힣]{3}) 교수", out)
    assert len(names) == 2 and names[0] == names[1] != "김민수"


def test_files_and_report_never_hold_originals(tmp_path: Path, detector: PiiDetector) -> None:
    originals = ["010-9876-5432", "minsu.kim@naver.com", "박지훈", "850101-1234567"]
    text_file = tmp_path / "docs.txt"
    text_file.write_text("박지훈 씨의 번호는 010-9876-5432입니다.\n메일은 minsu.kim@naver.com\n평범한 문장.\n",
                         encoding="utf-8")
    jsonl_file = tmp_path / "docs.jsonl"
    jsonl_file.write_text(json.dumps({"id": 1, "text": "주민번호 850101-1234567"}, ensure_ascii=False) + "\n",
                          encoding="utf-8")
    out = tmp_path / "out"
    report = pseudonymise_files([str(text_file), str(jsonl_file)], str(out), detector, seed=5)
    assert report["counts"] == {"rrn": 1, "phone": 1, "email": 1, "card": 0, "account": 0, "url": 0,
                                "address": 0, "name": 1}
    assert report["documents"] == 4 and report["documents_changed"] == 3
    for path in out.iterdir():
        content = path.read_text(encoding="utf-8")
        assert not any(o in content for o in originals), path
    lines = (out / "docs.txt").read_text(encoding="utf-8").splitlines()
    assert lines[2] == "평범한 문장." and len(lines) == 3
    assert json.loads((out / "docs.jsonl").read_text(encoding="utf-8"))["id"] == 1
    again = tmp_path / "again"
    pseudonymise_files([str(text_file), str(jsonl_file)], str(again), detector, seed=5)
    assert (again / "docs.txt").read_text(encoding="utf-8") == (out / "docs.txt").read_text(encoding="utf-8")


def test_person_spans_from_character_tags() -> None:
    from klue.pretraining.ner_names import person_spans

    text = "홍길동 씨와 김철수"
    tags = ["B-PS", "I-PS", "I-PS", "O", "O", "O", "O", "B-PS", "I-PS", "I-PS"]
    assert person_spans(text, tags) == [(0, 3), (7, 10)]
    assert person_spans("가 나", ["I-PS", "O", "B-PS"]) == [(2, 3)]  # a dangling I-PS is no entity


@pytest.mark.realdata
def test_ner_model_name_finder_runs_end_to_end(tmp_path: Path, klue_data_dir: Path) -> None:
    """A (barely trained) NER model plugs in as the name finder; the pipeline and the report work."""
    import dataclasses

    import torch

    from klue import protocols, registry
    from klue.io.locate import roots_from
    from klue.models.tiny import make_tiny_model_dir
    from klue.pretraining.ner_names import ner_name_finder
    from klue.training.run import run

    torch.set_num_threads(1)
    task = registry.get("ner")
    data = protocols.resolve(task, protocols.DEV_80_20, roots_from(str(klue_data_dir), None))
    data = dataclasses.replace(data, train=data.train[:32], eval=data.eval[:8])
    model = make_tiny_model_dir(tmp_path / "tiny", "bert", [r.text for r in data.train], vocab_size=400)
    run(RunRequest(task, str(model), data, 1, tmp_path / "ner"), {"max_steps": 2, "batch_size": 8, "max_len": 64,
                                                      "evals_per_epoch": 0, "progress": False})
    finder = ner_name_finder(tmp_path / "ner" / "best", cpu=True)
    detector = PiiDetector(name_finder=finder)
    source = tmp_path / "in.txt"
    source.write_text("홍길동 씨의 번호는 010-1234-5678입니다.\n", encoding="utf-8")
    report = pseudonymise_files([str(source)], str(tmp_path / "out"), detector, seed=1)
    assert report["name_detection"] == "ner model" and report["counts"]["phone"] == 1
    assert all(0 <= s < e <= len("홍길동 씨의") + 20 for s, e in finder("홍길동 씨의 번호는 010-1234-5678입니다."))
