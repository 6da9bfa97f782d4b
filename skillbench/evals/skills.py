"""Skills on disk: SKILL.md front matter, library roots and their catalog, the content digest
(docs/results.md) and the staging filter.

A skill is a folder with a SKILL.md; a library root is a folder whose direct children are
skills. This module sits at the bottom of the package: it imports nothing above `spec`.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import unicodedata
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import msgspec

from skillbench.evals.eval_yaml import EVAL_YAML_NAMES
from skillbench.evals.problems import Problem, SpecError
from skillbench.evals.triggers_file import TRIGGER_JSON_NAMES
from skillbench.evals.yamlsrc import parse_yaml, read_text
from skillbench.util.lossless import utf8_safe

SKILL_FILE = "SKILL.md"
NAME_RE = re.compile(r"^[a-z0-9-]{1,64}$")
VERSION_RE = re.compile(r"^v([1-9][0-9]*)$")  # a team's published version, skills/<name>/v<N>
MAX_DESCRIPTION = 1024
# Never part of a skill's identity, anywhere in the tree.
LITTER = frozenset({".git", ".DS_Store", "Thumbs.db"})
# Top-level folders that are eval material, not the skill: out of the digest / out of staging.
# `.skillbench/` holds run folders (journals, other arms' transcripts): never the skill's bytes,
# never visible to an arm.
RUNS_DIR = ".skillbench"
# Other tools' eval files that sit at a skill's root (Skillgrade's and Vally's eval.yaml,
# trigger JSON): evals like evals/, so never staged (the candidate would read what grades
# it) and not part of the skill's version.
ROOT_EVALS = frozenset({*EVAL_YAML_NAMES, *TRIGGER_JSON_NAMES})
NOT_IN_DIGEST = frozenset({"evals", RUNS_DIR, *ROOT_EVALS})
NOT_STAGED = frozenset({"evals", "fixtures", RUNS_DIR, *ROOT_EVALS})


class Skill(msgspec.Struct, frozen=True):
    """A skill folder and its front matter."""

    name: str
    description: str
    path: str
    body_line: int  # first line of the markdown after the front matter
    warnings: tuple[Problem, ...] = ()  # e.g. front matter only a lenient reader accepts


class SkillFile(msgspec.Struct, frozen=True):
    """One entry of a skill's tree: a regular file, or a symlink kept as a link."""

    rel: str  # normalised POSIX path relative to the skill folder
    abspath: str
    link: str | None = None  # the link text, for symlinks


def is_skill(path: Path) -> bool:
    """True when `path` is a folder holding a SKILL.md."""
    return (path / SKILL_FILE).is_file()


def read_skill(folder: Path, *, folder_name: str | None = None) -> Skill:
    """Parse a skill's SKILL.md front matter; raise `SpecError` with `path:line` problems.

    The name should match the folder's name, or `folder_name` for a folder named otherwise
    (a published version lives in `skills/<name>/v<N>/`); a mismatch is a warning.
    """
    md = folder / SKILL_FILE
    shown = str(md)
    text = read_text(md)
    lines = text.split("\n")
    if not lines or lines[0].rstrip("\r") != "---":
        raise SpecError(
            [
                Problem(
                    shown,
                    1,
                    "error",
                    "SKILL.md must start with YAML front matter: "
                    "a `---` line, `name:` and `description:`, then `---`",
                )
            ]
        )
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip("\r") == "---"), None)
    if end is None:
        raise SpecError(
            [Problem(shown, 1, "error", "front matter is not closed: add a `---` line after it")]
        )
    warnings: tuple[Problem, ...] = ()
    try:
        doc = parse_yaml("\n".join(lines[1:end]), shown, first_line=2)
    except SpecError as exc:
        # Claude Code reads `key: value` lines when strict YAML fails (an unquoted `: ` in a
        # description is the usual cause); accept what it accepts, and say so.
        lenient = _lenient_front_matter(lines[1:end])
        if lenient is None:
            raise
        meta, where = lenient
        first = exc.problems[0]
        warnings = (
            Problem(
                shown,
                first.line,
                "warning",
                f"front matter is not valid YAML ({first.message}); Claude Code "
                "reads it line by line and accepts it, but strict YAML readers "
                "(Codex, PyYAML, js-yaml) drop the skill: quote the value, e.g. "
                'description: "…"',
            ),
        )
    else:
        if not isinstance(doc.value, dict):
            raise SpecError(
                [
                    Problem(
                        shown,
                        2,
                        "error",
                        "front matter must be a mapping with `name` and `description`",
                    )
                ]
            )
        meta = doc.value
        where = {k: doc.line((k,)) for k in ("name", "description") if k in meta}

    def problem(field: str, message: str) -> Problem:
        return Problem(shown, where.get(field, 1), "error", message)

    problems: list[Problem] = []
    for field in ("name", "description"):
        if field not in meta:
            problems.append(Problem(shown, 1, "error", f"front matter is missing `{field}`"))
        elif not isinstance(meta[field], str) or not meta[field].strip():
            problems.append(problem(field, f"`{field}` must be non-empty text"))
    if not problems:
        name, description = meta["name"], meta["description"]
        if not NAME_RE.match(name):
            problems.append(
                problem(
                    "name",
                    f"skill name {name!r} must be lowercase "
                    "letters, digits and hyphens, at most 64 characters",
                )
            )
        elif name != (folder_name or folder.resolve().name):
            # The Agent Skills spec requires them to match, but published skills do not
            # always (skill-optimizer's references/pdf-skill is `pdf`): the skill is staged
            # under its `name`, and the difference said.
            warnings += (
                Problem(
                    shown,
                    where.get("name", 1),
                    "warning",
                    f"skill name {name!r} does not match its folder "
                    f"{folder_name or folder.resolve().name!r} (the Agent Skills spec requires "
                    f"them to match): it is staged as /skills/{name}; rename the folder to "
                    "silence this",
                ),
            )
        if len(description) > MAX_DESCRIPTION:
            problems.append(
                problem(
                    "description",
                    f"description is {len(description)} characters; the limit is {MAX_DESCRIPTION}",
                )
            )
    if problems:
        raise SpecError(problems)
    return Skill(meta["name"], meta["description"], str(folder), end + 2, warnings)


