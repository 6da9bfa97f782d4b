"""What a case's Containerfile may ask of the build (docs/trust.md): nothing outside its context.

podman builds a case image as root on the host, and buildah resolves some build-time mounts
on the host: a cache mount lives at /var/tmp/buildah-cache-<uid>/<id> with the `id` joined
unchecked (`id=../../x` is any host folder, read-write), a bind mount's `source` follows a
link in the context out of it, `from` mounts another image whose links do the same, and
secret and ssh mounts read host files. So every RUN flag and mount is read here, the same way
at `check` time and right before a build, and anything that could leave the context is refused
with the Containerfile's line. Fetching from the network (RUN --network, ADD of a URL) needs
the case's `build_network: true`.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import posixpath
import re
from collections.abc import Iterator
from pathlib import Path

from skillbench.evals.problems import Problem

NETWORK_FIELD = "build_network"
_DIRECTIVE = re.compile(r"^#\s*([A-Za-z]+)\s*=\s*(\S*)\s*$")
_URL = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*://|git@)")
_PATH_KEYS = ("id", "source", "src", "target", "dst", "destination")
_MOUNT_TYPES = ("bind", "cache", "tmpfs", "secret", "ssh")


def instructions(text: str) -> Iterator[tuple[int, str]]:
    """Each instruction with the line it starts on: continuations joined, comments dropped."""
    lines = text.splitlines()
    escape, head = "\\", 0
    while head < len(lines) and (found := _DIRECTIVE.match(lines[head])):
        if found.group(1).lower() == "escape" and found.group(2) in ("\\", "`"):
            escape = found.group(2)
        head += 1
    parts: list[str] = []
    first = 0
    for number, line in enumerate(lines[head:], head + 1):
        if line.lstrip().startswith("#") or (parts and not line.strip()):
            continue  # a comment or blank line inside a continuation does not end it
        if not parts:
            first = number
        body = line.rstrip()
        if body.endswith(escape):
            parts.append(body[:-1])
            continue
        parts.append(line)
        joined = " ".join(parts).strip()
        parts = []
        if joined:
            yield first, joined
    if parts and " ".join(parts).strip():
        yield first, " ".join(parts).strip()


def _flags(rest: str) -> tuple[list[str], str]:
    """The `--name=value` flags at the start of an instruction's arguments (quotes removed,
    as buildah reads them), and what follows them."""
    flags: list[str] = []
    i = 0
    while True:
        while i < len(rest) and rest[i].isspace():
            i += 1
        if not rest.startswith("--", i):
            return flags, rest[i:]
        token, quote = [], ""
        while i < len(rest) and (quote or not rest[i].isspace()):
            char = rest[i]
            if quote and char == quote:
                quote = ""
            elif not quote and char in "\"'":
                quote = char
            else:
                token.append(char)
            i += 1
        flags.append("".join(token))


def tree_digest(folder: Path) -> str:
    """A digest of every file under `folder` (a build context): an edit is another image."""
    h = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        # a link is its text (never followed: it may point anywhere on the host)
        data = os.readlink(path).encode() if path.is_symlink() else None
        if data is None and not path.is_file():
            continue
        data = path.read_bytes() if data is None else b"link " + data
        h.update(str(path.relative_to(folder)).encode() + b"\0" + data + b"\0")
    return h.hexdigest()


def _escapes(value: str) -> bool:
    """A path that climbs out of where it is joined (`..` after normalising, from the root)."""
    return ".." in posixpath.normpath(value).split("/")


def _mount(value: str, context: Path, caches: dict[str, int], line: int) -> str | None:
    """Why a `--mount=` value is refused, or None; a cache mount's folder goes into `caches`."""
    fields: dict[str, str] = {}
    for item in next(csv.reader([value]), []):
        key, _, val = item.partition("=")
        fields[key.strip().lower()] = val
    kind = fields.get("type", "bind")
    if kind not in _MOUNT_TYPES:
        return f"a mount of type {kind!r}: a case build takes bind, cache and tmpfs mounts"
    if kind in ("secret", "ssh"):
        return (
            f"{'a' if kind == 'secret' else 'an'} {kind} mount reads host credentials into the "
            "build; a case build gets none (put what the image needs in the build context)"
        )
    if "from" in fields:
        return (
            "a mount with `from` mounts another image, whose links resolve on the host; "
            "COPY --from copies from it safely"
        )
    for key in _PATH_KEYS:
        if key in fields and _escapes(fields[key]):
            where = "cache folder" if (kind, key) == ("cache", "id") else "build context"
            return (
                f"{kind} mount `{key}` {fields[key]!r} leaves the build's {where}; "
                "host paths are refused (use a plain name, or a path inside the context)"
            )
    if kind == "cache":
        return _cache(fields.get("id") or fields.get("target") or "", caches, line)
    if kind == "bind":
        return _bind(fields, context)
    return None


