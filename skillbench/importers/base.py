"""What every importer produces (docs/formats.md): native eval files for a skill's `evals/`, each
headed with where it came from, and every source field that could not be mapped, with why.

`write_import` refuses to overwrite anything; `check_import` writes into a scratch copy of the
skill and validates it with the same loader `skillbench check` uses (a dry import).
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import yaml

from skillbench.errors import SkillbenchError
from skillbench.evals import SpecError, load_assets
from skillbench.evals.model import CASE_TIMEOUT_MINUTES
from skillbench.evals.problems import Problem
from skillbench.evals.yamlsrc import CappedLoader
from skillbench.sandbox.podman.case_image import SANDBOX_FROM
from skillbench.sandbox.podman.image import image_exists
from skillbench.util.inputs import InputError, load_toml, read_capped


class ImportError_(SkillbenchError):
    """The source is not what the importer reads (named with its path and what is missing)."""


class NewFile(msgspec.Struct, frozen=True):
    rel: str  # under evals/
    content: bytes
    executable: bool = False


class Imported(msgspec.Struct):
    """An importer's result: files to write, and what it could not map."""

    source: str  # "harbor task <path>", for headers and reports
    files: list[NewFile] = []
    unmapped: list[str] = []  # "<where>: <field> — <why>"
    mapped: list[str] = []  # "<where>: <field> — <what it became>": mapped, but not 1:1
    cases: list[str] = []
    skipped: list[str] = []  # "<where>: <why>": a task that could not be imported
    warnings: list[str] = []  # what the user should look at before running the import


def each(out: Imported, where: str, add: Callable[[], None]) -> None:
    """Import one task of a folder of them: one that cannot be imported is skipped with its
    reason, and the rest of the folder still imports."""
    kept = len(out.files), len(out.unmapped), len(out.warnings), len(out.mapped)
    try:
        add()
    except ImportError_ as exc:  # nothing of a skipped task is written or listed
        del out.files[kept[0] :], out.unmapped[kept[1] :], out.warnings[kept[2] :]
        del out.mapped[kept[3] :]
        out.skipped.append(f"{where}: {exc}")


def none_left(out: Imported, src: Path) -> None:
    """Refuse an import where every task was skipped (nothing to write), naming why each was."""
    if not out.cases and out.skipped:
        reasons = "; ".join(out.skipped[:3]) + (" …" if len(out.skipped) > 3 else "")
        raise ImportError_(f"{src}: no task could be imported ({reasons})")


_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_name(name: str) -> str:
    """A filesystem-safe case name (letters, digits, `.`, `_`, `-`)."""
    return _SAFE.sub("-", name).strip("-.") or "case"


def headed(text: str, source: str) -> bytes:
    """`text` with a first comment line (after a shebang) saying where it came from."""
    head = f"# imported by `skillbench import` from {source}\n"
    if text.startswith("#!"):
        first, _, rest = text.partition("\n")
        return (first + "\n" + head + rest).encode()
    return (head + text).encode()


def yaml_str(text: str) -> str:
    """A YAML block scalar for `text` (kept exactly, trailing newline included)."""
    body = text if text.endswith("\n") else text + "\n"
    lines = "".join(f"  {line}\n" if line else "\n" for line in body.splitlines())
    return "|\n" + lines if body.strip() else '""\n'


# A source is read, never followed: a symlink in it could point at any file of the host, and
# what it points at would be copied into the skill. Links are listed as not mapped instead.


def linked(path: Path) -> bool:
    """Whether `path` or a folder on the way to it is a symlink (paths start at a resolved
    source root, so any link met is one inside the source)."""
    return os.path.realpath(path) != os.path.abspath(path)


def is_file(path: Path) -> bool:
    """A regular file of the source, reached without a link."""
    return path.is_file() and not linked(path)


def is_dir(path: Path) -> bool:
    """A folder of the source, reached without a link."""
    return path.is_dir() and not linked(path)


def refuse_link(path: Path) -> Path:
    """`path`, unless it (or a folder on the way) is a link: refused in one line."""
    if linked(path):
        raise ImportError_(
            f"{path}: a symlink; import never follows links in the source (copy the file in)"
        )
    return path


