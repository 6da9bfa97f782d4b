"""The transcript, `trace.jsonl`: one schema that every agent writes (the builtin loop; the
Claude Code CLI's events mapped onto it) and every check reads. One JSON object per line,
written as the session runs, so a crash leaves a readable prefix. Every line is scrubbed of
credentials before it is written; the checks read the unscrubbed events kept in memory.

Events (docs/results.md): trace_start {case, arm, rep, model, started_at}, message {role, text,
usage}, tool_call {id, name, arguments}, tool_result {id, name, text, is_error, exit_code},
trace_end {stop_reason, turns, duration_ms, usage, cost_usd, models (a CLI's calls by model)}.
"""

from __future__ import annotations

import fnmatch
import json
import re
import shlex
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

import msgspec

from skillbench.models.base import Usage
from skillbench.util.scrub import scrub_obj

# JSON leaves these unescaped in a string, and str.splitlines() ends a line at each: a tool
# result holding one would split its event for a reader that splits so (a grader, say)
_LINE_BREAKS = {"\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\u0085"}


LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def json_line(value: Any) -> str:
    """`value` as one JSON line that every way of splitting lines keeps whole."""
    text = json.dumps(value, ensure_ascii=False)
    for char, escaped in _LINE_BREAKS.items():
        text = text.replace(char, escaped)  # (they occur only inside strings)
    # a lone surrogate (JSON's "\udcff", in a model's reply) has no UTF-8: kept escaped, it
    # reads back as it was, where written raw it ended the run (outside review, RB8)
    return LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"


class TraceWriter:
    """Appends events to a transcript file, one flushed line each, scrubbed; keeps the raw
    events, which are what the checks read (a scrubbed `password: str` must still match)."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._fh: IO[str] | None = path.open("w", encoding="utf-8")
        self.events: list[dict[str, Any]] = []

    def event(self, type: str, **fields: Any) -> None:
        if self._fh is None:
            return
        record = {"type": type, **{k: _plain(v) for k, v in fields.items()}}
        self.events.append(record)
        self._fh.write(json_line(scrub_obj(record)))
        self._fh.flush()

    def transcript(self) -> Transcript:
        """The session as it happened, unscrubbed: for the checks, never written anywhere."""
        return Transcript(self.events)

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def _plain(value: Any) -> Any:
    return msgspec.to_builtins(value) if isinstance(value, msgspec.Struct) else value


class Transcript(msgspec.Struct):
    """A transcript read back, with the two views the checks use."""

    events: list[dict[str, Any]]

    @property
    def all_text(self) -> str:
        """The agent's text plus the input of every tool call (what text checks search)."""
        parts: list[str] = []
        for e in self.events:
            if e.get("type") == "message" and e.get("role") == "assistant":
                parts.append(e.get("text", ""))
            elif e.get("type") == "tool_call":
                parts.extend(_strings(e.get("arguments", {})))
        return "\n".join(p for p in parts if p)

    @property
    def bash_commands(self) -> list[str]:
        """Every command the agent ran through the bash tool, in order."""
        return [
            str(e.get("arguments", {}).get("command", ""))
            for e in self.events
            if e.get("type") == "tool_call" and e.get("name") == "bash"
        ]

    @property
    def commands_run(self) -> list[str]:
        """The bash commands that ran: not a call whose command is not a string, nor one its
        agent refused before running it (an unknown tool, arguments its schema refuses: the
        result says `refused`). Only these can show a command was run (command_matching);
        every command asked for counts against the agent (no_command_matching)."""
        refused = {
            e.get("id") for e in self.events if e.get("type") == "tool_result" and e.get("refused")
        }
        return [
            e["arguments"]["command"]
            for e in self.events
            if e.get("type") == "tool_call"
            and e.get("name") == "bash"
            and isinstance(e.get("arguments"), dict)
            and isinstance(e["arguments"].get("command"), str)
            and e.get("id") not in refused
        ]

    @property
    def end(self) -> dict[str, Any] | None:
        return next((e for e in reversed(self.events) if e.get("type") == "trace_end"), None)

    def usage(self) -> Usage:
        """Total usage over the assistant messages."""
        total = Usage()
        for e in self.events:
            if e.get("type") == "message" and e.get("usage"):
                total = total + msgspec.convert(e["usage"], Usage)
        return total


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def loaded_skills(
    events: list[dict[str, Any]], names: Callable[[dict[str, Any]], Iterable[str]]
) -> set[str]:
    """The skills loaded in a transcript (docs/agents.md, "Activation"): those `names` reads
    from a tool call (the agent's own skill tool), unless its result was an error (a skill
    that is not there: asked for, never loaded); and those any tool call reached into, errored
    or not (a `cat` of the SKILL.md then `false` still read it): see `touched_skills`. A name
    may be a glob (`cat /skills/*/SKILL.md`); `expand_loaded` matches it to the staged skills."""
    failed = {e.get("id") for e in events if e.get("type") == "tool_result" and e.get("is_error")}
    found: set[str] = set()
    for e in events:
        if e.get("type") != "tool_call":
            continue
        if e.get("id") not in failed:
            found.update(n for n in names(e) if n)
        found.update(touched_skills(e.get("arguments")))
    return found


