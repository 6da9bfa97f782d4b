"""Strict YAML reading that remembers the line of every value.

Asset files are untrusted input: the reader caps size, nesting depth (PyYAML composes
recursively: 5,000 `[` would be a RecursionError) and node count (alias bombs), refuses
binary, non-UTF-8 and BOM-prefixed files, duplicate keys and non-standard tags, and turns
every failure into a `SpecError` whose problem names the file and line.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import yaml

from skillbench.evals.problems import Problem, SpecError

MAX_BYTES = 1024 * 1024
MAX_NODES = 50_000
MAX_DEPTH = 64  # collections in collections; eval assets need a handful
MAX_INT = (1 << 63) - 1

KeyPath = tuple[str | int, ...]

_STD_TAGS = {
    "tag:yaml.org,2002:" + t
    for t in ("str", "int", "float", "bool", "null", "map", "seq", "timestamp", "binary")
}


class Doc:
    """A parsed YAML document: its plain value and the line of each value and key in it."""

    def __init__(self, path: str, value: Any, lines: dict[KeyPath, int], keys: dict[KeyPath, int]):
        self.path = path
        self.value = value
        self._lines = lines
        self._keys = keys

    def line(self, at: KeyPath = ()) -> int:
        """Line of the value at `at`, or of its nearest enclosing value that has one."""
        while at not in self._lines and at:
            at = at[:-1]
        return self._lines.get(at, 1)

    def key_line(self, at: KeyPath) -> int:
        """Line of the mapping key whose value is at `at` (falls back to the value's line)."""
        return self._keys.get(at) or self.line(at)

    def problem(self, at: KeyPath, message: str, *, severity: str = "error", key: bool = False):
        """A problem located at the value (or key) at `at`."""
        line = self.key_line(at) if key else self.line(at)
        return Problem(self.path, line, severity, message)  # type: ignore[arg-type]


def read_text(path: Path, *, limit: int = MAX_BYTES) -> str:
    """Read a small UTF-8 text file, refusing what a text asset cannot be."""
    shown = str(path)
    try:
        with path.open("rb") as fh:
            data = fh.read(limit + 1)
    except OSError as exc:
        raise SpecError([Problem(shown, 1, "error", f"cannot read: {exc.strerror}")]) from None
    if len(data) > limit:
        raise SpecError(
            [
                Problem(
                    shown,
                    1,
                    "error",
                    f"file is larger than {limit // 1024} KiB; keep eval assets "
                    "small and put large content in a fixture",
                )
            ]
        )
    return decode_text(data, shown)


def decode_text(data: bytes, shown: str) -> str:
    """Decode bytes as UTF-8 text, with a located error for a BOM, NUL bytes or bad UTF-8."""
    if data.startswith(b"\xef\xbb\xbf"):
        raise SpecError(
            [
                Problem(
                    shown,
                    1,
                    "error",
                    "file starts with a byte-order mark; save it as UTF-8 without BOM",
                )
            ]
        )
    nul = data.find(b"\x00")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise SpecError([Problem(shown, line, "error", "file holds NUL bytes; is it binary?")])
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise SpecError(
            [
                Problem(
                    shown,
                    line,
                    "error",
                    f"not valid UTF-8 (byte 0x{data[exc.start]:02x}); save the file as UTF-8",
                )
            ]
        ) from None


def load_yaml_file(path: Path) -> Doc:
    """Read and parse one YAML file."""
    return parse_yaml(read_text(path), str(path))


def parse_yaml(text: str, shown: str, *, first_line: int = 1) -> Doc:
    """Parse YAML text (one document) into a `Doc`; `first_line` offsets embedded YAML."""
    try:
        loader = CappedLoader(text)
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, max(exc.position, 0)) + first_line
        what = f"character U+{exc.character:04X} is not allowed in YAML"
        raise SpecError([Problem(shown, line, "error", what)]) from None
    try:
        try:
            node = loader.get_single_node()
        except _TooDeep as exc:
            line = exc.mark.line + first_line
            what = f"values nested more than {MAX_DEPTH} levels deep"
            raise SpecError([Problem(shown, line, "error", what)]) from None
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            line = (mark.line + first_line) if mark else first_line
            what = exc.problem or exc.context or "invalid YAML"
            hint = " (YAML indents with spaces, not tabs)" if "\\t" in what or "tab" in what else ""
            raise SpecError([Problem(shown, line, "error", f"YAML syntax: {what}{hint}")]) from None
        except yaml.YAMLError as exc:
            raise SpecError([Problem(shown, first_line, "error", f"YAML: {exc}")]) from None
        builder = _Builder(loader, shown, first_line)
        value = None if node is None else builder.build(node, ())
        return Doc(shown, value, builder.lines, builder.keys)
    finally:
        loader.dispose()


class _TooDeep(yaml.YAMLError):
    def __init__(self, mark: yaml.Mark):
        super().__init__(f"line {mark.line + 1}: values nested more than {MAX_DEPTH} levels deep")
        self.mark = mark


class CappedLoader(yaml.SafeLoader):
    """SafeLoader whose composer stops at MAX_DEPTH, before Python's recursion limit."""

    depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise _TooDeep(self.peek_event().start_mark)
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


class _Builder:
    def __init__(self, loader: CappedLoader, shown: str, first_line: int):
        self.loader = loader
        self.shown = shown
        self.first = first_line
        self.count = 0
        self.lines: dict[KeyPath, int] = {}
        self.keys: dict[KeyPath, int] = {}

    def fail(self, node: yaml.Node, message: str) -> SpecError:
        return SpecError([Problem(self.shown, node.start_mark.line + self.first, "error", message)])

    def build(self, node: yaml.Node, at: KeyPath) -> Any:
        self.count += 1
        if self.count > MAX_NODES:
            raise self.fail(node, f"more than {MAX_NODES} YAML values (an alias bomb?)")
        if node.tag not in _STD_TAGS:
            raise self.fail(node, f"unsupported YAML tag {node.tag!r}")
        self.lines[at] = node.start_mark.line + self.first
        if isinstance(node, yaml.MappingNode):
            out: dict[Any, Any] = {}
            for key_node, value_node in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    raise self.fail(key_node, "mapping keys must be plain values")
                key = self.scalar(key_node)
                if not isinstance(key, str):
                    key = str(key) if isinstance(key, int | float | bool) or key is None else key
                if key in out:
                    raise self.fail(key_node, f"duplicate key {key!r}")
                self.keys[(*at, key)] = key_node.start_mark.line + self.first
                out[key] = self.build(value_node, (*at, key))
            return out
        if isinstance(node, yaml.SequenceNode):
            return [self.build(item, (*at, i)) for i, item in enumerate(node.value)]
        return self.scalar(node)

    def scalar(self, node: yaml.Node) -> Any:
        try:
            value = self.loader.construct_object(node, deep=True)
        except (yaml.YAMLError, ValueError, OverflowError) as exc:
            raise self.fail(node, f"bad YAML value: {exc}") from None
        # YAML's integers have no limit, and one past a float's range overflowed every
        # float() of a number field (a traceback); .nan passed every range check written
        # `x <= 0`, .inf every `x > 0`. Such a value stays the text it was written as: a
        # field that wants a number refuses it at its line, one that is only data (a
        # SKILL.md's metadata) keeps it
        if (isinstance(value, int) and not isinstance(value, bool) and abs(value) > MAX_INT) or (
            isinstance(value, float) and not math.isfinite(value)
        ):
            return str(node.value)
        return value
