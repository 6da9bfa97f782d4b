"""Credential scrubbing for everything skillbench writes (transcripts, journals, receipts).

Known credential shapes are replaced by `[REDACTED]`, and so is the exact value of any
environment variable whose name says it holds a secret (…_API_KEY, …_TOKEN, …_SECRET, …).
"""

from __future__ import annotations

import os
import re
from typing import Any

REDACTED = "[REDACTED]"

_PATTERNS = [
    re.compile(
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?-----END [A-Z0-9 ]*PRIVATE KEY-----", re.S
    ),
    re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_\-]{20,}"),
    re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{20,}\b"),
    re.compile(r"\bgithub_pat_[A-Za-z0-9_]{20,}\b"),
    re.compile(r"\bxox[abprs]-[A-Za-z0-9\-]{10,}"),
    re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b"),
]
_BEARER = re.compile(r"(?i)\b(bearer)\s+[A-Za-z0-9._~+/\-]{12,}=*")
# key=value / key: value pairs whose key names a secret; the value is replaced, the key kept.
_PAIRS = re.compile(
    r"(?i)\b((?:[a-z0-9_]*_)?(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key"
    r"|secret[_-]?access[_-]?key|auth[_-]?token|private[_-]?key))(\s*[=:]\s*)"
    r"(\"[^\"\n]{4,}\"|'[^'\n]{4,}'|[^\s\"',;&]{4,})"
)
_SECRET_ENV = re.compile(r"(?i)(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)")


def _env_secrets() -> list[str]:
    values = {v for k, v in os.environ.items() if _SECRET_ENV.search(k) and len(v) >= 8}
    return sorted(values, key=len, reverse=True)


def scrub(text: str, secrets: list[str] | None = None) -> str:
    """Replace every credential found in `text` (`secrets`: the env values, if known)."""
    for value in _env_secrets() if secrets is None else secrets:
        text = text.replace(value, REDACTED)
    for pattern in _PATTERNS:
        text = pattern.sub(REDACTED, text)
    text = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    return _PAIRS.sub(lambda m: f"{m.group(1)}{m.group(2)}{REDACTED}", text)


# C0 controls but newline and tab, DEL, and C1 controls: ANSI/OSC escapes start with these.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """`text` made safe for a terminal: credentials scrubbed, control characters (escape
    sequences that could move the cursor, retitle the window or hide text) shown as `\\xNN`."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", scrub(text))


def without_secrets(env: dict[str, str]) -> dict[str, str]:
    """`env` minus every variable whose name says it holds a secret (…_API_KEY, …_TOKEN)."""
    return {k: v for k, v in env.items() if not _SECRET_ENV.search(k)}


# The fields of a run's records and summary that name things (a case's file name, a session's
# key): scrubbing one would merge two sessions into one key (`token=abcdefgh12` and
# `token=zzzzzzzz99` both become `token=[REDACTED]`). They come from the skill's own files and
# the engine, never from an agent, so they are kept as they are.
IDENTIFIERS = frozenset(
    {"key", "session", "arm", "case", "opponent", "transcript", "units", "reused_from"}
)


def scrub_obj(
    value: Any, secrets: list[str] | None = None, keep: frozenset[str] = frozenset()
) -> Any:
    """Scrub every string inside plain data (dicts, lists, strings), except the values of
    dict keys named in `keep`."""
    if secrets is None:
        secrets = _env_secrets()  # once per object, not once per string
    if isinstance(value, str):
        return scrub(value, secrets)
    if isinstance(value, dict):
        return {k: v if k in keep else scrub_obj(v, secrets, keep) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub_obj(v, secrets, keep) for v in value]
    return value
