"""Property tests: loaders return a valid object or raise SpecError, nothing else; the digest
depends on exactly the bytes and names that make a skill's version."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skillbench.evals import Case, SpecError, Suite, Triggers, load_case, load_suite, load_triggers
from skillbench.evals.skills import digest, read_skill
from tests.helpers import make_skill, write

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

yaml_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(allow_nan=False),
    st.text(max_size=30),
)
yaml_values = st.recursive(
    yaml_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.dictionaries(
            st.one_of(
                st.sampled_from(
                    [
                        "task",
                        "checks",
                        "files",
                        "cases",
                        "name",
                        "should_trigger",
                        "should_not_trigger",
                        "timeout_minutes",
                        "max_turns",
                        "bucket",
                        "requires",
                        "judge",
                        "setup",
                        "fixture",
                        "file_exists",
                    ]
                ),
                st.text(max_size=10),
            ),
            inner,
            max_size=6,
        ),
    ),
    max_leaves=25,
)


def _try_all(folder: Path, path: Path) -> None:
    for loader, kind in ((load_case, Case), (load_suite, Suite)):
        try:
            value, warnings = loader(path, folder)
        except SpecError as exc:
            assert exc.problems and all(p.path == str(path) and p.line >= 1 for p in exc.problems)
        else:
            assert isinstance(value, kind) and value.task.strip()
            assert all(w.severity == "warning" for w in warnings)
    try:
        triggers, _ = load_triggers(path, "s")
    except SpecError as exc:
        assert exc.problems
    else:
        assert isinstance(triggers, Triggers)
        assert triggers.should_trigger or triggers.should_not_trigger


@SETTINGS
@given(data=st.binary(max_size=400))
def test_loaders_on_arbitrary_bytes(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = make_skill(Path(tmp), "s", {"evals/x.yaml": data})
        _try_all(folder, folder / "evals/x.yaml")


@SETTINGS
@given(value=yaml_values)
def test_loaders_on_arbitrary_yaml_values(value: object) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        text = yaml.safe_dump(value, allow_unicode=True)
        folder = make_skill(Path(tmp), "s", {"evals/x.yaml": text})
        _try_all(folder, folder / "evals/x.yaml")


@SETTINGS
@given(data=st.binary(max_size=300))
def test_skill_md_on_arbitrary_bytes(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = write(Path(tmp) / "s", {"SKILL.md": b"---\n" + data})
        try:
            skill = read_skill(folder)
        except SpecError as exc:
            assert exc.problems
        else:
            assert skill.name == "s" and skill.description.strip()


names = st.text(alphabet="abcdefghij-_.", min_size=1, max_size=8).filter(
    lambda n: n not in (".", "..") and n not in ("evals", ".git", ".DS_Store", "Thumbs.db")
)
trees = st.dictionaries(
    st.lists(names, min_size=1, max_size=3).map("/".join),
    st.binary(max_size=40),
    min_size=1,
    max_size=6,
).filter(lambda t: not any(a != b and b.startswith(a + "/") for a in t for b in t))


def _build(root: Path, files: dict[str, bytes], order: list[str]) -> Path:
    folder = make_skill(root, "s")
    for rel in order:
        write(folder / "payload", {rel: files[rel]})
    return folder


@SETTINGS
@given(files=trees, evals=trees, data=st.data())
def test_digest_invariants(files: dict[str, bytes], evals: dict[str, bytes], data) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        forward = _build(base / "a", files, sorted(files))
        shuffled = data.draw(st.permutations(sorted(files)))
        backward = _build(base / "b", files, list(shuffled))
        reference = digest(forward)
        # creation order does not matter
        assert digest(backward) == reference
        # anything under evals/ does not matter, nor do modes
        write(backward / "evals", evals)
        for rel in files:
            os.chmod(backward / "payload" / rel, 0o700)
        assert digest(backward) == reference
        # any byte of a file matters
        victim = data.draw(st.sampled_from(sorted(files)))
        target = backward / "payload" / victim
        target.write_bytes(target.read_bytes() + b"!")
        assert digest(backward) != reference
        target.write_bytes(files[victim])
        assert digest(backward) == reference
        # any name matters
        target.rename(target.with_name(target.name + "x"))
        assert digest(backward) != reference
        shutil.rmtree(backward)
