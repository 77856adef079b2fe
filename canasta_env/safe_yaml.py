"""Reading small YAML option files (rules, training and tournament configs) from untrusted hands.

``load_yaml_mapping`` returns the top-level mapping of a file, or raises a ``ValueError`` subclass
whose one-line message names the file, and where it can, the line. What it refuses, and why:

- files over ``max_bytes`` (checked before parsing), directories, named pipes and sockets (opening
  one would wait for a writer forever), unreadable paths;
- UTF-16/32 files, bytes that are not UTF-8, NUL bytes;
- YAML anchors and aliases: a 480-byte "billion laughs" file expands to billions of nodes, and an
  option file has no use for them;
- nesting deeper than ``max_depth`` collections and more than ``max_nodes`` nodes, so that parsing
  stops early instead of recursing or running for seconds;
- integers longer than 64 characters (``int()`` of a long digit string is quadratic), and YAML
  1.1's base-60 numbers (``hands: 1:00`` would silently be 60) and octal numbers (``target_score:
  0100`` would silently be 64);
- merge keys (``<<: {packs: 3}``): without aliases they only repeat keys, and the merged value
  silently loses to an explicit one;
- duplicate keys (PyYAML silently keeps the last one), non-string option names, a top level that
  is not a mapping (a list, a scalar, ``null``), and an empty file unless ``allow_empty`` (a
  file of only comments is an empty mapping: it was written on purpose).

Only PyYAML's safe constructors run: loading a file never builds an arbitrary object.
``short_repr`` quotes a user's value in a message: at most ~80 characters, whatever the value
(deep nesting, an integer of a million digits, a self-referencing list).
"""

from __future__ import annotations

import functools
import os
import stat
from pathlib import Path
from typing import IO, Any

from canasta_env.messages import short_repr

MAX_BYTES = 1 << 20  # 1 MiB: option files are a few kB
MAX_DEPTH = 4  # collections inside each other: a rules file needs 3 (mapping > table > row)
MAX_NODES = 10_000  # scalars and collections; a rules file has about 100
MAX_INT_CHARS = 64


class YamlFileError(ValueError):
    """A YAML option file cannot be read; the message names the file."""


class _Refused(Exception):
    """Raised inside the loader; ``load_yaml_mapping`` adds the file name."""


