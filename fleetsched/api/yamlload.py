"""Reading YAML and JSON documents from files, standard input or bytes, safely, with one-line errors.

Owns the path from bytes to plain Python values for every command that reads YAML or JSON
(``simulate``, ``estimate``, the scheduler's configuration file; offered to the controller and
webhook): files read only when regular and within a size limit (``read_regular_file``: a device
or FIFO is refused before it is read), nesting bounded when the budget says so, strict UTF-8
decoding, a YAML loader that refuses duplicate mapping keys (as kubectl does), integers no JSON
number can hold, and alias expansion past a budget, checked on the parsed node graph *before*
any value is built (an 842-byte alias bomb otherwise becomes gigabytes as soon as something copies
the values), and the one error type, ``LoadError``, whose ``str()`` is one line naming file,
document, line and column, field path and reason. It knows nothing about Kubernetes kinds (``load`` does).

Parsing is libyaml's (C); values of plain documents (no anchors, merge keys or uncommon tags:
nearly all Kubernetes YAML) are built by one loop here with the same checks, in the same order,
as PyYAML's own construction, which builds every other document.
"""

from __future__ import annotations

import collections
import functools
import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from fleetsched.api.text import escape_controls
from fleetsched.regular_file import FileRefused, read_regular

__all__ = [
    "DEFAULT_BUDGET",
    "MAX_INPUT_BYTES",
    "Budget",
    "LoadError",
    "Source",
    "decode_text",
    "field_path",
    "iter_documents",
    "load_json",
    "read_input",
    "read_regular_file",
]


@dataclass(frozen=True, slots=True)
class Budget:
    """Limits on one document, checked before its values are built.

    ``max_alias_nodes``: nodes that aliases add when the document is expanded into a tree (what
    every consumer that copies, validates or prints the values pays). Plain documents add none,
    whatever their size; Kubernetes YAML rarely uses aliases at all.
    ``max_int_digits``: decimal digits of an integer; more than a float64 (what a JSON number
    decodes to on the API server) can hold is refused. Other bases are bounded by the same value.
    ``max_depth``: nesting of mappings and sequences; ``None`` leaves it to libyaml's own limit
    (1,000 levels), which is deeper than code that walks values recursively can follow safely.
    """

    max_alias_nodes: int = 100_000
    max_int_digits: int = 309
    max_depth: int | None = None

    @property
    def max_int(self) -> int:
        return _max_int(self.max_int_digits)


DEFAULT_BUDGET = Budget()


@functools.lru_cache(maxsize=8)
def _max_int(digits: int) -> int:
    return 10**digits - 1  # a 1,000-bit power: once per budget, not once per integer


@dataclass(frozen=True, slots=True)
class Source:
    """Where an object came from: file, 1-based document number, and index inside a ``List``."""

    file: str
    document: int
    item: int | None = None

    def describe(self) -> str:
        where = f"{self.file}: document {self.document}"
        if self.item is not None:
            where += f" (items[{self.item}])"
        return where


class LoadError(ValueError):
    """Bad input. ``str()`` is one line:
    ``<file>: document <n> (line <l>, column <c>): <field path>: <reason>``."""

    def __init__(
        self,
        reason: str,
        *,
        source: Source | None = None,
        path: str = "",
        line: int | None = None,
        column: int | None = None,
        file: str | None = None,
        loc: tuple[str | int, ...] = (),
    ) -> None:
        self.reason = " ".join(reason.split())
        self.loc = loc  # the field's path as keys and indexes, when known (for ``with_position``)
        self.source = source
        self.file = file  # where there is no document (yet): undecodable bytes, JSON bodies
        self.path = path
        self.line = line
        self.column = column
        super().__init__(self.__str__())

    def with_position(self, text: str, prefix: tuple[str | int, ...] = ()) -> LoadError:
        """This error with the line and column of its field in ``text`` (its source's document;
        ``prefix`` leads to the object inside it), when it has none yet and they can be found."""
        if self.line is not None or self.source is None or not self.loc:
            return self
        position = position_of(text, self.source.document, (*prefix, *self.loc))
        if position is None:
            return self
        self.line, self.column = position
        self.args = (self.__str__(),)
        return self

    def __str__(self) -> str:
        parts: list[str] = []
        position = ""
        if self.line is not None:
            position = f"line {self.line}" + ("" if self.column is None else f", column {self.column}")
        if self.source is not None:
            parts.append(self.source.describe() + (f" ({position})" if position else ""))
        elif self.file is not None:
            parts.append(self.file + (f" ({position})" if position else ""))
        elif position:
            parts.append(position)
        if self.path:
            parts.append(self.path)
        parts.append(self.reason)
        # Keys and values come from the input: no control character reaches a terminal or a log.
        return escape_controls(": ".join(parts))


