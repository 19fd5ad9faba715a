"""klue.scoring: prediction shapes, alignment by guid, validation messages, gold -> maximum."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from klue import registry
from klue.errors import DataError
from klue.predictions import read_label_list, write_predictions
from klue.results import PREDICTIONS_FILE, RESULTS_FILE, read_results
from klue.scoring import ProducerReport, judge, result_to_json, score_files, score_predictions

CASES = "scoring-cases"


def _write_jsonl(path: Path, objects: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objects), encoding="utf-8")
    return path


def _gold_jsonl(task_name: str, gold: Path, out: Path, gold_format: str | None = None) -> tuple[Path, list[Any]]:
    from klue.tasks.reading import read

    task = registry.get(task_name)
    records = read(task, gold, gold_format, purpose="score").records
    objects = [task.prediction_to_json(task.gold_prediction(r)) for r in records]
    return _write_jsonl(out, objects), objects


def _real_golds(klue: Path, shared: Path) -> list[tuple[str, Path, str | None]]:
    return [
        ("nli", klue / "klue-nli-v1.1/klue-nli-v1.1_dev.json", None),
        ("sts", klue / "klue-sts-v1.1/klue-sts-v1.1_dev.json", None),
        ("ner", klue / "klue-ner-v1.1/klue-ner-v1.1_dev.tsv", None),
        ("dp", klue / "klue-dp-v1.1/klue-dp-v1.1_dev.tsv", None),
        ("ynat", shared / CASES / "ynat/gold.json", None),
        ("re", shared / CASES / "re/gold.json", None),
        ("mrc", shared / CASES / "mrc/gold.json", None),
        ("mrc", shared / CASES / "mrc/gold_edge.json", "unchecked-offsets"),
        ("wos", shared / CASES / "wos/gold.json", None),
        ("wos", shared / CASES / "wos/gold_edge.json", None),
        # the other real files of ../shared/data
        ("ner", shared / "klue-partial/klue-ner-v1.1/klue-ner-v1.1_train.first5000.tsv", None),
        ("ynat", shared / "klue-partial/ynat-v1.1/ynat-v1_dev_sample_10.json", None),
        ("wos", shared / "klue-partial/wos-v1.1/wos-v1.1_dev_sample_10.json", None),
        ("re", shared / "klue-derived/re-train-sample/klue-re-v1.1_train.sample3247.json", None),
        ("ynat", shared / "klue-derived/ynat-resplit/ynat-resplit_test.json", "ynat-resplit"),
        ("nli", shared / "korean/kornli/xnli.dev.ko.tsv", "kornli"),
        ("sts", shared / "korean/korsts/sts-dev.tsv", "korsts"),
        ("mrc", shared / "korean/korquad-v1/KorQuAD_v1.0_dev.json", "korquad"),
        *(("dp", path, "conllu") for path in sorted((shared / "korean/ud-korean").glob("*.conllu"))),
    ]


@pytest.mark.slow
def test_gold_as_predictions_scores_the_maximum(klue_data_dir: Path, shared_data_dir: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from klue import scoring
    from klue.tasks.reading import read

    # Each gold file is read once, here, as `klue score` reads it; score_files is handed that reading when it
    # asks for the same file, format and purpose (anything else fails the test). Reading the file a second time
    # inside score_files was half of the test's CPU and proves nothing the first read does not.
    readings: dict[tuple[str, Path, str | None], Any] = {}

    def read_again(task: Any, source: Path, format: str | None = None, *, purpose: str,
                   option: str | None = None) -> Any:
        assert (purpose, option) == ("score", "--gold-format"), (purpose, option)
        return readings.pop((task.name, source, format))

    monkeypatch.setattr(scoring, "read", read_again)
    for name, gold, gold_format in _real_golds(klue_data_dir, shared_data_dir):
        task = registry.get(name)
        reading = read(task, gold, gold_format, purpose="score")
        records = reading.records
        predictions = _write_jsonl(tmp_path / f"{name}.jsonl",
                                   [task.prediction_to_json(task.gold_prediction(r)) for r in records])
        readings[(name, gold, gold_format)] = reading
        for mode in ("official", "corrected"):
            # The official mode through the whole of `klue score` (score_files, given the reading above); the
            # corrected one on the records read above, which is all score_files adds to score_predictions.
            result = (score_files(task, gold, predictions, mode, gold_format=gold_format) if mode == "official"
                      else score_predictions(task, records, predictions, mode))
            scores = result.report.scores
            if name == "re":  # AUPRC of a one-hot prediction is 100 only for classes present in gold
                assert scores["micro_f1"] == 100.0
                if mode == "corrected":
                    assert scores["auprc"] == pytest.approx(100.0)
                continue
            assert all(v == pytest.approx(100.0) for v in scores.values()), (name, mode, scores)
            assert result.report.mode == mode and result.prediction_format == "jsonl"
            assert mode == "corrected" or (result.gold_path, result.gold_format) == (str(gold), reading.format)
        assert not readings  # score_files asked for the file


def _case_files(shared: Path, klue: Path) -> list[tuple[str, Path, Path, dict[str, Any]]]:
    cases = shared / CASES
    found = []
    official = {"nli": "klue-nli-v1.1/klue-nli-v1.1_dev.json", "sts": "klue-sts-v1.1/klue-sts-v1.1_dev.json",
                "ner": "klue-ner-v1.1/klue-ner-v1.1_dev.tsv", "dp": "klue-dp-v1.1/klue-dp-v1.1_dev.tsv"}
    for name, rel in official.items():
        found += [(name, klue / rel, p, {}) for p in sorted((cases / name).glob("pred_*.json.gz"))]
    for name in ("ynat", "re", "mrc", "wos"):
        for p in sorted((cases / name).glob("pred_*.json.gz")):
            edge = "edge" in p.name
            gold = cases / name / ("gold_edge.json" if edge else "gold.json")
            extra: dict[str, Any] = {}
            if name == "re":
                extra["label_list_path"] = cases / "re/relation_list.json"
            if name == "mrc" and edge:
                extra["gold_format"] = "unchecked-offsets"  # its synthetic contexts do not hold the answers
            found.append((name, gold, p, extra))
    return found


@pytest.mark.slow
def test_every_scoring_case_scores(klue_data_dir: Path, shared_data_dir: Path) -> None:
    from klue.scoring import score_predictions
    from klue.tasks.reading import read

    cases = _case_files(shared_data_dir, klue_data_dir)
    assert len(cases) == 29
    golds: dict[tuple[str, Path], list[Any]] = {}
    for name, gold, predictions, extra in cases:
        task = registry.get(name)
        key = (name, gold)
        if key not in golds:
            golds[key] = read(task, gold, extra.pop("gold_format", None), purpose="score").records
        extra.pop("gold_format", None)
        out = result_to_json(score_predictions(task, golds[key], predictions, "official", **extra))
        assert out["task"] == name and out["mode"] == "official"
        for metric in task.metrics:
            assert isinstance(out[metric], float) and -100.0 <= out[metric] <= 100.0, (name, metric)


def test_list_map_and_jsonl_shapes_agree(shared_data_dir: Path, tmp_path: Path) -> None:
    task = registry.get("ynat")
    gold = shared_data_dir / CASES / "ynat/gold.json"
    records = json.loads(gold.read_text(encoding="utf-8"))
    with gzip.open(shared_data_dir / CASES / "ynat/pred_4.json.gz", "rt", encoding="utf-8") as f:
        indices = json.load(f)
    labels = task.labels
    jsonl = _write_jsonl(tmp_path / "p.jsonl", [{"guid": r["guid"], "label": labels[i]} for r, i in zip(records, indices)])
    as_map = tmp_path / "p.json"
    as_map.write_text(json.dumps({r["guid"]: i for r, i in zip(records, indices)}), encoding="utf-8")
    scores = [score_files(task, gold, p).report.scores for p in (jsonl, as_map, shared_data_dir / CASES / "ynat/pred_4.json.gz")]
    assert scores[0] == scores[1] == scores[2]


def test_relation_list_order_reorders_probabilities(shared_data_dir: Path, tmp_path: Path) -> None:
    task = registry.get("re")
    gold = shared_data_dir / CASES / "re/gold.json"
    with gzip.open(shared_data_dir / CASES / "re/pred_1.json.gz", "rt", encoding="utf-8") as f:
        items = json.load(f)
    baseline = score_files(task, gold, shared_data_dir / CASES / "re/pred_1.json.gz").report.scores
    reversed_order = list(reversed(task.labels))
    (tmp_path / "rel.json").write_text(json.dumps({"relations": reversed_order}), encoding="utf-8")
    n = len(task.labels)
    flipped = [{"label": n - 1 - x["label"], "probs": list(reversed(x["probs"]))} for x in items]
    (tmp_path / "p.json").write_text(json.dumps(flipped), encoding="utf-8")
    assert score_files(task, gold, tmp_path / "p.json", label_list_path=tmp_path / "rel.json").report.scores == baseline
    (tmp_path / "bad.json").write_text(json.dumps({"relations": reversed_order[:-1]}), encoding="utf-8")
    with pytest.raises(DataError, match="official labels"):
        read_label_list(tmp_path / "bad.json", task.labels)


@pytest.fixture()
def nli_gold(klue_data_dir: Path) -> tuple[Path, list[dict[str, Any]]]:
    path = klue_data_dir / "klue-nli-v1.1/klue-nli-v1.1_dev.json"
    records = json.loads(path.read_text(encoding="utf-8"))
    return path, [{"guid": r["guid"], "label": r["gold_label"]} for r in records]


def _error(task: str, gold: Path, predictions: Path, **extra: Any) -> str:
    with pytest.raises(DataError) as info:
        score_files(registry.get(task), gold, predictions, **extra)
    return info.value.summary()


def test_missing_duplicate_and_unknown_guids(nli_gold: tuple[Path, list[dict[str, Any]]], tmp_path: Path) -> None:
    gold, objects = nli_gold
    missing = _error("nli", gold, _write_jsonl(tmp_path / "a.jsonl", objects[7:]))
    assert "7 gold examples have no prediction" in missing and repr(objects[0]["guid"]) in missing
    assert "(first 5 of 7)" in missing
    duplicate = _error("nli", gold, _write_jsonl(tmp_path / "b.jsonl", objects + objects[:1]))
    assert f"{tmp_path / 'b.jsonl'}:line 3001" in duplicate and "duplicate guid" in duplicate
    unknown = _error("nli", gold, _write_jsonl(tmp_path / "c.jsonl", objects + [{"guid": "nope", "label": "neutral"}]))
    assert "not in the gold file: 'nope'" in unknown


def test_bad_lines_and_labels_name_file_and_line(nli_gold: tuple[Path, list[dict[str, Any]]], tmp_path: Path) -> None:
    gold, objects = nli_gold
    path = _write_jsonl(tmp_path / "p.jsonl", objects)
    lines = path.read_text(encoding="utf-8").split("\n")
    lines[4] = lines[4][:-3]
    lines[9] = json.dumps({"guid": objects[9]["guid"], "label": "maybe"})
    path.write_text("\n".join(lines), encoding="utf-8")
    message = _error("nli", gold, path)
    assert f"{path}:line 5: error: invalid JSON" in message
    assert f"{path}:line 10" in message and "maybe" in message


def test_ner_tags_of_the_wrong_length_name_the_guids(klue_data_dir: Path, tmp_path: Path) -> None:
    from klue.scoring import score_predictions
    from klue.tasks.reading import read

    task = registry.get("ner")
    records = read(task, klue_data_dir / "klue-ner-v1.1/klue-ner-v1.1_dev.tsv", purpose="score").records
    objects = [task.prediction_to_json(task.gold_prediction(r)) for r in records]
    for i in (3, 10, 11, 12, 13, 14, 15):
        objects[i]["tags"] = objects[i]["tags"][:-1]
    with pytest.raises(DataError) as info:
        score_predictions(task, records, _write_jsonl(tmp_path / "ner.jsonl", objects))
    message = info.value.summary()
    assert objects[3]["guid"] in message and "7 predictions in all are unusable" in message
    # tags over the non-space characters only are accepted too
    short = [{"guid": r.guid, "tags": list(r.nonspace_tags)} for r in records]
    result = score_predictions(task, records, _write_jsonl(tmp_path / "short.jsonl", short))
    assert result.report.scores["entity_macro_f1"] == 100.0


def test_dp_heads_of_the_wrong_length_and_unknown_deprels(klue_data_dir: Path, tmp_path: Path) -> None:
    gold = klue_data_dir / "klue-dp-v1.1/klue-dp-v1.1_dev.tsv"
    path, objects = _gold_jsonl("dp", gold, tmp_path / "dp.jsonl")
    objects[0]["heads"] = objects[0]["heads"][:-1]
    objects[0]["deprels"] = objects[0]["deprels"][:-1]
    objects[5]["deprels"][0] = "NOT_A_LABEL"
    _write_jsonl(path, objects)
    message = _error("dp", gold, path)
    assert objects[0]["guid"] in message and objects[5]["guid"] in message and "NOT_A_LABEL" in message


def test_re_probabilities_must_be_30_finite_numbers(shared_data_dir: Path, tmp_path: Path) -> None:
    gold = shared_data_dir / CASES / "re/gold.json"
    path, objects = _gold_jsonl("re", gold, tmp_path / "re.jsonl")
    objects[1]["probs"] = objects[1]["probs"][:29]
    objects[2]["probs"][3] = float("nan")
    _write_jsonl(path, objects)
    message = _error("re", gold, path)
    assert "line 2" in message and "30 numbers" in message
    assert "line 3" in message and "finite" in message


def test_nan_sts_score_is_an_error(klue_data_dir: Path, tmp_path: Path) -> None:
    gold = klue_data_dir / "klue-sts-v1.1/klue-sts-v1.1_dev.json"
    path, objects = _gold_jsonl("sts", gold, tmp_path / "sts.jsonl")
    objects[2]["score"] = float("nan")
    _write_jsonl(path, objects)  # json.dumps writes NaN, which json.loads reads back
    message = _error("sts", gold, path)
    assert "line 3" in message and objects[2]["guid"] in message


def test_list_shape_must_match_the_gold_length(shared_data_dir: Path, tmp_path: Path) -> None:
    (tmp_path / "p.json").write_text(json.dumps(["정치"] * 3, ensure_ascii=False), encoding="utf-8")
    message = _error("ynat", shared_data_dir / CASES / "ynat/gold.json", tmp_path / "p.json")
    assert "3 items for 240 examples" in message


def test_the_judge_scores_the_written_file(protocol_slice: Any, tmp_path: Path) -> None:
    """A run's scores come from its prediction file, through the `klue score` path, not from memory."""
    import time

    task = registry.get("nli")
    data = protocol_slice("nli", 30, 60, "local:dev-80-20")
    predictions = [task.gold_prediction(r) for r in data.eval]
    path = tmp_path / PREDICTIONS_FILE
    write_predictions(path, task, data.eval, predictions, "the test")
    lines = path.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["label"] = next(label for label in task.labels if label != first["label"])
    path.write_text("\n".join([json.dumps(first, ensure_ascii=False), *lines[1:]]) + "\n", encoding="utf-8")

    results = judge(task, data, tmp_path, "official", ProducerReport("gold", "test", 3, time.perf_counter()))
    assert results.scores["accuracy"] == pytest.approx(100 * 59 / 60)
    assert results.scores == score_predictions(task, data.eval, path).report.scores
    assert results.metric_versions == {"accuracy": "1", "macro_f1": "1"}
    assert results.data_sources == list(data.sources) and results.n_train == 30 and results.n_eval == 60
    assert results.library_versions and results.created_at and results.predictions_file == PREDICTIONS_FILE
    assert read_results(tmp_path / RESULTS_FILE) == results