def _cache(name: str, caches: dict[str, int], line: int) -> str | None:
    # A cache's folder is <cache dir>/<id or target> on the host, joined as a path: a cache
    # nested in another is reached through whatever links a step left in the outer one.
    folder = posixpath.normpath("/" + name)
    for other, at in caches.items():
        if _nested(folder, other) or _nested(other, folder):
            return (
                f"cache mount {name!r} and the cache of line {at} ({other}) are nested: a step "
                "can link one out to the host through the other; give each cache its own `id`"
            )
    caches.setdefault(folder, line)
    return None


def _nested(inner: str, outer: str) -> bool:
    return inner != outer and (outer == "/" or inner.startswith(outer + "/"))


def _bind(fields: dict[str, str], context: Path) -> str | None:
    writable = fields.get("rw", fields.get("readwrite", "false")) in ("", "true")
    if writable or "false" in (fields.get("ro"), fields.get("readonly")):
        return "a read-write bind mount writes into the build context on the host; drop `rw`"
    source = fields.get("source", fields.get("src", "."))
    root = context.resolve()
    target = (root / source.lstrip("/")).resolve()
    if not target.is_relative_to(root):
        return (
            f"bind mount `source` {source!r} resolves to {target}, outside the build "
            "context (a link in the context points out of it)"
        )
    return None


def _run(rest: str, context: Path, network: bool, caches: dict[str, int], line: int) -> str | None:
    flags, _ = _flags(rest)
    for flag in flags:
        name, _, value = flag.partition("=")
        if name == "--mount":
            why = _mount(value, context, caches, line)
            if why:
                return why
        elif name == "--network":
            if value != "none" and not network:
                return (
                    f"RUN {flag} reaches the network, and a case build has none; say "
                    f"`{NETWORK_FIELD}: true` in the case if it needs it"
                )
        elif name == "--security":
            return f"RUN {flag} runs the step privileged on the host; a case build never does"
        else:
            return f"RUN flag {name!r} is not one a case build takes (--mount, --network)"
    return None


def _add(rest: str, network: bool) -> str | None:
    _, args = _flags(rest)
    try:
        parsed = json.loads(args) if args.startswith("[") else None
    except ValueError:
        parsed = None
    words = parsed if isinstance(parsed, list) else args.split()
    fetched = [w for w in words[:-1] if isinstance(w, str) and _URL.match(w)]
    if fetched and not network:
        return (
            f"ADD {fetched[0]} fetches from the network, and a case build has none; say "
            f"`{NETWORK_FIELD}: true` in the case if it needs it, or put the file in the context"
        )
    return None


def _refusal(
    instruction: str, context: Path, network: bool, caches: dict[str, int], line: int
) -> str | None:
    word, _, rest = instruction.replace("\t", " ").partition(" ")
    word = word.upper()
    if word == "ONBUILD":  # (it runs in a build FROM this image: the same rules)
        return _refusal(rest.strip(), context, network, caches, line)
    if word == "RUN":
        return _run(rest, context, network, caches, line)
    if word == "ADD":
        return _add(rest, network)
    return None


def lint(path: Path, text: str, *, network: bool, context: Path | None = None) -> list[Problem]:
    """Every instruction of a case's Containerfile that could leave its build context (the
    Containerfile's folder unless given: a compose `build:` may name another)."""
    problems = []
    caches: dict[str, int] = {}  # a cache mount's folder -> the line that first uses it
    for line, instruction in instructions(text):
        why = _refusal(instruction, context or path.parent, network, caches, line)
        if why:
            problems.append(Problem(str(path), line, "error", why))
    return problems
