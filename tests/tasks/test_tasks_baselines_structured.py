"""NER, DP, MRC and WoS baselines on small real slices."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from klue import registry
from klue.baselines import run
from klue.scoring import RunRequest


@pytest.mark.slow
def test_ner_crf_finds_entities(protocol_slice, tmp_path: Path) -> None:
    task = registry.get("ner")
    data = protocol_slice("ner", 400, 200)
    results = run(RunRequest(task, "classic", data, 1, tmp_path))
    assert results.scores["entity_macro_f1"] > 30.0
    for line, record in zip((tmp_path / "predictions.jsonl").read_text(encoding="utf-8").splitlines(), data.eval):
        assert len(json.loads(line)["tags"]) == len(record.chars)


@pytest.mark.slow
def test_dp_heads_always_form_one_tree(protocol_slice, tmp_path: Path) -> None:
    task = registry.get("dp")
    data = protocol_slice("dp", 150, 50)  # UAS about 78 (300/100: 81), half the CPU
    results = run(RunRequest(task, "classic", data, 1, tmp_path))
    assert results.scores["uas"] > 50.0
    for line in (tmp_path / "predictions.jsonl").read_text(encoding="utf-8").splitlines():
        heads = np.array(json.loads(line)["heads"])
        assert (heads == 0).sum() == 1
        for start in range(1, len(heads) + 1):  # following heads reaches the root without a cycle
            node, steps = start, 0
            while node != 0 and steps <= len(heads):
                node, steps = heads[node - 1], steps + 1
            assert node == 0


@pytest.mark.slow
def test_mrc_answers_are_context_spans(protocol_slice, tmp_path: Path) -> None:
    task = registry.get("mrc")
    data = protocol_slice("mrc", 120, 40)  # ROUGE-W about 38 (400/100: 42) at a third of the CPU
    results = run(RunRequest(task, "classic", data, 1, tmp_path))
    assert results.scores["rouge_w"] > 10.0
    answers = [json.loads(line)["answer"] for line in (tmp_path / "predictions.jsonl").read_text().splitlines()]
    assert all(answer in record.context for answer, record in zip(answers, data.eval))


def test_wos_tracker_uses_the_ontology_and_carries_state(protocol_slice, tmp_path: Path) -> None:
    from klue.tasks.wos.records import DEFAULT_SLOTS, split_state_item

    data = protocol_slice("wos", 76, 76)
    results = run(RunRequest(registry.get("wos"), "classic", data, 1, tmp_path))
    assert results.scores["slot_micro_f1"] > 60.0 and results.scores["joint_goal_acc"] > 10.0
    states = {json.loads(line)["guid"]: json.loads(line)["state"]
              for line in (tmp_path / "predictions.jsonl").read_text(encoding="utf-8").splitlines()}
    for record in data.eval:
        state = states[record.guid]
        assert all(split_state_item(item)[0] + "-" + split_state_item(item)[1] in DEFAULT_SLOTS for item in state)
        if record.turn_index > 0:  # carry-over: a slot once set stays set (values may be revised)
            previous = states[f"{record.dialogue_guid}-{record.turn_index - 1}"]
            slots = {item.rsplit("-", 1)[0] for item in state}
            assert {item.rsplit("-", 1)[0] for item in previous} <= slots


def test_wos_rules_on_a_synthetic_dialogue(tmp_path: Path, klue_data_dir: Path) -> None:
    from klue.tasks.wos.baseline import OntologyRuleWos
    from klue.tasks.wos.records import WosDialogue, WosUtterance, expand_turns

    utterances = (
        WosUtterance("user", "서울 북쪽에 있는 저렴한 호텔을 찾아주세요. 주차가 되면 좋겠어요.", ()),
        WosUtterance("sys", "마라톤 서울 호텔을 추천합니다.", None),
        WosUtterance("user", "좋네요. 금요일부터 2박 3명으로 예약해주세요.", ()),
        WosUtterance("sys", "예약되었습니다.", None),
        WosUtterance("user", "택시도 불러주세요. 오후 3시 반에 호텔에서 출발할게요. 종류는 상관없어요.", ()),
    )
    turns = expand_turns([WosDialogue("synthetic-0", ("숙소", "택시"), utterances)])
    baseline = OntologyRuleWos(1)
    baseline.use_ontology_file(klue_data_dir / "wos-v1.1" / "ontology.json")
    states = [set(p.state) for p in baseline.predict(turns)]
    assert {"숙소-지역-서울 북쪽", "숙소-가격대-저렴", "숙소-종류-호텔", "숙소-주차 가능-yes"} <= states[0]
    assert {"숙소-이름-마라톤 서울 호텔", "숙소-예약 요일-금요일", "숙소-예약 기간-2",
            "숙소-예약 명수-3"} <= states[1]
    assert {"택시-출발 시간-15:30", "택시-종류-dontcare"} <= states[2] and states[1] <= states[2]


def test_ner_features_are_the_same_per_position_and_in_batches() -> None:
    from klue.tasks.ner.baseline import MorphemeTagger, sentence_features

    chars = list("삼성 전자")
    tags = ["B-NNP", "I-NNP", "O", "B-NNG", "I-NNG"]
    forms = ["삼성/NNP", "삼성/NNP", "X", "전자/NNG", "전자/NNG"]
    rows = sentence_features(chars, tags, forms)
    assert len(rows) == 4  # the space is not a position
    assert rows[0][:7] == ["bias", "c=삼", "k=H", "c-1=<s>", "c+1=성", "c-2=<s>", "c+2=전"]
    assert {"p=B", "w=삼성", "wf2=삼성", "m=B-NNP", "m+=B-NNPI-NNP", "mf-=<s>", "mf+=전자/NNG"} <= set(rows[0])
    assert "m-=I-NNPB-NNG" in rows[2] and "t0=성전자" in rows[2] and "kw=HHH" in rows[2]
    assert {"p=E", "c+1=</s>", "mf=전자/NNG", "mf+=</s>"} <= set(rows[3]) and not any(
        f.startswith("m+=") for f in rows[3])
    tagger = MorphemeTagger()
    texts = ["삼성전자가 서울에서 신제품을 발표했다.", "", "KLUE 벤치마크 2021"]
    assert tagger.analyse_many(texts) == [tagger.analyse(text) for text in texts]


@pytest.mark.slow
def test_ner_pa_training_depends_on_the_seed_only(protocol_slice) -> None:
    """crfsuite shuffles with C `rand()`: whatever used it before must not change the model. Without Kiwi's
    features (loading Kiwi costs about 3 CPU s), which have nothing to do with `rand()`."""
    import ctypes

    from klue.tasks.ner.baseline import NerBaseline

    data = protocol_slice("ner", 150, 40)

    def tags(seed: int) -> list[tuple[str, ...]]:
        baseline = NerBaseline(seed, morpheme_features=False)
        baseline.fit(list(data.train), None)
        return [p.tags for p in baseline.predict(list(data.eval))]

    first = tags(3)
    ctypes.CDLL(None).rand()  # as liblinear or anything else in the worker may
    assert tags(3) == first


@pytest.mark.slow  # two CRF fits, about 3 CPU s
def test_ner_training_is_the_same_while_another_thread_calls_rand(protocol_slice) -> None:
    """crfsuite shuffles with the process-wide C `rand()`: a thread calling it during training (as a Ray
    worker's may, under load) changed the model; crfsuite now trains alone in a child process."""
    import ctypes
    import threading

    from klue.tasks.ner.baseline import NerBaseline

    data = protocol_slice("ner", 300, 10)
    libc = ctypes.CDLL(None)
    stop = threading.Event()
    calls = [0]

    def meddle() -> None:  # bursts of calls a millisecond apart: not one core spinning for the whole fit
        while not stop.wait(0.001):
            for _ in range(100):
                libc.rand()  # ctypes lets go of the GIL: this runs while crfsuite trains
            calls[0] += 100

    def model(meddling: bool) -> bytes | None:
        baseline = NerBaseline(5, morpheme_features=False)
        thread = threading.Thread(target=meddle)
        if meddling:
            stop.clear()
            thread.start()
        try:
            baseline.fit(list(data.train), None)
        finally:
            stop.set()
            if meddling:
                thread.join()
        return baseline._model

    quiet = model(False)
    assert model(True) == quiet and calls[0] > 1000  # rand() was called, many times, during the fit


@pytest.mark.slow
def test_mrc_chunks_change_nothing(protocol_slice, monkeypatch) -> None:
    import hashlib

    from sklearn import linear_model

    from klue.tasks.mrc import baseline as mrc

    data = protocol_slice("mrc", 80, 20)
    fitted: dict[bytes, linear_model.LogisticRegression] = {}

    class FitOnce(linear_model.LogisticRegression):
        """lbfgs over 2**20 hashed weights was half of this test's CPU: a second fit on the very same rows and
        labels (byte for byte; a fit is a function of them) takes the first one's model instead."""

        def fit(self, X, y, sample_weight=None):
            key = hashlib.sha256(b"".join(np.ascontiguousarray(a).tobytes() for a in
                                          (X.indptr, X.indices, X.data, np.asarray(y)))).digest()
            if key in fitted:
                self.__dict__.update(fitted[key].__dict__)
                return self
            fitted[key] = super().fit(X, y, sample_weight)
            return self

    monkeypatch.setattr(linear_model, "LogisticRegression", FitOnce)  # mrc.fit imports it from here

    def answers() -> list[str]:
        model = mrc.SpanRankerMrc(1)
        model.fit(list(data.train), None)
        return [p.answer for p in model.predict(list(data.eval))]

    whole = answers()
    monkeypatch.setattr(mrc, "_CHUNK_QUESTIONS", 7)
    assert answers() == whole
    assert len(fitted) == 1  # the training matrix built 7 questions at a time is the whole one, byte for byte