@functools.cache
def _loader_class() -> type:
    """A ``SafeLoader`` that refuses anchors, aliases, deep nesting, many nodes, long integers and
    duplicate keys. Built on first use, so that importing this module does not import PyYAML."""
    import yaml
    from yaml.events import AliasEvent, MappingStartEvent, SequenceStartEvent

    class Loader(yaml.SafeLoader):
        max_depth, max_nodes = MAX_DEPTH, MAX_NODES

        def __init__(self, stream: str) -> None:
            super().__init__(stream)
            self._depth = self._nodes = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            event = self.peek_event()
            line = event.start_mark.line + 1
            if isinstance(event, AliasEvent) or event.anchor is not None:
                raise _Refused(f"line {line}: YAML anchors and aliases (&name, *name) are not "
                               "allowed")
            self._nodes += 1
            if self._nodes > self.max_nodes:
                raise _Refused(f"line {line}: more than {self.max_nodes} values")
            nested = isinstance(event, (MappingStartEvent, SequenceStartEvent))
            if nested and self._depth >= self.max_depth:
                raise _Refused(f"line {line}: nested deeper than {self.max_depth} levels")
            self._depth += nested
            try:
                return super().compose_node(parent, index)
            finally:
                self._depth -= nested

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":  # merged keys lose to explicit ones
                    raise _Refused(f"line {key_node.start_mark.line + 1}: YAML merge keys (<<) are "
                                   "not allowed; write the options themselves")
                key, line = self.construct_object(key_node, deep=True), key_node.start_mark.line + 1
                try:  # by type too: YAML 1.1 reads `on` as True, which is not the key 1
                    first = seen.get((type(key), key))
                except TypeError:  # unhashable: the base class reports it with its position
                    continue
                if first is not None:
                    raise _Refused(f"line {line}: duplicate key {short_repr(key)} (first at line "
                                   f"{first})")
                seen[(type(key), key)] = line
            return super().construct_mapping(node, deep=deep)

        def construct_yaml_int(self, node: Any) -> Any:
            if len(node.value) > MAX_INT_CHARS:
                raise _Refused(f"line {node.start_mark.line + 1}: an integer of {len(node.value)} "
                               f"characters (at most {MAX_INT_CHARS})")
            _no_base_60(node)
            digits = str(node.value).lstrip("+-")
            if len(digits) > 1 and digits[0] == "0" and digits[1] in "0123456789_":
                raise _Refused(f"line {node.start_mark.line + 1}: {short_repr(node.value)} is a YAML "
                               "1.1 octal number; write the number without leading zeros, or quote it")
            return super().construct_yaml_int(node)

        def construct_yaml_float(self, node: Any) -> Any:
            _no_base_60(node)
            return super().construct_yaml_float(node)

    def _no_base_60(node: Any) -> None:
        if ":" in str(node.value):  # YAML 1.1 reads `1:30` as 90: a time or a ratio read as a number
            raise _Refused(f"line {node.start_mark.line + 1}: {short_repr(node.value)} is a YAML 1.1 "
                           "base-60 number; write the number itself, or quote it")

    Loader.add_constructor("tag:yaml.org,2002:int", Loader.construct_yaml_int)
    Loader.add_constructor("tag:yaml.org,2002:float", Loader.construct_yaml_float)
    return Loader


def _kind(value: Any) -> str:
    """What a top-level YAML value is, in words, for a message."""
    if value is None:
        return "null"
    if isinstance(value, list):
        return "a list"
    names = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}
    return f"{names.get(type(value), 'a ' + type(value).__name__)} ({short_repr(value)})"


def _yaml_message(exc: Exception) -> str:
    """A PyYAML error on one line: the problem and where (PyYAML's own text spans lines)."""
    problem = getattr(exc, "problem", None)
    mark = getattr(exc, "problem_mark", None)
    if problem and mark is not None:
        context = getattr(exc, "context", None)
        return f"line {mark.line + 1}, column {mark.column + 1}: {problem}" + \
            (f" ({context})" if context else "")
    return " ".join(str(exc).split())


def open_input(path: str | Path, source: str, error: type[ValueError]) -> IO[bytes]:
    """``path`` opened for binary reading without ever blocking: a directory, a named pipe or a
    socket is ``error`` naming ``source`` (a FIFO would wait for a writer forever), and so is a path
    that cannot be opened (missing, a symlink loop, a NUL byte). Devices such as ``/dev/zero`` open;
    callers bound how much they read."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        raise error(f"{source}: file not found") from None
    except IsADirectoryError:
        raise error(f"{source}: is a directory, not a file") from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        raise error(f"{source}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    mode = os.fstat(fd).st_mode
    if not (stat.S_ISREG(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode)):
        os.close(fd)
        kind = "a directory" if stat.S_ISDIR(mode) else "a named pipe or socket"
        raise error(f"{source}: is {kind}, not a file")
    if hasattr(os, "set_blocking"):
        os.set_blocking(fd, True)  # regular files and devices: ordinary reads from here on
    return os.fdopen(fd, "rb")


def _read_bytes(path: Path, source: str, max_bytes: int, error: type[ValueError]) -> bytes:
    """The file's bytes, at most ``max_bytes`` of them, or ``error`` naming the file."""
    with open_input(path, source, error) as f:
        try:
            raw = f.read(max_bytes + 1)  # bounded even for /dev/zero
        except OSError as exc:
            raise error(f"{source}: cannot read: {exc.strerror or exc}") from None
    if len(raw) > max_bytes:
        raise error(f"{source}: larger than {max_bytes} bytes; not an option file")
    return raw