# A value that starts like YAML structure is broken YAML, not prose with a colon in it.
_STRUCTURE = ("[", "{", "|", ">", "&", "*", "!")


def _lenient_front_matter(lines: list[str]) -> tuple[dict[str, str], dict[str, int]] | None:
    """Top-level `key: value` lines read as plain text, the way Claude Code recovers front
    matter strict YAML rejects; None when something else is wrong with it."""
    meta: dict[str, str] = {}
    where: dict[str, int] = {}
    for number, raw in enumerate(lines, start=2):
        line = raw.rstrip("\r")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line[0] in " \t":
            return None  # continuation or nesting: real YAML structure, and it is broken
        key, sep, value = line.partition(":")
        value = value.strip()
        if not sep or not re.fullmatch(r"[A-Za-z0-9_-]+", key) or value.startswith(_STRUCTURE):
            return None
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        meta[key], where[key] = value, number
    return (meta, where) if "name" in meta and "description" in meta else None


def root_children(root: Path) -> list[Path]:
    """The direct children of a library root that are skills, sorted by folder name."""
    return sorted((p for p in root.iterdir() if p.is_dir() and is_skill(p)), key=lambda p: p.name)


def is_library_root(path: Path) -> bool:
    """True when `path` is a folder (not itself a skill) with at least one skill child."""
    return path.is_dir() and not is_skill(path) and bool(root_children(path))


def catalog(root: Path, *, include: Skill | None = None) -> list[Skill]:
    """The skills of a library root whose front matter parses, sorted by name.

    `include` (the skill under test) is always in the catalog, even when it lives elsewhere.
    """
    skills = {}
    for child in root_children(root):
        try:
            skill = read_skill(child)
        except SpecError:
            continue
        skills[skill.name] = skill
    if include is not None:
        skills[include.name] = include
    return [skills[name] for name in sorted(skills)]