# Fields whose value is a map with user-chosen keys: their keys print as ``[key]`` (Karmada's
# field.Path.Key), every other step as ``.name``.
_MAP_FIELDS = frozenset(
    {
        "labels",
        "annotations",
        "matchLabels",
        "nodeSelector",
        "resourceRequest",
        "allocatable",
        "allocated",
        "allocating",
        "proxyHeader",
        "preservedLabelState",
        "requests",
        "limits",
        "overhead",
    }
)


def field_path(loc: Iterable[str | int], *, prefix: str = "") -> str:
    """``('spec', 'placement', 'clusterAffinities', 1, 'affinityName')`` →
    ``spec.placement.clusterAffinities[1].affinityName``."""
    out = prefix
    previous: str | int | None = None
    for step in loc:
        if isinstance(step, int) or (isinstance(previous, str) and previous in _MAP_FIELDS):
            out += f"[{step}]"
        else:
            out += f".{step}" if out else step
        previous = step
    return out


# ---------------------------------------------------------------------------------------------
# Bytes to text


# The largest offline input (``simulate``, ``estimate``, ``what-if``) read: the generated 1,000-cluster,
# 100,000-binding fleet of the benchmarks is 85 MB; parsing takes about 30 times the file's size in
# memory, so a file past this is refused before it is read rather than after gigabytes.
MAX_INPUT_BYTES = 128 << 20


def read_input(name: str, *, limit: int = MAX_INPUT_BYTES, what: str = "input file") -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes (``read_regular_file``), or of standard
    input for ``-`` (at most ``limit`` bytes read), or a one-line ``LoadError``."""
    if name == "-":
        stream = getattr(sys.stdin, "buffer", None)
        if stream is None:  # replaced by a text stream (tests): it is text already
            data = str(sys.stdin.read(limit + 1)).encode("utf-8", "surrogateescape")
        else:
            data = bytes(stream.read(limit + 1))
        if len(data) > limit:
            raise LoadError(f"standard input holds more than the {limit} bytes allowed", file=name)
        return data
    return read_regular_file(name, limit=limit, what=what)


def read_regular_file(path: str, *, limit: int, what: str = "file") -> bytes:
    """The bytes of the regular file at ``path``, at most ``limit`` of them, or a one-line ``LoadError``.

    A device, FIFO, socket or directory is refused before anything is read (``/dev/zero`` would
    otherwise be read until memory runs out, and a FIFO would block the open), and so is a file
    that holds more than ``limit`` bytes; the file is read once, through the descriptor checked
    (``fleetsched.regular_file``, which token files go through too).
    """
    try:
        return read_regular(path, limit=limit, what=what)
    except FileRefused as exc:
        raise LoadError(str(exc), file=path) from None


def decode_text(data: bytes, name: str) -> str:
    """Strict UTF-8 (a leading byte-order mark is dropped), or a ``LoadError`` naming line and column."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        before = data[: exc.start]
        line = before.count(b"\n") + 1
        column = exc.start - (before.rfind(b"\n") + 1) + 1
        byte = data[exc.start : exc.start + 1].hex()
        raise LoadError(
            f"not UTF-8 text: {exc.reason} (byte 0x{byte}); is it a binary file?",
            file=name,
            line=line,
            column=column,
        ) from None