def confined(suite: Path, ref: object, file: Path, key: str, base: Path | None = None) -> Path:
    """`base / ref` (`base`: the suite's folder unless given) for a path that `key` in the
    source file `file` names, refused in one line (file:line) when it is absolute or leads
    out of `suite`: an import copies the source's own files, never whatever of the host a
    hostile source names."""
    target = Path(os.path.normpath((base or suite) / str(ref)))
    if Path(str(ref)).is_absolute() or not target.is_relative_to(suite):
        raise ImportError_(
            f"{file}:{line_of(file, str(ref))}: {key} {str(ref)[:200]!r} leads outside "
            f"{suite}; an import reads only the source's own files (copy it in)"
        )
    return target


def line_of(file: Path, needle: str) -> int:
    """The first line of `file` naming `needle` (1 when none does)."""
    with contextlib.suppress(OSError):
        for number, line in enumerate(file.read_text(errors="replace").splitlines(), 1):
            if needle in line:
                return number
    return 1


def text(path: Path, missing: str | None = None) -> str:
    """A source file's text (`missing` when there is none, if given; else OSError); a link
    is refused in one line."""
    refuse_link(path)
    if missing is not None and not path.is_file():
        return missing
    return path.read_text(encoding="utf-8")


def source_links(root: Path) -> list[str]:
    """Every symlink under `root`, as not-mapped notes."""
    notes = []
    for folder, dirs, files in os.walk(root):
        for name in sorted(dirs + files):
            path = Path(folder) / name
            if path.is_symlink():
                notes.append(
                    f"{path.relative_to(root)}: a symlink (to {os.readlink(path)}) — not "
                    "followed: import copies no links (copy what it points at in)"
                )
    return notes


def support(src: Path, dest_rel: str, source: str) -> list[NewFile]:
    """Every file under `src` as files under `dest_rel` (links left out: `source_links`
    lists them); scripts get a header comment saying where they came from, nothing else."""
    out = []
    found = [] if linked(src) else [Path(f) / n for f, _, names in os.walk(src) for n in names]
    for path in sorted(p for p in found if p.is_file() and not p.is_symlink()):
        rel = f"{dest_rel}/{path.relative_to(src).as_posix()}"
        data = path.read_bytes()
        try:
            text = data.decode()
        except UnicodeDecodeError:
            out.append(NewFile(rel, data, _executable(path)))
            continue
        if path.suffix in (".sh", ".py", ".bash") or text.startswith("#!"):
            data = headed(text, source)
        else:
            data = text.encode()
        out.append(NewFile(rel, data, _executable(path) or path.suffix == ".sh"))
    return out


def _executable(path: Path) -> bool:
    return bool(path.stat().st_mode & 0o111)


def write_import(result: Imported, skill: Path) -> list[str]:
    """Write the files into the skill's evals/; refuses (before writing anything) when any
    exists. Returns the paths written."""
    evals = skill / "evals"
    clash = [f.rel for f in result.files if (evals / f.rel).exists()]
    if clash:
        raise ImportError_(
            f"{evals}: would overwrite {', '.join(clash[:5])}"
            f"{' …' if len(clash) > 5 else ''}; move them away or import into "
            "another skill"
        )
    written = []
    for f in result.files:
        path = evals / f.rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(f.content)
        if f.executable:
            path.chmod(0o755)
        written.append(str(path))
    return written


def check_import(result: Imported, skill: Path) -> list[Problem]:
    """Problems the imported evals would have (none: they load cleanly), without touching
    the skill: the import is written into a scratch copy and loaded there."""
    with tempfile.TemporaryDirectory(prefix="skillbench-import-") as tmp:
        copy = Path(tmp) / skill.name
        shutil.copytree(skill, copy, symlinks=True, ignore=shutil.ignore_patterns(".skillbench"))
        try:
            write_import(result, copy)
        except ImportError_ as exc:
            return [Problem(str(skill / "evals"), 1, "error", str(exc))]
        try:
            assets = load_assets(copy)
        except SpecError as exc:
            return [_home(p, copy, skill) for p in exc.problems]
        return [_home(p, copy, skill) for p in assets.problems]