class Named(Protocol):
    """Anything with a skill's name and description (a Skill, the agent's SkillInfo)."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...


def catalog_lines(skills: Sequence[Named]) -> list[str]:
    """One `- name: description` line per skill, the description folded onto one line."""
    return [f"- {s.name}: {' '.join(s.description.split())}" for s in skills]


# --- the tree, the digest, staging --------------------------------------------------------


def _norm(rel: str) -> str:
    # Unicode NFC so a skill checked out on macOS (NFD names) hashes the same as on Linux.
    return unicodedata.normalize("NFC", rel.replace(os.sep, "/"))


def skill_files(
    folder: Path, *, exclude_top: frozenset[str] = NOT_IN_DIGEST, skill: Path | None = None
) -> list[SkillFile]:
    """Every file under `folder` (a skill, or a folder of one), sorted by normalised path;
    symlinks are listed, not followed.

    The one rule for links, for the skill's files and its evals alike: a link is fine when
    it resolves inside the skill (`skill`, default `folder`); else `SpecError`. A link of the
    skill's own files must not lead into what its digest leaves out (evals/, litter).
    """
    root = folder.resolve()
    inside = (skill or folder).resolve()
    out: list[SkillFile] = []
    problems: list[Problem] = []
    named: dict[str, str] = {}  # normalised path -> the name on disk it came from
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        top = here == root
        keep = []
        for d in dirnames:
            if d in LITTER or (top and d in exclude_top):
                continue
            if (here / d).is_symlink():
                filenames.append(d)  # a symlinked folder is an entry, never walked into
            else:
                keep.append(d)
        dirnames[:] = keep
        for f in filenames:
            if f in LITTER or (top and f in exclude_top):
                continue
            path = here / f
            raw = str(path.relative_to(root))
            if problem := _name_problem(folder, raw, named):
                problems.append(problem)
                continue
            rel = _norm(raw)
            if path.is_symlink():
                target = os.readlink(path)
                if not _is_text(target):
                    problems.append(
                        Problem(
                            utf8_safe(str(folder / raw)),
                            1,
                            "error",
                            "symlink target is not UTF-8; point it at a file with a text name",
                        )
                    )
                    continue
                try:
                    resolved = (here / target).resolve()
                except (RuntimeError, OSError):  # a loop (3.11 raises RuntimeError, 3.13 ELOOP)
                    problems.append(
                        Problem(
                            utf8_safe(str(folder / rel)),
                            1,
                            "error",
                            f"symlink loop ({target}): it leads back to itself; remove it",
                        )
                    )
                    continue
                if not resolved.is_relative_to(inside):
                    problems.append(
                        Problem(
                            str(folder / rel),
                            1,
                            "error",
                            f"symlink points outside the "
                            f"skill ({target}); copy the file in instead",
                        )
                    )
                    continue
                lands = resolved.relative_to(inside).parts
                if root == inside and (
                    (lands and lands[0] in NOT_IN_DIGEST) or LITTER & set(lands)
                ):
                    # hashed by its text only, it would bring in bytes no digest covers
                    # (a published version's evals/ file, edited after it was measured)
                    problems.append(
                        Problem(
                            str(folder / rel),
                            1,
                            "error",
                            f"symlink points into {'/'.join(lands[:1])}, which is not part of "
                            f"the skill's version ({target}); copy the file in instead",
                        )
                    )
                    continue
                out.append(SkillFile(rel, str(path), link=target))
            elif path.is_file():
                out.append(SkillFile(rel, str(path)))
    if problems:
        raise SpecError(problems)
    return sorted(out, key=lambda f: f.rel.encode())


def _is_text(name: str) -> bool:
    """False for a name with bytes that are not UTF-8 (decoded to lone surrogates)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _name_problem(folder: Path, raw: str, named: dict[str, str]) -> Problem | None:
    """Why the name `raw` cannot be part of a skill's identity, if it cannot: it is not UTF-8
    (no digest, no agent's tool could name it), or it normalises (NFC) to the same path as
    another name in the tree, so two trees with the two names' contents swapped would hash
    the same. Records `raw` in `named`."""
    if not _is_text(raw):
        return Problem(
            utf8_safe(str(folder / raw)),
            1,
            "error",
            "file name is not UTF-8; rename it (a skill's names must be text)",
        )
    rel = _norm(raw)
    other = named.setdefault(rel, raw)
    if other == raw:
        return None
    return Problem(
        str(folder / raw),
        1,
        "error",
        f"the same name as {other!r} once Unicode-normalised (NFC vs NFD spellings of one "
        "name); rename one of them",
    )


def digest(folder: Path) -> str:
    """The skill's version identity: `sha256:` + hex over its files (docs/results.md).

    Each entry is hashed as kind, path length, path, content length, content, so no two
    different trees can produce the same byte stream. Modes and mtimes are ignored.
    """
    return _hash_entries(skill_files(folder))


def eval_files(folder: Path) -> list[SkillFile]:
    """The files of a skill's `evals/`, then its root eval files (links checked like the
    skill's own: inside the skill)."""
    evals = folder / "evals"
    found = skill_files(evals, exclude_top=frozenset(), skill=folder) if evals.is_dir() else []
    if not any(os.path.lexists(folder / name) for name in ROOT_EVALS):
        return found
    every = skill_files(folder, exclude_top=frozenset({"evals", RUNS_DIR}), skill=folder)
    root = [f for f in every if f.rel in ROOT_EVALS]
    return found + root


def evals_digest(folder: Path) -> str:
    """Digest of a skill's `evals/` tree: what `--resume` compares to refuse changed assets."""
    return _hash_entries(eval_files(folder))


def tree_digest(folder: Path, skill: Path) -> str:
    """Digest of any folder of a skill (a fixture): its files and links, as `digest` hashes."""
    return _hash_entries(skill_files(folder, exclude_top=frozenset(), skill=skill))


def _hash_entries(entries: list[SkillFile]) -> str:
    h = hashlib.sha256()
    for entry in entries:
        if entry.link is not None:
            kind, data = b"L", entry.link.encode()
        else:
            kind, data = b"F", Path(entry.abspath).read_bytes()
        path = entry.rel.encode()
        h.update(kind + len(path).to_bytes(8, "big") + path + len(data).to_bytes(8, "big"))
        h.update(data)
    return "sha256:" + h.hexdigest()


def staged_files(folder: Path) -> list[SkillFile]:
    """The files an arm sees: the skill without its top-level `evals/` and `fixtures/`."""
    return skill_files(folder, exclude_top=NOT_STAGED)


def copy_files(entries: list[SkillFile], dest: Path) -> list[str]:
    """Copy skill entries under `dest` (symlinks as links, exec bits kept); return their paths."""
    for entry in entries:
        target = dest / entry.rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if entry.link is not None:
            os.symlink(entry.link, target)
        else:
            shutil.copy(entry.abspath, target)
    return [entry.rel for entry in entries]


def copy_for_staging(folder: Path, dest: Path) -> list[str]:
    """Copy the staged view of a skill into `dest`; return the relative paths copied."""
    return copy_files(staged_files(folder), dest)