DP_HEADER = "## a\n## b\n## c\n## d\n## INDEX\tWORD_FORM\tLEMMA\tPOS\tHEAD\tDEPREL\n"
DP_GOLD = (DP_HEADER + "## s1\t행사는 끝났다.\n1\t행사는\t행사 는\tNNG+JX\t2\tNP_SBJ\n2\t끝났다.\t끝나 았 다 .\t"
           "VV+EP+EF+SF\t0\tVP\n\n## s2\t그래\n1\t그래\t그래\tIC\t0\tIP\n\n")


@pytest.mark.parametrize("heads, words", [([2, 99], "head 99 is outside 0..2"), ([-1, 0], "head -1 is outside 0..2")])
def test_dp_heads_outside_the_sentence_are_errors_naming_the_guid(tmp_path: Path, heads: list[int],
                                                                   words: str) -> None:
    gold = tmp_path / "gold" / "klue-dp-v1.1_dev.tsv"
    gold.parent.mkdir()
    gold.write_text(DP_GOLD, encoding="utf-8")
    predictions = _write_jsonl(tmp_path / "p.jsonl", [{"guid": "s1", "heads": heads, "deprels": ["NP_SBJ", "VP"]},
                                                      {"guid": "s2", "heads": [0], "deprels": ["IP"]}])
    with pytest.raises(DataError) as info:
        score_files(registry.get("dp"), gold, predictions)
    assert [(p.path, p.location) for p in info.value.problems] == [(str(predictions), "s1")]
    assert words in info.value.problems[0].message


