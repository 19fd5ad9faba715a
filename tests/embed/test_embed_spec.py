"""Model specs of sentence-embedding models: the two forms, a URL's credentials kept whole, clear refusals."""

from __future__ import annotations

import pytest

from klue.embed.spec import LOCAL_KIND, OPENAI_KIND, EmbeddingSpec, parse_spec, recognises
from klue.errors import DataError


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
