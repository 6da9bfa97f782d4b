"""Credential scrubbing: each shape is replaced, ordinary text is left alone."""

from __future__ import annotations

import pytest

from skillbench.util.scrub import REDACTED, printable, scrub, scrub_obj, without_secrets


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("key sk-ant-api03-AbCdEf123456", f"key {REDACTED}"),
        ("sk-proj-abcdefghijklmnopqrstuvwx", REDACTED),
        ("id AKIAIOSFODNN7EXAMPLE here", f"id {REDACTED} here"),
        ("token ghp_abcdefghijklmnopqrstuvwxyz0123", f"token {REDACTED}"),
        ("Authorization: Bearer abc.def-ghi_jkl123", f"Authorization: Bearer {REDACTED}"),
        ("password=hunter2hunter2 next", f"password={REDACTED} next"),
        ('DB_PASSWORD: "s3cr3t-value"', f"DB_PASSWORD: {REDACTED}"),
        ("api_key = 'abcd1234'", f"api_key = {REDACTED}"),
        (
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----",
            REDACTED,
        ),
        ("xoxb-1234567890-abcdefghij", REDACTED),
    ],
)
def test_credential_shapes(text: str, expected: str) -> None:
    assert scrub(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "a task about sk-learn",
        "the token count was 42",
        "password reset flow",
        "print('hello, world')",
    ],
)
def test_ordinary_text_is_untouched(text: str) -> None:
    assert scrub(text) == text


def test_secret_environment_values_and_nested_data(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", "plainvalue-without-shape")
    monkeypatch.setenv("HOME_DIRNAME", "plainvalue2")  # not a secret-looking name
    data = {"a": ["x plainvalue-without-shape y", {"b": "plainvalue2"}], "n": 3}
    assert scrub_obj(data) == {"a": [f"x {REDACTED} y", {"b": "plainvalue2"}], "n": 3}


def test_printable_escapes_terminal_controls_and_scrubs() -> None:
    shown = printable("title \x1b]0;pwned\x07 clear \x1b[2J back\r key sk-ant-api03-AbCdEf123456\n")
    assert shown == ("title \\x1b]0;pwned\\x07 clear \\x1b[2J back\\x0d key [REDACTED]\n")
    assert printable("tab\tand [bold]markup[/bold] stay") == "tab\tand [bold]markup[/bold] stay"


def test_without_secrets_keeps_the_rest() -> None:
    env = {"PATH": "/bin", "ANTHROPIC_API_KEY": "k", "GH_TOKEN": "t", "HOME": "/root"}
    assert without_secrets(env) == {"PATH": "/bin", "HOME": "/root"}
