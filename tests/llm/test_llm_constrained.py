"""Constrained decoding in process (llguidance): a tiny random-weight Llama's constrained answers parse
where its free ones do not, through the backend and through `klue llm`'s run (results record it); the
grammars each declared constraint becomes; a constraint that does not compile, or a missing library, is
said, never silent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from klue import registry
from klue.errors import ProblemLog
from klue.io.locate import DataRoots, roots_from
from klue.scoring import RunRequest

llguidance = pytest.importorskip("llguidance", reason="constrained decoding in process needs llguidance (klue[llm])")

from klue.llm.backends.base import GenerateRequest
from klue.llm.constrained import lark_grammar

# Real records per task (small files, or the first lines of a dev set), and how many to generate for.
FILES = {
    "ner": ("klue", "klue-ner-v1.1/klue-ner-v1.1_dev.tsv"),
    "dp": ("klue", "klue-dp-v1.1/klue-dp-v1.1_dev.tsv"),
    "sts": ("klue", "klue-sts-v1.1/klue-sts-v1.1_dev.json"),
    "re": ("extra", "klue-derived/re-train-sample/klue-re-v1.1_train.sample3247.json"),
    "wos": ("extra", "klue-partial/wos-v1.1/wos-v1.1_dev_sample_10.json"),
    "mrc": ("extra", "scoring-cases/mrc/gold.json"),  # synthetic, official format, short contexts
}
N = 6


@pytest.fixture(scope="module")
def roots(klue_data_dir: Path, shared_data_dir: Path) -> DataRoots:
    return roots_from(klue_data_dir, shared_data_dir)


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory, klue_data_dir: Path) -> Any:
    from klue.llm.backends.hf import HfBackend
    from klue.models.tiny import make_tiny_llama_dir

    rows = json.loads((klue_data_dir / "klue-nli-v1.1" / "klue-nli-v1.1_dev.json").read_text(encoding="utf-8"))
    model = make_tiny_llama_dir(tmp_path_factory.mktemp("llama"), [r["premise"] for r in rows[:300]])
    return HfBackend(str(model), cpu=True, batch_size=N)


def records(name: str, roots: DataRoots) -> list[Any]:
    where, relative = FILES[name]
    base = roots.klue if where == "klue" else roots.extra
    path = None if base is None else base / relative
    if path is None or not path.is_file():
        pytest.skip(f"{relative} is not here (see ../shared/data/README.md)")
    read = registry.get(name).reader("official")(path, ProblemLog(str(path)), "score")
    if name == "dp":  # short sentences: the budget of 12 tokens a word holds a line of single-byte tokens
        read = [r for r in read if len(r.words) <= 8]
    if name == "wos":  # early turns: small budgets keep the free (budget-long) answers quick
        return [r for r in read if r.turn_index <= 1][:4]
    return read[:N]


def answers(backend: Any, name: str, roots: DataRoots, constrained: bool) -> tuple[list[Any], list[Any]]:
    from klue.llm.run import _generate_request

    prompts = registry.get(name).make_prompts(roots)
    chosen = records(name, roots)
    requests = [_generate_request(prompts, r, [], "completion", constrained, backend.capabilities) for r in chosen]
    results = backend.generate(requests)
    return results, [prompts.parse(r, a.text) for r, a in zip(chosen, results)]


def test_capabilities_name_the_library(backend: Any) -> None:
    caps = backend.capabilities.to_json()
    assert caps["json_schema"] and caps["choices"] and caps["regex"] and caps["spans"]
    assert caps["constrained_by"] == f"llguidance {llguidance.__version__}"


@pytest.mark.realdata
@pytest.mark.parametrize("name", ["ner", "dp", "sts", "re", "mrc"])
@pytest.mark.slow
def test_constrained_answers_always_parse(name: str, backend: Any, roots: DataRoots) -> None:
    free, free_parsed = answers(backend, name, roots, constrained=False)
    held, held_parsed = answers(backend, name, roots, constrained=True)
    assert all(a.constrained for a in held) and not any(a.constrained for a in free)
    assert all(p.ok for p in held_parsed), [(a.text[:80], p.note) for a, p in zip(held, held_parsed) if not p.ok]
    # the same random weights, unconstrained, write what mostly does not parse
    assert sum(p.ok for p in free_parsed) <= N // 3, [a.text[:60] for a in free]


@pytest.mark.realdata
@pytest.mark.slow
def test_wos_states_are_json_within_the_schema(backend: Any, roots: DataRoots) -> None:
    from klue.tasks.wos import ontology

    slots = set(ontology(roots, "test"))
    held, parsed = answers(backend, "wos", roots, constrained=True)
    _, free_parsed = answers(backend, "wos", roots, constrained=False)
    assert sum(p.ok for p in parsed) > sum(p.ok for p in free_parsed)
    for answer, result in zip(held, parsed):
        if answer.finish_reason == "stop":  # finished inside its budget: a state of ontology slots
            state = json.loads(answer.text)
            assert result.ok and set(state) <= slots
        else:  # cut by the budget: still a prefix of such a state
            assert answer.text.lstrip().startswith("{\"") and answer.n_tokens > 0


def test_each_constraint_becomes_a_grammar_that_compiles(backend: Any) -> None:
    from klue.tasks.dp.prompts import answer_regex
    from klue.tasks.sts.prompts import ANSWER_REGEX

    def request(**constraint: Any) -> GenerateRequest:
        return GenerateRequest(prompt="답:", **constraint)

    assert lark_grammar(request()) is None
    tricky = ('a "quoted"\nline', "a/b", "\\")
    for constraint in ({"choices": tricky}, {"regex": ANSWER_REGEX}, {"regex": r"x/y\d"}, {"span_of": tricky[0]},
                       {"json_schema": json.dumps({"type": "object", "properties": {"k": {"type": "string"}}})}):
        grammar = lark_grammar(request(**constraint))
        assert grammar is not None and grammar.startswith('start: " "? answer')
        matcher, error = backend.constrainer.matcher(request(**constraint))
        assert matcher is not None and not error, error
    matcher, _ = backend.constrainer.matcher(request(choices=tricky))
    tokens = backend.tokenizer(' a "quoted"\nline', add_special_tokens=False)["input_ids"]
    assert matcher.consume_tokens(tokens) and matcher.is_accepting()
    # DP's regex takes exactly the gold form: n lines, index, head in 0..n, a known label
    from klue.tasks.dp.records import DpRecord

    record = DpRecord(guid="g", sentence="철수가 밥을 먹었다", words=("철수가", "밥을", "먹었다"),
                      lemmas=("", "", ""), pos=("", "", ""), heads=(3, 3, 0), deprels=("NP_SBJ", "NP_OBJ", "VP"))
    import re

    pattern = re.compile(answer_regex(record))
    assert pattern.fullmatch("1\t3\tNP_SBJ\n2\t3\tNP_OBJ\n3\t0\tVP")
    assert not pattern.fullmatch("1\t4\tNP_SBJ\n2\t3\tNP_OBJ\n3\t0\tVP")  # head outside 0..n
    assert not pattern.fullmatch("1\t3\tNP_SUBJ\n2\t3\tNP_OBJ\n3\t0\tVP")  # no such label


def test_a_constraint_that_does_not_compile_is_counted_and_said(backend: Any) -> None:
    before = backend.usage.extra.get("constraint_errors", 0)
    [result] = backend.generate([GenerateRequest(prompt="답:", max_new_tokens=3, regex="(unclosed")])
    assert not result.constrained and result.n_tokens == 3
    assert backend.usage.extra["constraint_errors"] == before + 1
    assert any("did not compile" in note for note in backend.capabilities.notes)


def test_without_the_library_generation_is_unconstrained_and_says_so(backend: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from klue.llm.backends import hf

    monkeypatch.setattr(hf, "library_version", lambda: None)
    constrainer, why = hf._constrainer(backend.tokenizer, backend.lm, True)
    assert constrainer is None and "llguidance is not installed" in why
    assert hf._constrainer(backend.tokenizer, backend.lm, False) == (None, "constrained decoding switched off")


@pytest.mark.realdata
def test_a_run_records_constrained_decoding(backend: Any, roots: DataRoots, tmp_path: Path) -> None:
    from klue.benchmark.cells import choose_protocol
    from klue.llm.run import LlmSettings, run
    from klue.protocols import resolve

    task = registry.get("re")  # generate mode: a relation name (STS would do, but a constant score has no Pearson)
    data = resolve(task, choose_protocol(task, "auto", roots), roots)
    rates = {}
    for constrained in (True, False):
        settings = LlmSettings(method="generate", limit=N, constrained=constrained, progress=False)
        results = run(RunRequest(task, "hf:tiny", data, 1, tmp_path / str(constrained)), settings=settings, backend=backend)
        assert results.llm is not None
        rates[constrained] = results.llm.parse_failure_rate
        assert results.llm.n_constrained == (N if constrained else 0)
        assert results.llm.capabilities["constrained_by"].startswith("llguidance ")
        outputs = [json.loads(line) for line in (tmp_path / str(constrained) / "llm_outputs.jsonl").open()]
        assert [o["raw"]["constrained"] for o in outputs] == [constrained] * N
    assert rates[True] == 0 and rates[False] > 0.5
