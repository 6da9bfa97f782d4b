"""Baseline reuse (docs/statistics.md): baseline and incumbent sessions do not depend on the
candidate, so a finished one is kept and reused by later runs of any version of the skill.

An entry is keyed by a digest of everything the session does depend on: the case as loaded
(task, checks, files, setup, limits, and the fixture's bytes, not its path), which arm it was
(the baseline, the A/A twin, or the incumbent's digest, and the library siblings staged beside
it), the agent, its version and its options (ambient skills kept or not), the model and the
endpoint it is reached at (a run against a stub server never seeds a real run's cache), the
sandbox image and limits, the repetition, and skillbench's own version. Any change to any of
them is another key, so an entry never crosses an input change. Entries live under
$SKILLBENCH_HOME/sessions/; only scored sessions (pass or fail) are kept.

What is reused is the session, never its score (docs/trust.md): an entry keeps the workspace as
its check phase was handed it (`workspace.tar`), and a run that reuses it runs the checks
again there, against the check files as they are now. The files under evals/ are therefore
not in the key: editing tests/expected.txt or a verify.sh changes the outcome exactly as a
fresh session would, without running the agent again.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

import msgspec

import skillbench.util.lossless as lossless
from skillbench.evals.model import Session
from skillbench.evals.skills import tree_digest
from skillbench.results.records import SessionRecord
from skillbench.sandbox.base import SandboxSpec
from skillbench.team.receipts import home
from skillbench.util.inputs import MAX_JSON, read_capped
from skillbench.version import __version__


class SessionInputs(msgspec.Struct, frozen=True, kw_only=True):
    """Everything a baseline or incumbent session depends on."""

    session: Session
    fixture_digest: str | None
    arm: str  # "baseline", "aa", or "incumbent <digest>"
    agent: str
    agent_version: str
    agent_options: dict[str, str]  # [agents.<name>]: ambient_skills, ...
    model: str
    endpoint: str  # where the model is reached: scheme and host (models.origin)
    script_digest: str | None  # a scripted model's script: its bytes are the "model"
    sandbox: SandboxSpec
    rep: int
    engine_version: str = __version__


def session_inputs(
    session: Session,
    skill_dir: Path,
    *,
    arm: str,
    agent: str,
    agent_version: str,
    agent_options: dict[str, str],
    model: str,
    endpoint: str,
    sandbox: SandboxSpec,
    rep: int,
) -> SessionInputs:
    """The inputs of one session; the case's file path is left out, its fixture's bytes in."""
    fixture = tree_digest(Path(session.fixture), skill_dir) if session.fixture else None
    # where the files are is not an input; what is in them is (the image is in `sandbox`)
    bare = msgspec.structs.replace(session, path="", fixture=None, containerfile=None)
    return SessionInputs(
        session=bare,
        fixture_digest=fixture,
        arm=arm,
        agent=agent,
        agent_version=agent_version,
        agent_options=agent_options,
        model=model,
        endpoint=endpoint,
        script_digest=_script_digest(model),
        sandbox=sandbox,
        rep=rep,
    )


def arm_identity(arm: str, incumbent_digest: str | None, library_digest: str | None) -> str:
    """What an arm is, for the key: the incumbent arm is the bytes it ran; a library arm's
    baseline also stages the library's siblings."""
    found = f"incumbent {incumbent_digest}" if arm == "incumbent" and incumbent_digest else arm
    return f"{found} beside {library_digest}" if library_digest else found


def cache_key(inputs: SessionInputs) -> str:
    return hashlib.sha256(msgspec.json.encode(inputs)).hexdigest()


class Reused(msgspec.Struct, frozen=True):
    """A cached session: its record (as its run journaled it), transcript, workspace (the
    archive its checks run on) and run."""

    record: SessionRecord
    run_id: str
    transcript: Path | None
    workspace: Path


class SessionCache:
    """Finished baseline and incumbent sessions, by cache_key()."""

    def __init__(self, root: Path | None = None):
        self.root = root or home() / "sessions"

    def _folder(self, key: str) -> Path:
        return self.root / key[:2] / key

    def get(self, key: str) -> Reused | None:
        folder = self._folder(key)
        try:
            entry = lossless.loads(read_capped(folder / "entry.json", MAX_JSON), _Entry)
        except (OSError, msgspec.DecodeError):
            return None
        transcript, workspace = folder / "transcript.jsonl", folder / "workspace.tar"
        if not workspace.is_file():  # its checks could not run again: not reusable
            return None
        return Reused(
            entry.record, entry.run_id, transcript if transcript.is_file() else None, workspace
        )

    def put(
        self,
        key: str,
        record: SessionRecord,
        run_id: str,
        transcript: Path | None,
        workspace: Path | None,
    ) -> None:
        """Keep a scored session with its workspace archive (atomically: a reader sees all of
        an entry or none)."""
        if record.outcome not in ("pass", "fail") or workspace is None or not workspace.is_file():
            return
        folder = self._folder(key)
        if folder.is_dir():
            return
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".new-", dir=folder.parent))
        try:
            if transcript is not None and transcript.is_file():
                shutil.copyfile(transcript, tmp / "transcript.jsonl")
            shutil.copyfile(workspace, tmp / "workspace.tar")
            (tmp / "entry.json").write_bytes(lossless.dumps(_Entry(record, run_id)))
            os.rename(tmp, folder)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)  # another run kept it first, or no space


class _Entry(msgspec.Struct, frozen=True):
    record: SessionRecord
    run_id: str


def _script_digest(model: str) -> str | None:
    """The sha256 of the script a `scripted/<name>` model plays (None for a real model):
    an edited script is another model, so its sessions are never served to the old one's."""
    from skillbench.models import parse_model
    from skillbench.models.scripted import find_script

    ref = parse_model(model)
    if not ref.scripted:
        return None
    return hashlib.sha256(find_script(ref.name).read_bytes()).hexdigest()