def decode_text(raw: bytes, source: str, error: type[ValueError] = YamlFileError) -> str:
    """UTF-8 text of ``raw`` (a UTF-8 byte-order mark is dropped); UTF-16/32, bytes that are not
    UTF-8 and NUL bytes are ``error`` naming the line."""
    if raw.startswith((b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff")):
        raise error(f"{source}: is UTF-16 or UTF-32 text; save it as UTF-8")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise error(f"{source}: line {line}: byte 0x{raw[exc.start]:02x} is not UTF-8; save the "
                    "file as UTF-8") from None
    if "\x00" in text:
        line = text[: text.index("\x00")].count("\n") + 1
        raise error(f"{source}: line {line}: NUL byte (a binary or UTF-16 file?); expected UTF-8 "
                    "text")
    return text.removeprefix("\ufeff")


def parse_yaml_mapping(raw: bytes, source: str, what: str = "options", *,
                       error: type[ValueError] = YamlFileError, allow_empty: bool = False,
                       string_keys: bool = True, max_depth: int = MAX_DEPTH,
                       max_nodes: int = MAX_NODES) -> dict[str, Any]:
    """The top-level mapping of YAML ``raw`` bytes (see ``load_yaml_mapping``); ``source`` names
    them in messages."""
    import yaml

    text = decode_text(raw, source, error)
    if not text.strip():
        if allow_empty:
            return {}
        raise error(f"{source}: the file is empty; expected a mapping of {what} (write `{{}}` for "
                    "none)")
    loader = _loader_class()(text)
    loader.max_depth, loader.max_nodes = max_depth, max_nodes
    try:
        node = loader.get_single_node()
        data = {} if node is None else loader.construct_document(node)  # None: only comments
    except _Refused as exc:
        raise error(f"{source}: {exc}") from None
    except yaml.YAMLError as exc:
        raise error(f"{source}: not valid YAML: {_yaml_message(exc)}") from None
    except (ValueError, RecursionError) as exc:  # a constructor's own error, e.g. a bad date
        raise error(f"{source}: not valid YAML: {' '.join(str(exc).split())[:200]}") from None
    finally:
        loader.dispose()
    if not isinstance(data, dict):
        raise error(f"{source}: expected a mapping of {what} at the top level, got "
                    f"{_kind(data)}")
    for key in data if string_keys else ():
        if not isinstance(key, str):
            raise error(f"{source}: {what} are named by strings, got the key {short_repr(key)} "
                        f"({type(key).__name__})")
    return data


def load_yaml_mapping(path: str | Path, what: str = "options", *,
                      error: type[ValueError] = YamlFileError, allow_empty: bool = False,
                      string_keys: bool = True, max_bytes: int = MAX_BYTES,
                      max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES) -> dict[str, Any]:
    """The top-level mapping of the YAML file at ``path``, read safely.

    Args:
        path: the file.
        what: what the mapping holds, for messages ("rule options", "training options").
        error: the ``ValueError`` subclass raised (``YamlFileError`` by default).
        string_keys: refuse top-level keys that are not strings (YAML reads ``on`` as True and
            ``1`` as an int); with False the caller reports them, e.g. as unknown options.
        allow_empty: a file of nothing but white space reads as ``{}`` instead of an error (one
            with only comments always does: someone wrote it on purpose).
        max_bytes, max_depth, max_nodes: the limits described in the module docstring.

    Raises:
        error: the file is missing, a directory, too large, not UTF-8, not YAML, uses anchors or
            aliases, nests too deep, repeats a key, or is not a mapping with string keys. The
            message is one line starting with the path.
    """
    source = str(path)
    raw = _read_bytes(Path(path), source, max_bytes, error)
    return parse_yaml_mapping(raw, source, what, error=error, allow_empty=allow_empty,
                              string_keys=string_keys, max_depth=max_depth, max_nodes=max_nodes)
