"""Model specs of sentence-embedding models: the two forms, a URL's credentials kept whole, clear refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from klue.embed.spec import LOCAL_KIND, OPENAI_KIND, EmbeddingSpec, parse_spec, recognises
from klue.errors import DataError
from klue.scoring import RunRequest


@pytest.mark.parametrize(("text", "expected"), [
    ("emb:/models/e5", EmbeddingSpec(LOCAL_KIND, "/models/e5")),
    ("emb:openai:text-embedding-3-small@https://api.example.com/v1/",
     EmbeddingSpec(OPENAI_KIND, "text-embedding-3-small", "https://api.example.com/v1")),
    ("emb:openai:e5@http://user:pa55@127.0.0.1:8000/v1", EmbeddingSpec(OPENAI_KIND, "e5", "http://user:pa55@127.0.0.1:8000/v1")),
    ("emb:openai:org/model@name@http://h:1/v1", EmbeddingSpec(OPENAI_KIND, "org/model@name", "http://h:1/v1")),
])
def test_the_two_forms(text: str, expected: EmbeddingSpec) -> None:
    assert recognises(text) and parse_spec(text) == expected


@pytest.mark.parametrize("text", ["emb:", "emb:openai:no-url", "emb:openai:@http://h:1/v1", "openai:m@http://h/v1",
                                  "emb:openai:m@ftp://h/v1"])
def test_malformed_specs_are_refused_saying_the_forms(text: str) -> None:
    with pytest.raises(DataError, match="emb:DIR .* or emb:openai:MODEL@http://HOST:PORT/v1"):
        parse_spec(text)


def test_a_refusal_shows_no_credentials() -> None:
    with pytest.raises(DataError) as caught:
        parse_spec("emb:openai:@http://user:pa55@h:1/v1")
    assert "pa55" not in str(caught.value)


def test_a_backend_kind_is_one_module_and_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """tests/fake_embeddings.py defines `open_backend`; one line in KINDS makes `emb:toy:NAME` a spec that the
    embedding family parses, places (no GPU) and runs end to end."""
    from klue import registry
    from klue.embed import spec
    from klue.families import family_of
    from klue.families.embedding import FAMILY
    from klue.protocols import ProtocolData
    from klue.tasks.ynat.records import LABELS, YnatRecord

    monkeypatch.setattr(spec, "KINDS", (*spec.KINDS, spec.EmbeddingKind("toy", "toy:", "emb:toy:NAME", "a toy",
                                                                        "fake_embeddings", uses_gpu=False)))
    assert parse_spec("emb:toy:t-1") == EmbeddingSpec("toy", "t-1") and str(parse_spec("emb:toy:t-1")) == "emb:toy:t-1"
    assert family_of("emb:toy:t-1") is FAMILY and not FAMILY.uses_gpu("emb:toy:t-1")
    with pytest.raises(DataError, match="emb:toy:NAME"):
        parse_spec("emb:toy:")
    records = [YnatRecord(f"g{i}", f"제목 {LABELS[i % 7]} {i}", LABELS[i % 7]) for i in range(28)]
    data = ProtocolData("local:x", False, "synthetic", records[:21], records[21:], None, ())
    results = FAMILY.run(RunRequest(registry.get("ynat"), "emb:toy:t-1", data, 1, tmp_path, "official"),
                         FAMILY.options({"progress": False}))
    assert results.status == "ok" and results.embedding is not None
    assert (results.embedding.backend, results.embedding.model_fingerprint) == ("toy", "t-1")