def test_re_probabilities_outside_0_1_are_errors(shared_data_dir: Path, tmp_path: Path) -> None:
    gold = shared_data_dir / CASES / "re/gold.json"
    path, objects = _gold_jsonl("re", gold, tmp_path / "re.jsonl")
    objects[1]["probs"][0] = -0.25
    objects[4]["probs"][2] = 1.5
    _write_jsonl(path, objects)
    message = _error("re", gold, path)
    assert f"line 2: error: {objects[1]['guid']}: `probs` are probabilities between 0 and 1, found -0.25" in message
    assert f"line 5: error: {objects[4]['guid']}" in message and "found 1.5 at index 2" in message


def test_re_probabilities_not_summing_to_one_are_one_warning(shared_data_dir: Path, tmp_path: Path) -> None:
    gold = shared_data_dir / CASES / "re/gold.json"
    path, objects = _gold_jsonl("re", gold, tmp_path / "re.jsonl")
    for obj in objects[:7]:
        obj["probs"] = [p * 0.9 for p in obj["probs"]]  # sums to 0.9
    spare = 1 if objects[7]["probs"][0] == 1.0 else 0
    objects[7]["probs"][spare] = 5e-4  # sums to 1.0005: within the tolerance
    _write_jsonl(path, objects)
    result = score_files(registry.get("re"), gold, path)
    assert result.report.scores["micro_f1"] == 100.0  # scored as given
    (warning,) = [w for w in result.warnings if "sum" in w.message]
    assert warning.severity == "warning" and warning.path == str(path)
    assert warning.message.startswith("7 predictions have `probs` that do not sum to 1 (tolerance 0.001)")
    assert repr(objects[0]["guid"]) in warning.message and "(first 5 of 7)" in warning.message
    assert repr(objects[7]["guid"]) not in warning.message


