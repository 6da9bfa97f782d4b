"""Another tool's `eval.yaml`, read where it stands: Vally's (`stimuli`, and the `scenarios`
of dotnet/skills' skill-validator it grew from) and Skillgrade's (`version`, `tasks` with an
`instruction`). Two tools share the file name, so the schema is read from the content, never
from the name; a file of neither schema is reported, not guessed at (docs/formats.md).

Deterministic graders stay deterministic: each becomes an existing check kind or a command;
only Vally's `prompt` grader, a stimulus `rubric` and Skillgrade's `llm_rubric` become
`expect:` checks for the model grader. A grader the sandbox cannot serve (a tool it does not
offer, another skill) is a row skipped for the environment, reported with the reason. Every
field is reported as a note saying what it became, or why it is not honoured.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from pathlib import Path
from typing import Any, Literal

from skillbench.evals.cases import bad_file_path
from skillbench.evals.fields import Report, type_name
from skillbench.evals.model import (
    CASE_TIMEOUT_MINUTES,
    MAX_TIMEOUT_MINUTES,
    Case,
    Check,
    timeout_note,
)
from skillbench.evals.problems import Problem, SpecError
from skillbench.evals.yamlsrc import KeyPath, load_yaml_file, read_text

EVAL_YAML_NAMES = ("eval.yaml", "eval.yml")
Schema = Literal["vally", "skill-validator", "skillgrade"]
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
# a glob as a path pattern: nothing a shell would read as more than a pattern
_GLOB = re.compile(r"^[A-Za-z0-9._/*?\[\]{},+@=-]+$")
SKILLGRADE_PASS = 0.5  # Skillgrade passes a trial whose (weighted) reward is at least 0.5
VALLY_TIMEOUT = 120  # seconds: Vally's `config.timeout` default (2m)
SKILLGRADE_TIMEOUT = 300  # seconds: Skillgrade's `defaults.timeout`
VALLY_PROGRAM_TIMEOUT = 60  # seconds: a Vally `program` grader's `timeout` default
_VALLY_RESERVED = frozenset({"EVALUATE_WORKSPACE", "EVALUATE_GRADER_INPUT"})
# Vally's budget graders (its Grader Catalog): limits on its trajectory's metrics
_BUDGETS = {
    "error-count": "a limit on error events",
    "token-budget": "a total token budget",
    "tool-call-count": "a limit on tool calls",
    "turn-count": "a limit on agent turns",
    "wall-time": "a wall-clock limit",
}


def eval_yaml_files(skill_dir: Path) -> list[Path]:
    """`eval.yaml`/`eval.yml` at the skill root and in evals/ (the tools' quickstarts)."""
    return [
        p
        for folder in (skill_dir, skill_dir / "evals")
        for name in EVAL_YAML_NAMES
        if (p := folder / name).is_file()
    ]


def schema_of(data: Any) -> Schema | None:
    """Which tool's eval.yaml this is, from its content alone."""
    if not isinstance(data, dict):
        return None
    if isinstance(data.get("stimuli"), list):
        return "vally"
    tasks = data.get("tasks")
    if (
        isinstance(tasks, list)
        and tasks
        and all(isinstance(t, dict) for t in tasks)
        and (any("instruction" in t for t in tasks) or str(data.get("version")) == "1")
    ):
        return "skillgrade"
    scenarios = data.get("scenarios")
    if isinstance(scenarios, list) and any(
        isinstance(s, dict) and "prompt" in s for s in scenarios
    ):
        return "skill-validator"
    return None


def load_eval_yaml(
    path: Path, skill_dir: Path, skill_name: str | None = None
) -> tuple[list[Case], list[Problem]]:
    """The cases of a Vally or Skillgrade eval.yaml; raises `SpecError` with every error."""
    doc = load_yaml_file(path)
    rep = Report(doc)
    schema = schema_of(doc.value)
    if schema is None:
        rep.warn(
            (),
            "an eval.yaml of no schema skillbench reads (Vally's has `stimuli`, Skillgrade's "
            "`tasks` with `instruction`): not used; write evals/cases/*.yaml, or point "
            "`skillbench import` at the tool's own file",
        )
        return [], rep.warnings()
    reader = _Reader(rep, path, skill_dir, skill_name or skill_dir.resolve().name)
    cases = reader.skillgrade() if schema == "skillgrade" else reader.vally(schema)
    seen: dict[str, int] = {}
    out = []
    for case, at in cases:
        if case.name in seen:
            rep.error(at, f"gives the case name {case.name!r} again; give each its own name")
            continue
        seen[case.name] = 1
        out.append(case)
    rep.raise_if_errors()
    return out, rep.warnings()


class _Reader:
    def __init__(self, rep: Report, path: Path, skill_dir: Path, skill_name: str):
        self.rep, self.path, self.skill_dir, self.skill = rep, path, skill_dir, skill_name
        self.data: dict[str, Any] = rep.doc.value
        self.not_graded: list[str] = []  # the current case's rows skipped (environment)

    # -- shared -------------------------------------------------------------------------

    def note(self, at: KeyPath, message: str) -> None:
        self.rep.note(at, message, key=True)

    def skip(self, at: KeyPath, message: str) -> None:
        """A row that cannot be graded here: skipped (environment), never failed."""
        self.rep.warn(at, f"row skipped (environment): {message}")
        self.not_graded.append(f"line {self.rep.doc.line(at)}: {message}")

    def name(self, prefix: str, value: Any, at: KeyPath, index: int) -> str | None:
        if value is None:
            value = str(index + 1)
            self.rep.note(at, f"no `name`; it runs as {prefix}-{value} (its place in the list)")
        if not isinstance(value, str | int) or isinstance(value, bool) or not str(value).strip():
            self.rep.error((*at, "name"), f"`name` must be a string, got {type_name(value)}")
            return None
        return f"{prefix}-" + (_SAFE.sub("-", str(value).strip()).strip("-") or str(index + 1))

    def text(self, at: KeyPath, value: Any, field: str, *, files: bool = False) -> str | None:
        """A string field; with `files`, Skillgrade's file reference (a one-line value naming
        a file beside the eval.yaml is that file's content)."""
        if not isinstance(value, str) or not value.strip():
            self.rep.error(at, f"`{field}` must be non-empty text, got {type_name(value)}")
            return None
        value = value.strip()
        if files and "\n" not in value:
            target = (self.path.parent / value).resolve()
            if target.is_file():
                home = self.path.parent.resolve()
                if not (
                    target.is_relative_to(self.skill_dir.resolve()) or target.is_relative_to(home)
                ):
                    self.rep.error(at, f"`{field}` file {value!r} is outside the skill folder")
                    return None
                try:
                    return read_text(target).strip()
                except SpecError as exc:
                    self.rep.problems += exc.problems
                    return None
        return value

    def staged(self, at: KeyPath, src: Any, dest: Any) -> tuple[str, str] | None:
        """One file copied into the workspace: (dest, content), or None (reported)."""
        if not isinstance(src, str) or not src.strip():
            self.rep.error(at, f"a file needs `src`, a path beside the eval.yaml; got {src!r}")
            return None
        if not isinstance(dest, str) or not dest.strip():
            self.rep.error(at, f"a file needs `dest`, its path in the workspace; got {dest!r}")
            return None
        root = self.skill_dir.resolve()
        target = (self.path.parent / src).resolve()
        # a file named with --evals outside the skill brings its own folder (its fixtures)
        home = self.path.parent.resolve()
        outside = not self.path.resolve().is_relative_to(root)
        if not (target.is_relative_to(root) or (outside and target.is_relative_to(home))):
            where = "the skill folder" + (" and the eval file's folder" if outside else "")
            self.rep.error(at, f"`src` {src!r} leaves {where}; give a path inside it")
            return None
        if dest.startswith("/"):
            self.rep.warn(
                at,
                f"`dest` {dest!r} is outside the workspace: not honoured (skillbench stages "
                "files in the workspace only); the session runs without it",
            )
            return None
        reason = bad_file_path(dest)
        if reason:
            self.rep.error(at, f"`dest` {dest!r} {reason}")
            return None
        if not target.is_file():
            self.rep.warn(
                at,
                f"`src` {src!r} is not a file (looked for {target}); folders and missing files "
                "are not staged, the session runs without it",
            )
            return None
        try:
            content = read_text(target)
        except SpecError:
            self.rep.warn(at, f"`src` {src!r} is not a small text file: not staged")
            return None
        if target.is_relative_to(root) and not target.is_relative_to(root / "evals"):
            self.rep.warn(
                at,
                f"`src` {src!r} is part of the skill (outside evals/): staged into every arm's "
                "workspace, it shows the baseline part of the skill (contamination); keep "
                "inputs under evals/",
            )
        return dest.replace("\\", "/").removeprefix("./"), content

    def minutes(self, at: KeyPath, seconds: float) -> int:
        value = max(1, math.ceil(seconds / 60))
        if value > CASE_TIMEOUT_MINUTES:
            self.rep.warn(at, f"timeout above {CASE_TIMEOUT_MINUTES} minutes; capped")
        elif value > MAX_TIMEOUT_MINUTES:
            self.rep.note(at, timeout_note(value))
        return min(value, CASE_TIMEOUT_MINUTES)

    # -- Vally ----------------------------------------------------------------------------

    def vally(self, schema: Schema) -> list[tuple[Case, KeyPath]]:
        key = "stimuli" if schema == "vally" else "scenarios"
        what = "Vally eval.yaml" if schema == "vally" else "skill-validator eval.yaml (Vally's)"
        self.note((key,), f"read as a {what}: each item is a case; its graders are its rows")
        timeout = VALLY_TIMEOUT
        for top in ("config", "defaults"):
            block = self.data.get(top)
            if isinstance(block, dict):
                for field, value in block.items():
                    if field == "timeout":
                        got = _duration(value)
                        if got is None:
                            self.rep.warn((top, field), f"`timeout` {value!r} is not a duration")
                        else:
                            timeout = got
                            self.note((top, field), "`timeout` becomes each case's time limit")
                    elif field == "runs":
                        self.note((top, field), "`runs`: not honoured; give `--runs N`")
                    elif field in ("model", "judge_model", "executor"):
                        self.note(
                            (top, field),
                            f"`{field}`: not honoured; skillbench's --model/--grader decide",
                        )
                    else:
                        self.note((top, field), f"`{top}.{field}` is not used")
        shared = self.data.get("environment")
        for field in self.data:
            if field in (key, "config", "defaults", "environment"):
                continue
            if field == "scoring":
                self.scoring()
            elif field in ("name", "description", "version", "type", "tags"):
                self.note((field,), f"`{field}` is informational")
            else:
                self.note((field,), f"`{field}` is not a field skillbench knows; not used")
        items = self.data.get(key)
        out = []
        for i, item in enumerate(items or ()):
            at: KeyPath = (key, i)
            if not isinstance(item, dict):
                self.rep.error(
                    at, f"a stimulus is a mapping {{name, prompt}}, got {type_name(item)}"
                )
                continue
            case = self.stimulus(at, item, shared, timeout, schema)
            if case is not None:
                out.append((case, at))
        if not items:
            self.rep.warn((key,), f"`{key}` is empty: nothing to run")
        return out

    def scoring(self) -> None:
        """Vally combines a stimulus's grader scores by `scoring.weights` and passes it at
        `scoring.threshold`; with no threshold it takes the graders' binary verdicts (every
        grader passing), which is skillbench's rule: each arm passes a case when every row
        passes, the verdict the paired comparison counts. A threshold is a difference."""
        block = self.data["scoring"]
        if not isinstance(block, dict):
            self.rep.error(("scoring",), "`scoring` must be a mapping {weights, threshold}")
            return
        for key in block:
            if key == "threshold":
                self.rep.warn(
                    ("scoring", key),
                    f"`threshold` {block[key]!r}: not applied; Vally passes a stimulus when its "
                    "graders' weighted score reaches it, skillbench when every grader passes "
                    "(each arm's pass/fail per case is what the paired verdict counts), so a "
                    "stimulus passing only partly passes there and fails here",
                )
            elif key == "weights":
                self.note(("scoring", key), _WEIGHT)
            else:
                self.note(("scoring", key), f"`scoring.{key}` is not a Vally scoring field")

    def stimulus(
        self, at: KeyPath, item: dict[str, Any], shared: Any, timeout: int, schema: Schema
    ) -> Case | None:
        self.not_graded = []
        name = self.name("vally", item.get("name", item.get("id")), at, at[-1])  # type: ignore[arg-type]
        prompt = item.get("prompt", item.get("input"))
        if name is None:
            return None
        if not isinstance(prompt, str) or not prompt.strip():
            self.rep.error(at, "a stimulus needs `prompt`: the task the agent is given")
            return None
        checks: list[Check] = []
        files: dict[str, str] = {}
        setup: list[str] = []
        fields: dict[str, Any] = {}
        negative = False
        for env_at, env in (((), shared), ((*at, "environment"), item.get("environment"))):
            if env is not None:
                self.environment(env_at, env, files, setup)
        if schema == "skill-validator" and isinstance(item.get("setup"), dict):
            self.validator_setup((*at, "setup"), item["setup"], files, setup)
        rubric = item.get("rubric")
        graders = item.get("graders", item.get("assertions"))
        gkey = "graders" if "graders" in item else "assertions"
        has_prompt_grader = False
        for j, grader in enumerate(graders or () if isinstance(graders, list) else ()):
            where = (*at, gkey, j)
            if not isinstance(grader, dict) or not isinstance(grader.get("type"), str):
                self.rep.error(where, f"a grader is a mapping with `type`, got {type_name(grader)}")
                continue
            kind = grader["type"].replace("_", "-")
            if "weight" in grader:
                self.note((*where, "weight"), _WEIGHT)
            config = grader.get("config")
            if config is None:
                config = {k: v for k, v in grader.items() if k not in ("type", "name", "weight")}
            if not isinstance(config, dict):
                self.rep.error(
                    (*where, "config"), f"`config` must be a mapping, got {type_name(config)}"
                )
                continue
            if kind == "prompt":
                has_prompt_grader = True
            if kind == "skill-invocation":
                negative = self.skill_invocation(where, config) or negative
                continue
            checks += self.vally_grader(
                where, kind, config, rubric, {"name": str(name), "prompt": prompt}
            )
        if graders is not None and not isinstance(graders, list):
            self.rep.error((*at, gkey), f"`{gkey}` must be a list, got {type_name(graders)}")
        if rubric is not None:
            items = rubric if isinstance(rubric, list) else [rubric]
            texts = [r.strip() for r in items if isinstance(r, str) and r.strip()]
            if len(texts) != len(items):
                self.rep.error((*at, "rubric"), "`rubric` must be a list of criteria (text)")
            line = self.rep.doc.line((*at, "rubric"))
            checks += [Check("expect", t, line) for t in texts]
            how = "the `prompt` grader's rubric" if has_prompt_grader else "rubric criteria"
            self.note(
                (*at, "rubric"),
                f"{len(texts)} {how} become `expect:` checks, graded by the model grader "
                "(pass/fail each, where Vally's judge scores the set)",
            )
        constraints = item.get("constraints")
        flat: dict[str, Any] = {
            k: item[k]
            for k in ("expect_tools", "reject_tools", "max_turns", "max_tokens")
            if k in item
        }
        for c_at, block in (((*at, "constraints"), constraints), (at, flat)):
            if isinstance(block, dict):
                checks += self.constraints(c_at, block, fields)
        value = item.get("timeout")
        if value is not None:
            secs = _duration(value)
            if secs is None:
                self.rep.warn((*at, "timeout"), f"`timeout` {value!r} is not a duration")
            else:
                timeout = secs
        fields["timeout_minutes"] = self.minutes((*at, "timeout"), timeout)
        if "expect_activation" in item:
            if isinstance(item["expect_activation"], bool):
                negative = negative or not item["expect_activation"]
                self.note(
                    (*at, "expect_activation"),
                    "`expect_activation: false`: a task the skill is not for; the candidate "
                    "loading the skill loses the row"
                    if not item["expect_activation"]
                    else "`expect_activation: true` is skillbench's default",
                )
            else:
                self.rep.error(
                    (*at, "expect_activation"), "`expect_activation` must be true or false"
                )
        known = {
            "name",
            "id",
            "prompt",
            "input",
            "graders",
            "assertions",
            "rubric",
            "environment",
            "constraints",
            "timeout",
            "expect_activation",
            "setup",
            *flat,
        }
        for key in item:
            if key in known:
                continue
            why = "informational" if key in ("tags", "description") else "not used"
            self.note((*at, key), f"`{key}` is {why}")
        if not checks and not negative:
            self.rep.warn(
                at,
                "this stimulus has no gradable rows: it is skipped (environment)"
                if self.not_graded
                else "this stimulus has no gradable rows: every row will be a tie",
            )
        return Case(
            name=name,
            path=str(self.path),
            task=prompt,
            checks=tuple(checks),
            files=files,
            setup=" && ".join(setup) or None,
            expect_activation=not negative,
            not_graded=tuple(self.not_graded),
            **fields,
        )

    def environment(self, at: KeyPath, env: Any, files: dict[str, str], setup: list[str]) -> None:
        if isinstance(env, str):
            self.rep.warn(
                at,
                f"`environment` {env!r} names an environment of .vally.yaml: not honoured "
                "(its MCP servers and files are not set up); the session runs without it",
            )
            return
        if not isinstance(env, dict):
            self.rep.error(at, f"`environment` must be a mapping, got {type_name(env)}")
            return
        for key, value in env.items():
            where = (*at, key)
            if key == "files" and isinstance(value, list):
                for k, entry in enumerate(value):
                    if isinstance(entry, dict):
                        got = self.staged(
                            (*where, k), entry.get("src"), entry.get("dest", entry.get("src"))
                        )
                        if got:
                            files[got[0]] = got[1]
                    else:
                        self.rep.error((*where, k), "an `environment.files` item is {src, dest}")
                self.note(where, "files are staged in the workspace at `dest`")
            elif key == "commands" and isinstance(value, list):
                cmds = [c for c in value if isinstance(c, str) and c.strip()]
                setup += cmds
                self.note(where, "`commands` become the case's `setup`, run in the workspace first")
            elif key == "skills":
                self.note(
                    where,
                    "`skills`: not honoured; skillbench loads the skill under test in the "
                    "candidate arm and none in the baseline",
                )
            else:
                self.note(where, f"`environment.{key}` is not used")

    def validator_setup(
        self, at: KeyPath, block: dict[str, Any], files: dict[str, str], setup: list[str]
    ) -> None:
        for key, value in block.items():
            where = (*at, key)
            if key == "files" and isinstance(value, list):
                for k, entry in enumerate(value):
                    if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
                        self.rep.error(
                            (*where, k), "a `setup.files` item is {path, source|content}"
                        )
                        continue
                    if isinstance(entry.get("content"), str):
                        reason = bad_file_path(entry["path"])
                        if reason:
                            self.rep.error((*where, k), f"`path` {entry['path']!r} {reason}")
                        else:
                            files[entry["path"]] = entry["content"]
                    else:
                        got = self.staged((*where, k), entry.get("source"), entry["path"])
                        if got:
                            files[got[0]] = got[1]
                self.note(where, "files are staged in the workspace at `path`")
            elif key == "commands" and isinstance(value, list):
                setup += [c for c in value if isinstance(c, str) and c.strip()]
                self.note(where, "`commands` become the case's `setup`")
            else:
                self.note(where, f"`setup.{key}` is not honoured")

    def skill_invocation(self, at: KeyPath, config: dict[str, Any]) -> bool:
        """Vally's skill-invocation: of this skill, what activation measures; True when the
        skill must stay dormant. Another skill is not loaded here: skipped."""
        negative = False
        for field in ("required", "disallowed"):
            names = config.get(field) or []
            for n in names if isinstance(names, list) else [names]:
                if str(n) == self.skill:
                    if field == "disallowed":
                        negative = True
                    self.note(
                        at,
                        f"skill-invocation `{field}` {n!r}: the skill under test; activation "
                        "decides it" + (" (a dormancy case)" if field == "disallowed" else ""),
                    )
                else:
                    self.skip(at, f"skill-invocation of {n!r}: only the skill under test is loaded")
        return negative

    def vally_grader(
        self,
        at: KeyPath,
        kind: str,
        config: dict[str, Any],
        rubric: Any,
        stimulus: dict[str, str] | None = None,
    ) -> list[Check]:
        line = self.rep.doc.line(at)

        def need(field: str) -> str | None:
            value = config.get(field)
            if isinstance(value, str) and value:
                return value
            self.rep.error(at, f"`{kind}` needs `config.{field}`")
            return None

        def made(checks: list[Check]) -> list[Check]:
            if checks:
                self.note(at, f"`{kind}` becomes " + "; ".join(f"`{c.name}`" for c in checks))
            return checks

        if kind in ("output-contains", "output-not-contains"):
            text = config.get("substring", config.get("value"))
            if not isinstance(text, str) or not text:
                self.rep.error(at, f"`{kind}` needs `config.substring`")
                return []
            k = "transcript_matching" if kind == "output-contains" else "no_transcript_matching"
            self.note(at, f"`{kind}` reads the whole transcript (Vally: the agent's output)")
            return made([Check(k, re.escape(text), line)])
        if kind in ("output-matches", "output-not-matches"):
            pattern = need("pattern")
            if pattern is None:
                return []
            try:
                re.compile(pattern)
            except re.error as exc:
                self.rep.warn(at, f"invalid regex: {exc}; the row will fail")
            k = "transcript_matching" if kind == "output-matches" else "no_transcript_matching"
            return made([Check(k, pattern, line)])
        if kind in ("file-exists", "file-not-exists"):
            path = need("path")
            if path is None or not self.glob_ok(at, path):
                return []
            if not re.search(r"[*?\[{]", path):
                return made(
                    [Check("file_exists" if kind == "file-exists" else "file_absent", path, line)]
                )
            test = f"shopt -s globstar nullglob dotglob; set -- {path}; [ $# -gt 0 ]"
            if kind == "file-not-exists":
                test += " && exit 1 || exit 0"
            return made([Check("command_succeeds", "bash -c " + shlex.quote(test), line)])
        if kind in ("file-contains", "file-not-contains", "file-matches", "file-not-matches"):
            path = need("path")
            field = "value" if "contains" in kind else "pattern"
            value = need(field)
            if path is None or value is None or not self.glob_ok(at, path):
                return []
            negate = "-not-" in kind or config.get("negate") is True
            flag = "-qF" if "contains" in kind else "-qP"
            found = (
                f'shopt -s globstar nullglob dotglob; for f in {path}; do [ -f "$f" ] && '
                f'grep {flag} -e {shlex.quote(value)} -- "$f" && exit {1 if negate else 0}; '
                f"done; exit {0 if negate else 1}"
            )
            return made([Check("command_succeeds", "bash -c " + shlex.quote(found), line)])
        if kind == "run-command":
            script = self.run_command(at, config)
            return (
                made([Check("command_succeeds", "bash -c " + shlex.quote(script), line)])
                if script
                else []
            )
        if kind == "tool-calls":
            return made(self.tool_calls(at, config))
        if kind == "prompt":
            text = config.get("prompt")
            for field in config:
                if field != "prompt":
                    self.note(
                        at, f"`prompt` grader `{field}`: not honoured (pass/fail per criterion)"
                    )
            if isinstance(text, str) and text.strip():
                return made([Check("expect", text.strip(), line)])
            if rubric is None:
                self.rep.warn(
                    at,
                    "a `prompt` grader with neither `config.prompt` nor a stimulus `rubric`: "
                    "nothing to grade",
                )
            return []
        if kind in ("completed", "exit-success"):
            self.note(at, f"`{kind}`: a session that errors is never scored anyway; not a row")
            return []
        if kind == "pairwise":
            self.note(at, "`pairwise`: skillbench's pairwise judge is the case `judge:`; not a row")
            return []
        if kind == "program":
            program = self.program(at, config, stimulus)
            return made([program]) if program else []
        if kind == "panel":  # N judges on one rubric: skillbench's grader grades each criterion
            return made(self.panel(at, config, rubric))
        if kind in _BUDGETS:
            self.skip(at, f"`{kind}` ({_BUDGETS[kind]}) reads Vally's trajectory metrics")
            return []
        self.skip(at, f"grader `{kind}` is not one skillbench can run")
        return []

    def program(
        self, at: KeyPath, config: dict[str, Any], stimulus: dict[str, str] | None
    ) -> Check | None:
        """Vally's `program` grader: its program runs in the checker from the workspace (or
        `sub_path`), with EVALUATE_WORKSPACE and EVALUATE_GRADER_INPUT as Vally sets them
        (the input written by the host from the transcript); its GraderResult, or its exit
        code when it prints nothing, decides the row."""
        program, args = config.get("program"), config.get("args") or []
        if not isinstance(program, str) or not program.strip():
            self.rep.error(at, "`program` needs `config.program`: the program to run")
            return None
        if not isinstance(args, list) or not all(isinstance(a, str | int | float) for a in args):
            self.rep.error(at, "`program` `args` must be a list of strings")
            return None
        words = [program, *map(str, args)]
        command = " ".join(words) if config.get("shell") is True else shlex.join(words)
        env = config.get("env") or {}
        if not isinstance(env, dict):
            self.rep.error(at, "`program` `env` must be a mapping of names to values")
            return None
        reserved = sorted(k for k in env if str(k).upper() in _VALLY_RESERVED)
        if reserved:  # Vally refuses them too: the grader owns their values
            self.rep.error(at, f"`program` `env` may not set {', '.join(reserved)}")
            return None
        if env:
            command = shlex.join(["env", *(f"{k}={v}" for k, v in env.items())]) + " " + command
        sub = config.get("sub_path")
        if isinstance(sub, str) and sub.strip("/\\"):
            sub = sub.replace("\\", "/")
            if bad_file_path(sub.rstrip("/")):
                self.rep.error(at, f"`sub_path` {sub!r} must stay inside the workspace")
                return None
            command = f"cd {shlex.quote(sub)} && {command}"
        timeout = VALLY_PROGRAM_TIMEOUT
        if config.get("timeout") is not None:
            got = _duration(config["timeout"])
            if got is None:
                self.rep.warn(at, f"`timeout` {config['timeout']!r} is not a duration")
            else:
                timeout = got
        for field in config:
            if field not in ("program", "args", "shell", "env", "sub_path", "timeout"):
                self.note(at, f"`program` `{field}` is not a field of Vally's program grader")
        for arg in map(str, args):
            near = self.path.parent / arg
            if not arg.startswith(("/", "-")) and near.is_file():
                self.rep.warn(
                    at,
                    f"`{arg}` is beside the eval.yaml, but the program runs from the workspace "
                    "(as in Vally): stage it with environment.files, or it is not found",
                )
        self.note(
            at,
            "`program` runs in the checker from the workspace with EVALUATE_WORKSPACE and "
            "EVALUATE_GRADER_INPUT (Vally's GraderInput, written from the transcript); its "
            "GraderResult's `passed`, or its exit code when it prints nothing, decides",
        )
        context = json.dumps({"stimulus": stimulus or {}, "config": config}, default=str)
        return Check(
            "grader", command, self.rep.doc.line(at), timeout=float(timeout), program=context
        )

    def panel(self, at: KeyPath, config: dict[str, Any], rubric: Any) -> list[Check]:
        text = config.get("rubric", config.get("prompt"))
        for field in config:
            if field not in ("rubric", "prompt"):
                self.note(at, f"`panel` `{field}`: not honoured (one grader, --grader-runs N)")
        if isinstance(text, str) and text.strip():
            return [Check("expect", text.strip(), self.rep.doc.line(at))]
        if rubric is None:
            self.rep.warn(at, "a `panel` grader with no rubric: nothing to grade")
        return []

    def glob_ok(self, at: KeyPath, path: str) -> bool:
        norm = path.replace("\\", "/")
        if norm.startswith("/") or ".." in norm.split("/") or not _GLOB.match(norm):
            self.rep.error(at, f"path {path!r} must be a workspace-relative path or glob")
            return False
        return True

    def run_command(self, at: KeyPath, config: dict[str, Any]) -> str | None:
        command = config.get("command")
        if not isinstance(command, str) or not command.strip():
            self.rep.error(at, "`run-command` needs `config.command`")
            return None
        args = config.get("args")
        if isinstance(args, list):
            command = shlex.join([command, *map(str, args)])
        env = config.get("env")
        if isinstance(env, dict):
            command = shlex.join(["env", *(f"{k}={v}" for k, v in env.items())]) + " " + command
        sub = config.get("sub_path")
        if isinstance(sub, str) and sub:
            if bad_file_path(sub.rstrip("/") or "."):
                self.rep.error(at, f"`sub_path` {sub!r} must stay inside the workspace")
                return None
            command = f"cd {shlex.quote(sub)} && {command}"
        code = config.get("expected_exit_code", 0)
        want = int(code)
        lines = [
            f'o=$(mktemp); e=$(mktemp); ( {command} ) >"$o" 2>"$e"; rc=$?',
            f'[ "$rc" -eq {want} ] || {{ echo "exit $rc, expected {want}" >&2; exit 1; }}',
        ]
        tests = {
            "stdout_contains": ("-qF", "$o", False),
            "stderr_contains": ("-qF", "$e", False),
            "stdout_matches": ("-qP", "$o", False),
            "stdout_not_matches": ("-qP", "$o", True),
        }
        for field, (flag, stream, negate) in tests.items():
            values = config.get(field)
            for v in values if isinstance(values, list) else [values] if values is not None else []:
                test = f'grep {flag} -e {shlex.quote(str(v))} "{stream}"'
                lines.append(f"{test} && exit 1" if negate else f"{test} || exit 1")
        if isinstance(config.get("timeout"), str | int):
            secs = _duration(config["timeout"])
            if secs and secs > 120:
                self.rep.warn(at, "`timeout` above 120 s: command checks stop at 120 s")
        for field in config:
            if field not in (
                "command",
                "args",
                "env",
                "sub_path",
                "expected_exit_code",
                "timeout",
                *tests,
            ):
                self.note(at, f"`run-command` `{field}` is not honoured")
        lines.append("exit 0")
        return "; ".join(lines)

    def tool_calls(self, at: KeyPath, config: dict[str, Any]) -> list[Check]:
        """A shell tool's command is what command_matching reads; another tool is not one
        the sandbox offers (an MCP server's): that row is skipped."""
        out: list[Check] = []
        line = self.rep.doc.line(at)
        for field, kind in (
            ("required", "command_matching"),
            ("disallowed", "no_command_matching"),
        ):
            entries = config.get(field) or []
            for entry in entries if isinstance(entries, list) else [entries]:
                spec = entry if isinstance(entry, dict) else {"name": str(entry)}
                name, command = spec.get("name"), spec.get("command")
                shell = name is None or _shell_tool(str(name))
                if shell:
                    out.append(Check(kind, str(command) if command else ".", line))
                elif field == "disallowed":
                    self.note(
                        at,
                        f"tool {name!r} is not offered in the sandbox: `disallowed` always holds",
                    )
                else:
                    self.skip(
                        at, f"tool-calls needs the tool {name!r}, which the sandbox does not offer"
                    )
        return out

    def constraints(
        self, at: KeyPath, block: dict[str, Any], fields: dict[str, Any]
    ) -> list[Check]:
        out: list[Check] = []
        for key, value in block.items():
            where = (*at, key)
            if key == "max_turns" and isinstance(value, int) and value > 0:
                fields["max_turns"] = value
                self.note(where, "`max_turns` becomes the case's turn limit")
            elif key in ("expect_tools", "reject_tools") and isinstance(value, list):
                cfg = {"required" if key == "expect_tools" else "disallowed": value}
                out += self.tool_calls(where, cfg)
            else:
                self.note(where, f"`{key}` is not honoured")
        return out

    # -- Skillgrade -----------------------------------------------------------------------

    def skillgrade(self) -> list[tuple[Case, KeyPath]]:
        self.note(
            ("tasks",),
            "read as a Skillgrade eval.yaml: each task is a case; its graders are its rows",
        )
        if str(self.data.get("version", "1")) != "1":
            self.rep.warn(
                ("version",), f"Skillgrade version {self.data['version']!r}: read as version 1"
            )
        defaults = self.data.get("defaults") or {}
        timeout = SKILLGRADE_TIMEOUT
        if isinstance(defaults, dict):
            for key, value in defaults.items():
                if (
                    key == "timeout"
                    and isinstance(value, int | float)
                    and not isinstance(value, bool)
                ):
                    timeout = int(value)
                    self.note(("defaults", key), "`timeout` becomes each case's time limit")
                else:
                    self.note(("defaults", key), _SKILLGRADE_NOT.get(key, f"`{key}` is not used"))
        for key in self.data:
            if key not in ("version", "defaults", "tasks"):
                self.note(
                    (key,), "`skill` is informational" if key == "skill" else f"`{key}` is not used"
                )
        out = []
        for i, task in enumerate(self.data.get("tasks") or ()):
            at: KeyPath = ("tasks", i)
            case = self.task(at, task, timeout)
            if case is not None:
                out.append((case, at))
        return out

    def task(self, at: KeyPath, task: dict[str, Any], timeout: int) -> Case | None:
        name = self.name("skillgrade", task.get("name"), at, at[-1])  # type: ignore[arg-type]
        instruction = self.text(
            (*at, "instruction"), task.get("instruction"), "instruction", files=True
        )
        if name is None or instruction is None:
            return None
        files: dict[str, str] = {}
        for k, entry in enumerate(task.get("workspace") or ()):
            where = (*at, "workspace", k)
            if isinstance(entry, str):  # shorthand: the file under its own name
                entry = {"src": entry, "dest": Path(entry).name}
            if not isinstance(entry, dict):
                self.rep.error(where, "a `workspace` item is {src, dest} or a path")
                continue
            if "chmod" in entry:
                self.note((*where, "chmod"), "`chmod` is not honoured (files are staged as text)")
            got = self.staged(where, entry.get("src"), entry.get("dest"))
            if got:
                files[got[0]] = got[1]
        checks: list[Check] = []
        graders = task.get("graders")
        if not isinstance(graders, list) or not graders:
            self.rep.error((*at, "graders"), "a Skillgrade task needs `graders`")
            graders = []
        for j, grader in enumerate(graders):
            checks += self.skillgrade_grader((*at, "graders", j), grader)
        if len(checks) > 1:
            self.rep.warn(
                (*at, "graders"),
                f"{len(checks)} graders: Skillgrade passes a trial when their weighted score "
                f"reaches {SKILLGRADE_PASS:g}; skillbench passes an arm when every grader "
                f"passes (a script at score >= {SKILLGRADE_PASS:g}), the pass/fail per task the "
                "paired verdict counts, so a trial passing on its heavier graders alone passes "
                "there and fails here",
            )
        fields: dict[str, Any] = {}
        for key, value in task.items():
            where = (*at, key)
            if key in ("name", "instruction", "workspace", "graders"):
                continue
            if key == "timeout" and isinstance(value, int | float) and not isinstance(value, bool):
                timeout = int(value)
            elif key == "solution":
                self.note(where, "`solution` is not run (a native case's `oracle:` is)")
            else:
                self.note(where, _SKILLGRADE_NOT.get(key, f"`{key}` is not used"))
        fields["timeout_minutes"] = self.minutes((*at, "timeout"), timeout)
        if not checks:
            self.rep.warn(at, "this task has no gradable rows: every row will be a tie")
        return Case(
            name=name,
            path=str(self.path),
            task=instruction,
            checks=tuple(checks),
            files=files,
            **fields,
        )

    def skillgrade_grader(self, at: KeyPath, grader: Any) -> list[Check]:
        if not isinstance(grader, dict):
            self.rep.error(at, f"a grader is a mapping with `type`, got {type_name(grader)}")
            return []
        line = self.rep.doc.line(at)
        kind = grader.get("type")
        for key in grader:
            if key == "weight":
                self.note((*at, key), "`weight` is not honoured: each grader is one row")
            elif key == "model":
                self.note((*at, key), "`model` is not honoured; --grader decides")
            elif key == "setup":
                self.rep.warn(
                    (*at, key),
                    "`setup` (installed into Skillgrade's image) is not run: the grader finds "
                    "only what skillbench's sandbox has",
                )
            elif key not in ("type", "run", "rubric"):
                self.note((*at, key), f"`{key}` is not used")
        if kind == "deterministic":
            script = self.text((*at, "run"), grader.get("run"), "run", files=True)
            if script is None:
                return []
            self.referenced(at, script)
            self.note(
                at,
                "deterministic grader: its script runs in the checker in the workspace; it "
                f"passes when its JSON `score` is at least {SKILLGRADE_PASS:g}",
            )
            return [Check("grader", script, line, min=SKILLGRADE_PASS)]
        if kind == "llm_rubric":
            rubric = self.text((*at, "rubric"), grader.get("rubric"), "rubric", files=True)
            if rubric is None:
                return []
            self.note(
                at, "llm_rubric becomes an `expect:` check, graded pass/fail by the model grader"
            )
            return [Check("expect", rubric, line)]
        self.rep.error(
            (*at, "type"), f"grader `type` must be deterministic or llm_rubric, got {kind!r}"
        )
        return []

    def referenced(self, at: KeyPath, script: str) -> None:
        """Skillgrade copies the folders a script names into its workspace; skillbench's
        checker sees the workspace and evals/ only."""
        for ref in sorted(set(re.findall(r"[\w./-]+\.\w{1,4}", script))):
            top = ref.split("/")[0]
            if top == ref or not (self.path.parent / top).is_dir():
                continue
            self.rep.warn(
                at,
                f"the script uses {ref!r}: Skillgrade copies {top}/ into the workspace, "
                "skillbench does not; read it as $CASE/... with the eval.yaml under evals/, or "
                "the row fails",
            )


_WEIGHT = (
    "weights change nothing here: with no `scoring.threshold` Vally takes the graders' binary "
    "verdicts (every grader passing), as skillbench does"
)
_SKILLGRADE_NOT = {
    "agent": "`agent`: not honoured; skillbench's --agent decides",
    "provider": "`provider`: not honoured; skillbench runs every arm in its sandbox",
    "trials": "`trials`: not honoured; give `--runs N`",
    "threshold": "`threshold`: not honoured; the gate's verdict decides",
    "grader_model": "`grader_model`: not honoured; --grader decides",
    "docker": "`docker` (base image, setup): not honoured; a native case's `image:` is",
    "environment": "`environment` (cpus, memory): not honoured",
    "acp": "`acp`: not honoured; skillbench's --agent decides",
}


def _shell_tool(name: str) -> bool:
    try:
        return any(re.search(name, t) for t in ("bash", "shell", "powershell", "run_in_terminal"))
    except re.error:
        return False


def _duration(value: Any) -> int | None:
    """Seconds of Vally's duration (`2m`, `300s`, `30000ms`) or a bare number of seconds."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return int(value)
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)\s*", str(value))
    if not m:
        return None
    scale = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[m.group(2)]
    return max(1, int(float(m.group(1)) * scale))
