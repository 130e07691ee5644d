"""Structured files (YAML, JSON) read with limits: a file in a run directory, or one the user names, can be hostile.

- YAML aliases make a document a graph: nine lines of `&a [*b, *b, ...]` (the "billion laughs") compose into a
  few hundred nodes and construct into 10^9 objects. The composed graph is measured before anything is
  constructed: its size with every alias expanded, and its depth, each against a limit.
- Deep nesting (`[[[[...`, or one mapping per indentation level) makes the recursive composers, constructors
  and the JSON decoder raise RecursionError: it becomes the same one-line error.
- A path that should be a regular file but is a FIFO (which would block the read forever) or a device (which
  never ends, /dev/zero) is refused before a byte is read.

Every failure is a StructureError (a ValueError: callers that skip unreadable data keep doing so) whose message
names the problem; the caller adds the file.
"""

from __future__ import annotations

import json
import os
import stat
from typing import Any

MAX_DEPTH = 100  # levels of nesting: a real config or rule file has fewer than 10
MAX_NODES = 1_000_000  # YAML nodes with every alias expanded: the whole built-in library has about 60 000
MAX_READ = 64 << 20  # bytes read of one structured file

_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)


class StructureError(ValueError):
    """A structured file too deep, too large once its aliases are expanded, or not a regular file."""


def special_kind(mode: int) -> str:
    """What a non-regular file is, in the words of error messages and the coverage section."""
    if stat.S_ISFIFO(mode):
        return "FIFO"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISDIR(mode):
        return "directory"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "device"
    return "special file"


def read_regular(path: str | os.PathLike[str], limit: int = MAX_READ) -> bytes:
    """Up to `limit` bytes of a regular file; StructureError for a FIFO, socket or device (opened without
    blocking, and checked on the descriptor, so a path swapped after a check cannot hang the read), OSError
    when it cannot be read."""
    fd = os.open(path, _FLAGS)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise StructureError(f"a {special_kind(mode)}, not a regular file: not read")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read(limit)
    finally:
        os.close(fd)


def _children(node: Any) -> list[Any]:
    value = node.value
    if not isinstance(value, list):
        return []  # a scalar
    if value and isinstance(value[0], tuple):
        return [n for pair in value for n in pair]  # a mapping's (key, value) pairs
    return value


def check_graph(root: Any) -> None:
    """StructureError when the composed YAML graph is deeper than MAX_DEPTH, holds more than MAX_NODES nodes with
    its aliases expanded, or contains itself (`&a [*a]`). Each node is visited once (an alias is the same node
    object), without recursion."""
    size: dict[int, int] = {}
    depth: dict[int, int] = {}
    open_: set[int] = set()  # entered, not yet measured: the nodes on the path from the root
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        kids = _children(node)
        if done:
            open_.discard(key)
            size[key] = 1 + sum(size[id(k)] for k in kids)
            depth[key] = 1 + max((depth[id(k)] for k in kids), default=0)
            if depth[key] > MAX_DEPTH:
                raise StructureError(f"nested deeper than {MAX_DEPTH} levels")
            if size[key] > MAX_NODES:
                raise StructureError(f"aliases expand to more than {MAX_NODES:,} nodes (an alias bomb?)")
            continue
        if key in size:
            continue
        if key in open_:
            raise StructureError("an alias refers to a node that contains it")
        open_.add(key)
        stack.append((node, True))
        if len(open_) > MAX_DEPTH:
            raise StructureError(f"nested deeper than {MAX_DEPTH} levels")
        stack.extend((k, False) for k in kids if id(k) not in size)


def compose(loader: Any) -> Any:
    """The loader's single document as a checked node graph (None for an empty document); yaml.YAMLError for
    invalid YAML, StructureError for a hostile one."""
    try:
        node = loader.get_single_node()
    except RecursionError:
        raise StructureError(f"nested deeper than {MAX_DEPTH} levels") from None
    if node is not None:
        check_graph(node)
    return node


def load_yaml(text: str, loader_class: Any) -> Any:
    """yaml.load(text, Loader=loader_class) within the limits (loader_class: a SafeLoader or a subclass)."""
    loader = loader_class(text)
    try:
        node = compose(loader)
        return None if node is None else loader.construct_document(node)
    finally:
        loader.dispose()


def json_loads(text: str | bytes) -> Any:
    """json.loads, with nesting too deep for the decoder a StructureError (a ValueError) like any bad JSON."""
    try:
        return json.loads(text)
    except RecursionError:
        raise StructureError("nested too deeply to decode") from None


def json_raw_decode(decoder: json.JSONDecoder, text: str, pos: int = 0) -> tuple[Any, int]:
    """decoder.raw_decode(text, pos), with nesting too deep a StructureError (a ValueError)."""
    try:
        return decoder.raw_decode(text, pos)
    except RecursionError:
        raise StructureError("nested too deeply to decode") from None