def test_mrc_gold_whose_offsets_miss_the_answer_scores_with_warnings(shared_data_dir: Path) -> None:
    """The official metric reads only the answer texts: scoring accepts such gold (the reader's strict
    check stays for `klue data validate`, tests/test_validate.py)."""
    cases = shared_data_dir / CASES / "mrc"
    result = score_files(registry.get("mrc"), cases / "gold_edge.json", cases / "pred_edge.json.gz")
    lenient = score_files(registry.get("mrc"), cases / "gold_edge.json", cases / "pred_edge.json.gz",
                          gold_format="unchecked-offsets")
    assert result.report.scores == lenient.report.scores and result.gold_format == "official"
    offsets = [w for w in result.warnings if "not the answer text" in w.message]
    assert len(offsets) == 17 and offsets[0].message.startswith("edge-mrc_000: context[")
    assert "'《서울의 봄》'" in offsets[0].message


KORSTS = ("genre\tfilename\tyear\tid\tscore\tsentence1\tsentence2\n"
          "main-captions\tMSRvid\t2012test\t0000\t5.000\t한 남자가 춤을 춘다.\t남자가 춤을 춘다.\n"
          "main-captions\tMSRvid\t2012test\t0002\t1.250\t아이가 말을 탄다.\t개가 달린다.\n")