def declared_skills(
    invoked: Callable[[list[dict[str, Any]]], set[str]], events: list[dict[str, Any]]
) -> set[str]:
    """The skills an agent's own skill tool loaded (`invoked`: the agent's reading of a
    transcript), without what a text reading of its tool calls guesses: the skill observer
    sees those reads (docs/trust.md, "Activation"). Only the arguments that name a skill's
    folder are set aside, not the call: a skill-tool call given an extra argument naming
    one (`Skill {"skill": "greeter", "args": "skills/x"}`) still loaded its skill."""

    def unread(event: dict[str, Any]) -> dict[str, Any]:
        args = event.get("arguments")
        if event.get("type") != "tool_call" or not touched_skills(args):
            return event
        kept = (
            {k: v for k, v in args.items() if not touched_skills(v)}
            if isinstance(args, dict)
            else {}
        )
        return {**event, "arguments": kept}

    return invoked([unread(e) for e in events])


def expand_loaded(found: Iterable[str], staged: Iterable[str]) -> set[str]:
    """The staged skills `found` names, each glob matched to them: a skill the arm did not
    stage was never there to load (a `cat` of it only failed)."""
    return {n for n in staged for f in found if fnmatch.fnmatchcase(n, f)}


# a skill's folder, under any skills home (/skills/<name>, .../skills/<name>/...); the name may
# be a glob
_SKILL_REF = re.compile(r"skills/([A-Za-z0-9_*?\[\]-][A-Za-z0-9_.*?\[\]-]*)")
_GLOB = re.compile(r"[*?\[]")
# commands whose arguments are only named, never read: naming a skill file is no load
_MENTIONS = {"echo", "printf", ":", "true", "false", "test", "[", "[[", "which", "type"}
_ASSIGN = re.compile(r"^(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
_OPS = set(";&|()<>`\n")
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")
_VALUE, _EXPANDED = 4096, 1 << 20  # characters of one expanded word; of all, per command


def _skills_in(text: str) -> set[str]:
    return {m for m in _SKILL_REF.findall(text) if m.strip(".")}


def _words(text: str) -> list[str] | None:
    """`text` as shell words and operators, comments dropped; None when it is not shell."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=";&|()<>`")
    lexer.whitespace = " \t\r"  # a newline separates commands: kept as an operator
    lexer.wordchars += "$*?[]{}=/.~-:@%+,!^"
    try:
        return [w if w != "\n" else ";" for w in lexer]
    except ValueError:
        return None


def _command_reads(text: str) -> set[str]:
    """The skills a command string reads: every simple command but a mention (`echo`) that
    names a skill's folder, after substituting the variables it assigns and resolving
    relative names against the folder it `cd`s into. Not shell (a path, code): any name."""
    words = _words(text)
    if words is None:
        return _skills_in(text)
    found: set[str] = set()
    env: dict[str, str] = {}
    cwd = ""
    segment: list[str] = []
    budget = [_EXPANDED]

    def expand(word: str) -> str:
        # one pass, each value capped, all of them together too: values stored expanded
        # doubled with each `V2=$V1$V1` (27 such, 364 bytes, took gigabytes), and every name
        # tried on every word was quadratic. Past the caps a word stays as written: the
        # skill observer, not this reading, is what sees a read (docs/trust.md)
        if budget[0] <= 0 or "$" not in word:
            return word
        out = _VARIABLE.sub(lambda m: env.get(m[1] or m[2], m[0]), word)[:_VALUE]
        budget[0] -= len(out)
        return out

    def close() -> None:
        nonlocal cwd
        words = [expand(w) for w in segment]
        while words and (m := _ASSIGN.match(words[0])):
            env[m.group(1)] = m.group(2)
            words = words[1:]
        segment.clear()
        if not words:
            return
        if words[0] == "export":
            for w in words[1:]:
                if m := _ASSIGN.match(w):
                    env[m.group(1)] = m.group(2)
            return
        if words[0] in ("cd", "pushd") and len(words) > 1:
            target = words[1]
            cwd = target if target.startswith(("/", "~")) else f"{cwd}/{target}"
            return
        if words[0] in _MENTIONS:  # only a substitution in its arguments runs anything
            if any("$(" in w or "`" in w for w in words[1:]):
                found.update(n for w in words[1:] for n in _skills_in(w))
            return
        for w in words:
            found.update(_skills_in(w))
            if cwd and not w.startswith(("/", "~", "-")):
                found.update(_skills_in(f"{cwd}/{w}"))
        if cwd:
            found.update(_skills_in(f"{cwd}/"))

    for w in words:
        if w and set(w) <= _OPS:
            close()
        else:
            segment.append(w)
    close()
    return found


def touched_skills(arguments: object) -> set[str]:
    """The skills whose folders a tool call's arguments name, whatever the tool: every string
    in them (a command, a path, code) is read as a command (`_command_reads`), so an agent
    added later is covered without a rule of its own. Spellings a text reading cannot
    resolve (a path built by a program at run time) are not caught (docs/agents.md)."""
    if isinstance(arguments, str):
        return _command_reads(arguments)
    if isinstance(arguments, dict):
        arguments = list(arguments.values())
    if isinstance(arguments, list):
        return {name for a in arguments for name in touched_skills(a)}
    return set()


def read_trace(path: Path) -> Transcript:
    """Read a transcript, tolerating a torn last line (a crash mid-write)."""
    events = []
    # "\n" only: a transcript written before json_line may hold U+2028 and the like raw
    for line in path.read_text(encoding="utf-8", errors="replace").split("\n"):
        if not line:
            continue
        try:
            events.append(json.loads(line))
        except RecursionError:
            continue  # an event nested past the parser's limit (a model's tool input) says nothing
        except ValueError:
            break
    return Transcript(events)
