"""Credentials out of what klue shows and writes (klue.io.redact)."""

from __future__ import annotations

import base64

from klue.io.redact import has_credentials, redact_text, redact_url, split_credentials


def test_userinfo_and_secret_query_values_are_blanked() -> None:
    assert redact_url("http://user:pa%40ss@host:8000/v1") == "http://***@host:8000/v1"
    assert redact_url("ray://admin:tok@10.0.0.1:10001") == "ray://***@10.0.0.1:10001"
    assert redact_url("https://mirror/x?api_key=sk-1&lang=ko") == "https://mirror/x?api_key=***&lang=ko"
    assert redact_url("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"  # nothing to hide
    text = "openai:m@http://u:p@h/v1 failed; retry openai:m@https://k@h2/v1?token=abc"
    assert redact_text(text) == "openai:m@http://***@h/v1 failed; retry openai:m@https://***@h2/v1?token=***"
    assert has_credentials("http://u:p@h") and not has_credentials("http://h/v1")


def test_credentials_become_a_basic_header_and_leave_the_url() -> None:
    url, header = split_credentials("http://us%3Aer:p%40ss@[::1]:8000/v1?x=1")
    assert url == "http://[::1]:8000/v1?x=1"
    assert header == "Basic " + base64.b64encode(b"us:er:p@ss").decode()
    assert split_credentials("http://h/v1") == ("http://h/v1", None)