CONLLU = ("# sent_id = c1\n# text = 김철수 씨\n"
          "1\t김철수\t김철수\tPROPN\tNNP\t_\t0\troot\t_\t_\n2\t씨\t씨\tNOUN\tNNB\t_\t1\tflat:name\t_\t_\n\n"
          "# sent_id = c2\n1\t그래\t그래\tINTJ\tIC\t_\t0\troot\t_\t_\n\n")


def _gold_file(tmp_path: Path, relative: str, text: str) -> Path:
    path = tmp_path / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("task, relative, text, expected", [
    ("sts", "korsts/dev.tsv", KORSTS, "korsts"),
    ("dp", "ud/ko_x-ud-dev.conllu", CONLLU, "conllu"),
    ("dp", "ud/klue-dp-v1.1_dev.tsv", DP_GOLD, "official"),
])
def test_the_gold_format_is_told_as_validate_tells_it(tmp_path: Path, task: str, relative: str, text: str,
                                                      expected: str) -> None:
    from klue import validate
    from klue.tasks.reading import infer_format

    gold = _gold_file(tmp_path, relative, text)
    assert infer_format(registry.get(task), gold) == expected == validate.detect(gold, task).reader
    predictions, _ = _gold_jsonl(task, gold, tmp_path / "p.jsonl")
    result = score_files(registry.get(task), gold, predictions)
    assert result.gold_format == expected and result_to_json(result)["gold_format"] == expected
    assert all(v == pytest.approx(100.0) for v in result.report.scores.values())


