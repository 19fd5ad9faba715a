"""The plumbing the HTTP clients share (klue.io.http, klue.io.endpoints): the API root, `MODEL@URL`, gathering
with the first failure, the served model id."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("httpx", reason="the HTTP transport needs httpx: pip install 'klue[llm]'")

from fake_openai import FakeOpenAI
from klue.errors import DataError
from klue.io.endpoints import api_root, split_model_at_url
from klue.io.http import DeadlinePassed, JsonTransport, gather_first_failure, served_model_id


def test_api_root_and_model_at_url() -> None:
    assert api_root("http://h:8000") == "http://h:8000/v1"
    assert api_root("https://proxy/openai/v1/") == "https://proxy/openai/v1"
    with pytest.raises(DataError, match=r"'http://\*\*\*@h:8000'|use http://HOST:PORT/v1"):
        api_root("ftp://user:pw@h:8000")
    assert split_model_at_url("m@http://user:pw@h:1/v1/") == ("m", "http://user:pw@h:1/v1")
    assert split_model_at_url("org/m@v2@https://h") == ("org/m@v2", "https://h")
    assert split_model_at_url("@http://h") is None and split_model_at_url("m") is None


def test_gather_keeps_order_bounds_concurrency_and_raises_the_first_failure() -> None:
    running, most, cancelled = 0, 0, []

    async def job(i: int, fail: bool = False) -> int:
        nonlocal running, most
        running += 1
        most = max(most, running)
        try:
            await asyncio.sleep(0.01 * (5 - i % 5))
            if fail:
                raise ValueError(f"job {i}")
            return i
        except asyncio.CancelledError:
            cancelled.append(i)
            raise
        finally:
            running -= 1

    assert asyncio.run(gather_first_failure([job(i) for i in range(10)], 3)) == list(range(10))
    assert most == 3
    with pytest.raises(ValueError, match="job 1"):
        asyncio.run(gather_first_failure([job(i, fail=i == 1) for i in range(10)], 2))
    assert cancelled  # the others were cancelled, not awaited to the end
    with pytest.raises(DeadlinePassed) as late:
        asyncio.run(gather_first_failure([job(0), asyncio.sleep(5)], 2, timeout_s=0.2))
    assert (late.value.answered, late.value.total) == (1, 2)


def test_the_served_model_id_and_its_note() -> None:
    server = FakeOpenAI(model_id="org/served")
    try:
        transport = JsonTransport(server.url)

        async def ask(model: str) -> tuple[str, str | None]:
            async with transport.client() as client:
                served = await served_model_id(transport, client, model)
            return served.id, served.note

        assert asyncio.run(ask("org/served")) == ("org/served", None)
        name, note = asyncio.run(ask("other"))
        assert name == "org/served" and note is not None and "serves its one model 'org/served'" in note
    finally:
        server.stop()