def _home(problem: Problem, copy: Path, skill: Path) -> Problem:
    """A problem found in the scratch copy, named where the file would be written."""
    return msgspec.structs.replace(problem, path=problem.path.replace(str(copy), str(skill)))


# --- parts of a native case, for every format ------------------------------------------------


def containerfile_field(
    dockerfile: Path, name: str, where: str, source: str, out: Imported
) -> dict[str, str]:
    """The case's `containerfile:` field, with its build context copied beside the case; a
    note when its base image is not on this machine (offline, nothing is pulled)."""
    context = dockerfile.parent
    out.files += support(context, f"cases/{name}/{context.name}", source)
    bases = re.findall(r"(?im)^\s*FROM\s+(\S+)", dockerfile.read_text(errors="replace"))
    missing = [b for b in bases if b != SANDBOX_FROM and not image_exists(b)]
    if missing:
        out.unmapped.append(
            f"{where}: {context.name}/{dockerfile.name} FROM {missing[0]} — not a "
            "local image here: the eval refuses the case until it is (podman "
            f"pull or load it), or make it FROM {SANDBOX_FROM}"
        )
    entry = _entrypoint(dockerfile.read_text(errors="replace"))
    if entry is not None:
        line, value = entry
        out.unmapped.append(
            f"{where}: {context.name}/{dockerfile.name}:{line} ENTRYPOINT {value} — not run: "
            "the sandbox's command executor replaces it in every phase, so what it sets up "
            "(files, /etc/hosts entries, servers it starts) is not there; fold that into a "
            "RUN step or the case's `setup`"
        )
    return {"containerfile": f"{name}/{context.name}/{dockerfile.name}"}


def _entrypoint(text: str) -> tuple[int, str] | None:
    """The Dockerfile's last ENTRYPOINT (the one an image keeps) and its line, unless it
    clears it (`ENTRYPOINT []`)."""
    found = None
    for number, line in enumerate(text.splitlines(), 1):
        m = re.match(r"(?i)\s*ENTRYPOINT\s+(.+?)\s*$", line)
        if m:
            found = (number, m.group(1))
    if found is None or found[1].replace(" ", "") in ("[]", '[""]'):
        return None
    return found


def image_field(ref: str, where: str, out: Imported) -> dict[str, str]:
    if not image_exists(ref):
        out.unmapped.append(
            f"{where}: image {ref} — not a local image here: the eval refuses "
            "the case until it is (podman pull or load it)"
        )
    return {"image": ref}


def read_toml(path: Path) -> dict[str, Any]:
    try:
        return load_toml(refuse_link(path))
    except InputError as exc:
        why = str(exc).removeprefix(f"{path}: ")
        raise ImportError_(f"{path}: cannot read it as TOML: {why}") from None


def case_yaml(
    source: str, task: str, checks: list[str], extra: dict[str, str], notes: list[str]
) -> bytes:
    """A native case file: the task, the mapped fields, the checks; notes as comments."""
    lines = [f"# {n}" for n in notes]
    lines.append("task: " + yaml_str(task).rstrip("\n"))
    lines += [f"{k}: {v}" for k, v in extra.items()]
    lines.append("checks:")
    lines += [f"  - {c}" for c in checks]
    return headed("\n".join(lines) + "\n", source)


def timeout_minutes(seconds: Any) -> int | None:
    """A source's timeout in whole minutes, capped at ours; None when it gives none. An
    infinite one (TOML's `inf`, YAML's `.inf`) or one past a float's range is no limit of
    its own: ours (math.ceil of either raised, a traceback from `import`)."""
    if not isinstance(seconds, int | float) or isinstance(seconds, bool) or not seconds > 0:
        return None  # (NaN is not > 0)
    if seconds >= CASE_TIMEOUT_MINUTES * 60:
        return CASE_TIMEOUT_MINUTES
    return max(1, math.ceil(seconds / 60))


MAX_YAML = 4 << 20  # a suite file with its cases inline


def load_yaml(path: Path) -> Any:
    try:
        data = read_capped(refuse_link(path), MAX_YAML).decode("utf-8")
        return yaml.load(data, Loader=CappedLoader)
    except (InputError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ImportError_(f"{path}: cannot read it: {exc}") from None