@pytest.mark.parametrize("task, text, other, first", [
    ("sts", KORSTS, "korsts", "invalid JSON"),
    ("dp", CONLLU, "conllu", "no `## <guid>` header"),
])
def test_a_gold_file_in_another_format_gets_the_gold_format_to_pass(tmp_path: Path, task: str, text: str,
                                                                    other: str, first: str) -> None:
    from klue.tasks.reading import infer_format

    gold = _gold_file(tmp_path, "plain/gold.txt", text)  # a name that tells nothing: its content tells
    assert infer_format(registry.get(task), gold) == other
    predictions = _write_jsonl(tmp_path / "p.jsonl", [{"guid": "x"}])
    with pytest.raises(DataError) as info:  # named wrongly on purpose: the error names the one that reads it
        score_files(registry.get(task), gold, predictions, gold_format="official")
    hint, *rest = info.value.problems
    assert hint.message.endswith(f"it reads cleanly as {other!r} (2 examples): pass --gold-format {other}")
    assert rest and first in rest[0].message and len(rest) <= 6


def test_when_no_other_format_reads_the_file_the_error_names_the_one_tried(tmp_path: Path) -> None:
    gold = _gold_file(tmp_path, "plain/gold.json", "{\"broken\": ")
    with pytest.raises(DataError) as info:
        score_files(registry.get("sts"), gold, _write_jsonl(tmp_path / "p.jsonl", [{"guid": "x"}]))
    told, *errors = info.value.problems
    assert told.message.startswith("read as the 'official' format, told from the file; name another with "
                                   "--gold-format") and "pass --gold-format" not in info.value.summary()
    assert errors and "truncated JSON" in errors[0].message