# ---------------------------------------------------------------------------------------------
# YAML

try:  # the C parser is ~5x faster on the 5,000-binding benchmark inputs
    _BaseLoader: type[yaml.SafeLoader] = yaml.CSafeLoader  # type: ignore[assignment]
except AttributeError:  # pragma: no cover - PyYAML built without libyaml
    _BaseLoader = yaml.SafeLoader

_MERGE_TAG = "tag:yaml.org,2002:merge"
_INT_TAG = "tag:yaml.org,2002:int"
_TIMESTAMP_TAG = "tag:yaml.org,2002:timestamp"


# The tag of a plain (unquoted) scalar depends on its text alone (SafeLoader has no path
# resolvers): remembered for the texts that recur, keys above all. Bounded: unique values (UIDs)
# stop being added once it is full.
_RESOLVED_LIMIT = 1 << 16
_RESOLVED: dict[str, str] = {}


class _Refused(Exception):
    """Raised inside the loader; ``iter_documents`` turns it into a ``LoadError`` with the position."""

    def __init__(self, reason: str, node: Node, *, at: Node | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.node = node  # the node the field path leads to
        self.at = at or node  # the node whose position is reported


def _duplicate_key(key: Any, first: Node, key_node: Node, value_node: Node) -> _Refused:
    """The refusal of a mapping key given twice (``first`` is where it was given first)."""
    return _Refused(
        f"Duplicate value: {_quote(key)}: mapping key already defined at line {first.start_mark.line + 1}",
        value_node,
        at=key_node,
    )


class _Loader(_BaseLoader):
    """SafeLoader (C parser when available) that refuses duplicate keys, huge integers, bad dates."""

    budget: Budget = DEFAULT_BUDGET

    def resolve(self, kind: type[Node], value: str, implicit: tuple[bool, bool]) -> str:
        # Called by the parser for every node; the regular expressions it runs are the same for
        # the same plain text (these loaders add no resolvers of their own, nor path resolvers).
        if kind is ScalarNode and implicit[0]:
            tag = _RESOLVED.get(value)
            if tag is None:
                tag = super().resolve(kind, value, implicit)
                if len(_RESOLVED) < _RESOLVED_LIMIT:
                    _RESOLVED[value] = tag
            return tag
        return super().resolve(kind, value, implicit)  # type: ignore[no-any-return]

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:  # type: ignore[override]
        if isinstance(node, MappingNode):
            seen: dict[Any, Node] = {}
            for key_node, value_node in node.value:
                if not isinstance(key_node, ScalarNode) or key_node.tag == _MERGE_TAG:
                    continue  # merged keys may be overridden; complex keys fail in the base class
                key = self.construct_object(key_node)
                try:
                    first = seen.setdefault(key, key_node)
                except TypeError:
                    continue
                if first is not key_node:
                    raise _duplicate_key(key, first, key_node, value_node)
        return super().construct_mapping(node, deep=deep)  # type: ignore[no-any-return]

    def construct_yaml_int(self, node: ScalarNode) -> int:
        value = node.value
        # Plain decimals (replicas, ports, priorities): what PyYAML makes of them, without its
        # sign, base and sexagesimal handling. A leading 0 is octal in YAML 1.1: not this path.
        if 0 < len(value) < 19 and value.isdigit() and value.isascii() and (value[0] != "0" or value == "0"):
            return int(value)
        text = str(value).replace("_", "").lstrip("+-")
        decimal = text.isdigit() and not (len(text) > 1 and text.startswith("0"))
        # Python refuses to convert more than 4,300 digits (a ValueError); any base beyond the
        # budget is refused before the conversion, which is linear only for powers of two.
        if (decimal and len(text) > self.budget.max_int_digits) or len(text) > 4 * self.budget.max_int_digits:
            raise _Refused(f"Invalid value: an integer of {len(text)} digits: out of range", node)
        value = super().construct_yaml_int(node)
        if abs(value) > self.budget.max_int:
            raise _Refused(f"Invalid value: an integer of {len(str(abs(value)))} digits: out of range", node)
        return value  # type: ignore[no-any-return]

    def construct_yaml_timestamp(self, node: ScalarNode) -> Any:
        try:
            return super().construct_yaml_timestamp(node)
        except (ValueError, OverflowError) as exc:
            raise _Refused(
                f"Invalid value: {_quote(node.value)}: not a valid timestamp: {exc}", node
            ) from None


_Loader.add_constructor(_INT_TAG, _Loader.construct_yaml_int)
_Loader.add_constructor(_TIMESTAMP_TAG, _Loader.construct_yaml_timestamp)

_STR_TAG = "tag:yaml.org,2002:str"
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
# Scalars the fast construction builds itself (str, int) or with the loader's own constructor.
_PLAIN_SCALAR_TAGS = frozenset(
    {_STR_TAG, _INT_TAG, _TIMESTAMP_TAG, "tag:yaml.org,2002:null", "tag:yaml.org,2002:bool",
     "tag:yaml.org,2002:float"}
)


class _Fallback(Exception):
    """The document uses something only PyYAML's own construction handles (merge keys, complex
    keys, other tags): it is built that way instead, with the same values and errors."""


def _construct_plain(loader: _Loader, root: Node) -> Any:
    """The document's value as ``loader.construct_document(root)`` builds it, for documents
    without anchors, merge keys, complex keys or uncommon tags (``_Fallback`` otherwise).

    The same checks and the same order: PyYAML builds a container's scalars when it meets the
    container and fills nested containers level by level, in document order; so does this, so a
    document with two problems reports the same one first. One loop instead of a generator and
    a dispatch per node: several times faster on Kubernetes YAML, where almost every node is a
    plain string, a small mapping or a short list.
    """
    constructors = loader.yaml_constructors
    construct_int = loader.construct_yaml_int

    def scalar(node: Node) -> Any:
        tag = node.tag
        if tag == _STR_TAG:
            return node.value
        if tag not in _PLAIN_SCALAR_TAGS:
            raise _Fallback
        if tag == _INT_TAG:
            return construct_int(node)  # type: ignore[arg-type]
        return constructors[tag](loader, node)

    def container(node: Node) -> Any:
        if isinstance(node, MappingNode):
            if node.tag != _MAP_TAG:
                raise _Fallback
            mapping: dict[Any, Any] = {}
            queue.append((node, mapping))
            return mapping
        if isinstance(node, SequenceNode):
            if node.tag != _SEQ_TAG:
                raise _Fallback
            sequence: list[Any] = []
            queue.append((node, sequence))
            return sequence
        return scalar(node)

    queue: collections.deque[tuple[Node, Any]] = collections.deque()
    data = container(root)
    while queue:
        node, target = queue.popleft()
        if type(target) is list:
            target.extend([container(child) for child in node.value])
            continue
        pairs = node.value
        keys = []
        seen: dict[Any, Node] = {}
        # Duplicate keys first, as ``_Loader.construct_mapping`` checks them before any value.
        for key_node, value_node in pairs:
            if not isinstance(key_node, ScalarNode) or key_node.tag not in _PLAIN_SCALAR_TAGS:
                raise _Fallback  # merge keys, '=' keys, complex keys
            key = scalar(key_node)
            first = seen.setdefault(key, key_node)
            if first is not key_node:
                raise _duplicate_key(key, first, key_node, value_node)
            keys.append(key)
        for key, (_, value_node) in zip(keys, pairs, strict=True):
            target[key] = container(value_node)
    return data


def _quote(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def _children(node: Node) -> list[tuple[str | int, Node]]:
    if isinstance(node, SequenceNode):
        return list(enumerate(node.value))
    if isinstance(node, MappingNode):
        out: list[tuple[str | int, Node]] = []
        for key_node, value_node in node.value:
            step = str(key_node.value) if isinstance(key_node, ScalarNode) else "<key>"
            out += [(step, key_node), (step, value_node)]
        return out
    return []


def _check_aliases(root: Node, budget: Budget) -> None:
    """Refuse a node graph whose tree expansion adds more than the budget's nodes, or that loops.

    One pass over the distinct nodes (iterative: no recursion limit), sizes memoised by identity.
    """
    size: dict[int, int] = {}
    uses: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[Node, bool]] = [(root, False)]
    distinct = 0
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            size[key] = 1 + sum(size[id(child)] for _, child in _children(node))
            continue
        uses[key] = uses.get(key, 0) + 1
        if key in on_path:
            raise _Refused("Invalid value: a recursive alias (the node contains itself)", node)
        if key in size or uses[key] > 1:
            continue
        distinct += 1
        on_path.add(key)
        stack.append((node, True))
        stack.extend((child, False) for _, child in reversed(_children(node)))
    added = size[id(root)] - distinct
    if added > budget.max_alias_nodes:
        # the anchored node whose copies cost the most
        worst = max(
            (n for n in _walk_distinct(root) if uses[id(n)] > 1),
            key=lambda n: (uses[id(n)] - 1) * size[id(n)],
        )
        raise _Refused(
            f"Forbidden: aliases expand the document by {added} nodes, more than the "
            f"{budget.max_alias_nodes} allowed; the most copied anchor is here",
            worst,
        )


def _check_depth(root: Node, limit: int) -> None:
    """Refuse mappings and sequences nested more than ``limit`` levels, counted in the tree the
    document expands to (iterative: no recursion; after the alias check, which bounds that tree)."""
    stack: list[tuple[Node, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if not isinstance(node, (MappingNode, SequenceNode)):
            continue
        if depth > limit:
            raise _Refused(f"Forbidden: nested more than {limit} levels deep", node)
        stack.extend((child, depth + 1) for _, child in _children(node))


def _walk_distinct(root: Node) -> Iterator[Node]:
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        stack.extend(child for _, child in _children(node))


def _path_to(root: Node, target: Node) -> list[str | int]:
    """The field path from the document root to ``target`` (the first route found)."""
    seen: set[int] = set()
    stack: list[tuple[Node, list[str | int]]] = [(root, [])]
    while stack:
        node, loc = stack.pop()
        if node is target:
            return loc
        if id(node) in seen:
            continue
        seen.add(id(node))
        for step, child in reversed(_children(node)):  # document order: the first route wins
            stack.append((child, [*loc, step]))
    return []


def position_of(text: str, document: int, loc: Iterable[str | int]) -> tuple[int, int] | None:
    """1-based (line, column) of the key (or list item) at ``loc`` in the ``document``-th document
    of ``text``, or None when it cannot be found. For error messages only: it parses again."""
    loader = _Loader(text)
    try:
        number = 0
        while loader.check_node():
            node: Node | None = loader.get_node()
            number += 1
            if number < document:
                continue
            mark = None
            for step in loc:
                if isinstance(node, MappingNode):
                    pair = next(((k, v) for k, v in node.value
                                 if isinstance(k, ScalarNode) and str(k.value) == str(step)), None)
                    if pair is None:
                        return None
                    mark, node = pair[0].start_mark, pair[1]
                elif isinstance(node, SequenceNode) and isinstance(step, int) and step < len(node.value):
                    node = node.value[step]
                    mark = node.start_mark
                else:
                    return None
            return None if mark is None else (mark.line + 1, mark.column + 1)
        return None
    except (yaml.YAMLError, _Refused, RecursionError):
        return None
    finally:
        loader.dispose()


def iter_documents(text: str, filename: str, *, budget: Budget = DEFAULT_BUDGET) -> Iterator[tuple[int, Any]]:
    """``(1-based document number, value)`` for every document of a YAML (or JSON) text.

    Empty documents are yielded as ``None``. Raises ``LoadError`` (one line) on the first problem.
    """
    loader_class: type[_Loader] = _Loader
    if budget is not DEFAULT_BUDGET:
        loader_class = type("_BudgetLoader", (_Loader,), {"budget": budget})
    loader = loader_class(text)
    anchors = "&" in text  # no anchor, no alias: skip the graph walk on plain documents
    current = 1  # the document being read, for every error below
    root: Node | None = None
    try:
        while loader.check_node():
            root = loader.get_node()
            if anchors:
                _check_aliases(root, budget)
            if budget.max_depth is not None:
                _check_depth(root, budget.max_depth)
            if anchors:
                value = loader.construct_document(root)
            else:
                try:
                    value = _construct_plain(loader, root)
                except _Fallback:
                    value = loader.construct_document(root)
            yield current, value
            current += 1
            root = None
    except _Refused as exc:
        mark = exc.at.start_mark
        raise LoadError(
            exc.reason,
            source=Source(filename, current),
            path=field_path(_path_to(root, exc.node)) if root is not None else "",
            line=mark.line + 1,
            column=mark.column + 1,
        ) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "malformed YAML"
        raise LoadError(
            f"malformed YAML: {problem}",
            source=Source(filename, current),
            line=None if mark is None else mark.line + 1,
            column=None if mark is None else mark.column + 1,
        ) from None
    except yaml.reader.ReaderError as exc:
        line, column = _offset_position(text, exc.position, c_parser=not isinstance(loader, yaml.SafeLoader))
        raise LoadError(
            f"malformed YAML: {exc.reason}", source=Source(filename, current), line=line, column=column
        ) from None
    except yaml.YAMLError as exc:
        raise LoadError(f"malformed YAML: {exc}", source=Source(filename, current)) from None
    except RecursionError:
        raise LoadError("malformed YAML: nested too deeply", source=Source(filename, current)) from None
    finally:
        loader.dispose()


def _offset_position(text: str, offset: int, *, c_parser: bool) -> tuple[int, int]:
    # libyaml reports byte offsets into the UTF-8 encoding, the Python reader character offsets
    data = text.encode("utf-8", "surrogatepass") if c_parser else text
    before = data[:offset]
    newline = "\n" if isinstance(before, str) else b"\n"
    line = before.count(newline) + 1  # type: ignore[arg-type]
    return line, offset - (before.rfind(newline) + 1) + 1  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# JSON


def load_json(data: bytes | str, name: str = "<request>", *, budget: Budget = DEFAULT_BUDGET) -> Any:
    """One JSON value with the same refusals as YAML: duplicate keys, out-of-range integers, bad
    UTF-8, and nesting past Python's limits, each a one-line ``LoadError``. JSON has no aliases, so its
    memory stays proportional to its size."""
    text = decode_text(data, name) if isinstance(data, bytes) else data

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                raise LoadError(f"Duplicate value: {_quote(key)}: object key defined twice", file=name)
            out[key] = value
        return out

    def integer(literal: str) -> int:
        if len(literal.lstrip("-")) > budget.max_int_digits:
            raise LoadError(
                f"Invalid value: an integer of {len(literal.lstrip('-'))} digits: out of range", path=name
            )
        return int(literal)

    try:
        return json.loads(text, object_pairs_hook=pairs, parse_int=integer)
    except json.JSONDecodeError as exc:
        raise LoadError(f"malformed JSON: {exc.msg}", file=name, line=exc.lineno, column=exc.colno) from None
    except RecursionError:
        raise LoadError("malformed JSON: nested too deeply", file=name) from None
