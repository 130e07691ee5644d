"""Run configuration files (YAML or JSON): every leaf setting as a dotted name, its value and its line.

Both layouts of the domain document's knob names are read the same way: nested sections
(`inference: {max_context_length: 16384}`) and flat dotted keys (`inference.max_context_length: 16384`)
both give `inference.max_context_length`. The line of each key is kept so a finding can point at it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from triage.errors import TriageError
from triage.model import Event, Line
from triage.safe_load import StructureError, compose, read_regular

if TYPE_CHECKING:
    import yaml

MAX_CONFIG_BYTES = 8 << 20

# Text that looks like a run configuration whatever the file is called: a top-level key of one of the
# seed's knob namespaces (nested or dotted), e.g. `inference:` or `trainer.packing_max_tokens: 16384`.
NAMESPACE_KEY = re.compile(r"^(?:inference|miles|trainer|rollout|verifier|judge|engine)(?:\.[a-z_]+)?\s*:", re.M)
YAMLISH_LINE = re.compile(r"^(?:\s*#.*|\s*|\s*-\s.*|\s*[\"']?[\w.\-/]+[\"']?\s*:.*|---|\.\.\.)$")


class ConfigError(TriageError):
    """A configuration file that cannot be read; the message is one line naming the file."""


def looks_like_config(text: str) -> bool:
    """YAML whose keys name the seed's knob namespaces, and nothing that reads like log output."""
    lines = [ln for ln in text.splitlines()[:400] if ln.strip()]
    if not lines or not NAMESPACE_KEY.search(text):
        return False
    return all(YAMLISH_LINE.match(ln) for ln in lines)


def _leaves(loader: yaml.SafeLoader, node: yaml.Node, prefix: str, out: dict[str, tuple[Any, int]]) -> None:
    import yaml

    if not isinstance(node, yaml.MappingNode):
        return
    for key_node, value_node in node.value:
        key = str(loader.construct_object(key_node, deep=True))
        name = f"{prefix}.{key}" if prefix else key
        if isinstance(value_node, yaml.MappingNode):
            _leaves(loader, value_node, name, out)
        else:
            out[name] = (loader.construct_object(value_node, deep=True), key_node.start_mark.line + 1)


def parse_config(text: str, where: str) -> dict[str, tuple[Any, int]]:
    """{dotted.name: (value, line number)} of every leaf; ConfigError when it is not a mapping of settings."""
    import yaml  # here: a run without configuration files never needs it

    loader = yaml.SafeLoader(text)
    try:
        node = compose(loader)  # aliases and nesting measured before anything is built (triage/safe_load.py)
        if node is None:
            raise ConfigError(f"{where}: empty configuration file")
        if not isinstance(node, yaml.MappingNode):
            raise ConfigError(f"{where}: not a mapping of settings (top level is a {node.id})")
        out: dict[str, tuple[Any, int]] = {}
        _leaves(loader, node, "", out)
        return out
    except StructureError as e:
        raise ConfigError(f"{where}: {e}: not read as settings") from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f"{where}:{mark.line + 1}" if mark else where
        raise ConfigError(f"{at}: invalid YAML/JSON: {getattr(e, 'problem', None) or str(e).splitlines()[0]}") from None
    finally:
        loader.dispose()


def read_config_file(path: str, rel: str) -> Event:
    """A `config` event: fields {dotted.name: value}, and `_lines` {dotted.name: Line} for evidence."""
    try:
        raw = read_regular(path, MAX_CONFIG_BYTES)  # a FIFO or a device is refused, never waited on
    except StructureError as e:
        raise ConfigError(f"{rel}: {e}") from None
    except OSError as e:
        raise ConfigError(f"{rel}: cannot read: {e.strerror or e}") from None
    text = raw.decode("utf-8", "replace")
    leaves = parse_config(text, rel)
    src = text.splitlines()
    fields: dict[str, Any] = {}
    lines: dict[str, Line] = {}
    for name, (value, lineno) in leaves.items():
        fields[name] = value
        shown = src[lineno - 1] if 0 < lineno <= len(src) else f"{name}: {value}"
        lines[name] = Line(rel, lineno, shown, shown)
    return Event("config", Line(rel, 1, "", ""), fields | {"_lines": lines})
