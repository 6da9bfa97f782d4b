"""The reuse path of a run (docs/statistics.md): a baseline or incumbent session identical to an
earlier run's is taken from the cache, and its checks run again on its kept workspace."""

from __future__ import annotations

import asyncio
import shutil

from msgspec.structs import replace

from skillbench.engine.reuse import Reused, arm_identity, cache_key, session_inputs
from skillbench.engine.session import Sessions, handover_notes
from skillbench.evals.netreport import phase_hosts
from skillbench.results.records import CANDIDATE, SessionRecord, session_key
from skillbench.results.transcript import Transcript, read_trace
from skillbench.sandbox.base import SandboxError, SandboxProvider, WorkspaceRefused
from skillbench.sandbox.egress import phase_proxy
from skillbench.sandbox.stage import recheck_phase


class Reusing(Sessions):
    """The Runner's reuse key and reused sessions."""

    def reuse_key(self, name: str, arm: str, rep: int) -> str | None:
        """The cache key of a session that does not depend on the candidate (None for the
        candidate, and under --fresh-baseline)."""
        if arm == CANDIDATE or self.opts.fresh_baseline:
            return None
        incumbent = self.plan.incumbent.digest if self.plan.incumbent else None
        library = self.plan.library.digest if self.plan.library else None
        return cache_key(
            session_inputs(
                self.specs[name],
                self.skill_dir,
                arm=arm_identity(arm, incumbent, library),
                agent=self.plan.agent,
                agent_options=self.settings.agents.get(self.plan.agent, {}),
                sandbox=self.spec_for(name),
                agent_version=self.plan.agent_version,
                model=self.plan.model,
                endpoint=self.plan.endpoints["agent"].url,
                rep=rep,
            )
        )

    async def reused(
        self, provider: SandboxProvider, hit: Reused, name: str, arm: str, rep: int
    ) -> SessionRecord:
        """A cached session as this run's: its transcript copied into the run folder, its
        checks run again on its workspace against the current check files (a session is
        reused, never a score)."""
        key = session_key(name, arm, rep)
        transcript = None
        if hit.transcript is not None:
            dest = self.run_dir / "transcripts" / f"{key}.jsonl"
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(hit.transcript, dest)
            transcript = str(dest.relative_to(self.run_dir))
        record = replace(
            hit.record,
            key=key,
            session=name,
            arm=arm,
            rep=rep,
            transcript=transcript,
            reused_from=hit.run_id,
            checks={},
            notes=[],
        )
        text = read_trace(self.run_dir / transcript) if transcript else Transcript([])
        log = self.run_dir / "network" / f"{key}.jsonl"
        hosts = phase_hosts(self.specs[name].network.verifier, self.settings.network)
        async with phase_proxy(self.spec_for(name), hosts, log, "verifier") as check_box:
            try:
                staged = await recheck_phase(
                    provider,
                    check_box,
                    hit.workspace,
                    self.skill_dir,
                    self.run_dir / "tmp",
                    self.specs[name].harbor,
                )
            except WorkspaceRefused as exc:
                return self.refused_workspace(record, str(exc))
            except (SandboxError, ConnectionError, OSError) as exc:
                return replace(record, outcome="error", error=f"sandbox: {exc}")
            try:
                assert staged.checker is not None
                record = replace(record, notes=handover_notes(staged.handover))
                return await self.score(staged.checker, record, text, hit.record.checks)
            except (SandboxError, ConnectionError) as exc:
                return replace(record, outcome="error", error=f"sandbox: {exc}")
            finally:
                self.closing.add(asyncio.ensure_future(staged.close()))
