"""Reading saved artifacts defensively (``fjax.load``, ``nn.Graph.load``, checkpoints).

Every way a file can be broken (missing, truncated, overwritten, too deeply nested, metadata
of the wrong type) ends as one ``CorruptArtifactError`` that names the file and the problem.
Loaders catch the specific decoding errors of the library they call at their boundary and
hand them to ``corrupt``; JSON records go through ``parse_json``, which bounds their size and
nesting before ``json`` (whose parser recurses) sees them.
"""

from __future__ import annotations

import hashlib
import json
import os
import re

import numpy as np

from .errors import CorruptArtifactError

MAX_DEPTH = 1000  # nesting of a JSON record (structure of a checkpoint, metadata of a graph)
MAX_JSON_BYTES = 256 << 20

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)


def corrupt(who: str, path, problem: str) -> CorruptArtifactError:
    """The error for ``path`` (a file of an artifact) that ``who`` (the loader) could not use."""
    return CorruptArtifactError(f"{who}: {os.fspath(path)}: {problem}", os.fspath(path))


def read_bytes(who: str, path: str, what: str) -> bytes:
    """The bytes of ``path``; a missing or unreadable file raises naming it (``what``: its role)."""
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        raise corrupt(who, path, f"missing file ({what})") from None
    except IsADirectoryError:
        raise corrupt(who, path, f"is a folder, expected a file ({what})") from None
    except OSError as err:
        raise corrupt(who, path, f"cannot read {what}: {err.strerror or err}") from None


def json_depth(raw: bytes) -> int:
    """How deeply the arrays/objects of the JSON text ``raw`` nest (strings skipped), without recursion."""
    text = np.frombuffer(_STRING.sub(b'""', raw), np.uint8)
    steps = np.isin(text, (ord("["), ord("{"))).astype(np.int64) - np.isin(text, (ord("]"), ord("}")))
    return int(np.cumsum(steps).max(initial=0))


def parse_json(who: str, path, raw: bytes | str, what: str, max_depth: int = MAX_DEPTH):
    """``raw`` decoded as JSON, or the error naming ``path``: too big, not UTF-8, nested deeper than
    ``max_depth``, or not JSON."""
    if isinstance(raw, str):
        raw = raw.encode("utf-8", "surrogatepass")
    if len(raw) > MAX_JSON_BYTES:
        raise corrupt(who, path, f"the {what} is {len(raw)} bytes, more than the {MAX_JSON_BYTES} a record may have")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise corrupt(who, path, f"the {what} is not UTF-8 text (byte {err.start}): overwritten or truncated") from None
    depth = json_depth(raw)
    if depth > max_depth:
        raise corrupt(who, path, f"the {what} nests {depth} levels deep, more than the {max_depth} allowed")
    try:
        return json.loads(text)
    except ValueError as err:  # json.JSONDecodeError
        problem = "empty" if not text.strip() else f"not valid JSON ({err})"
        raise corrupt(who, path, f"the {what} is {problem}: truncated or overwritten") from None
    except RecursionError:  # within max_depth, but the caller's stack was already deep
        raise corrupt(who, path, f"the {what} nests too deeply to parse ({depth} levels)") from None


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def check_fields(who: str, path, record, fields: dict, what: str) -> None:
    """``record`` must be a JSON object whose ``fields`` (name -> check(value) -> bool, with a
    description in ``check.__doc__``) are present and valid."""
    if not isinstance(record, dict):
        raise corrupt(who, path, f"the {what} is a JSON {type(record).__name__}, expected an object")
    for name, check in fields.items():
        if name not in record:
            raise corrupt(who, path, f"the {what} has no field {name!r}")
        if not check(record[name]):
            raise corrupt(who, path, f"the {what} field {name!r} is {record[name]!r:.80}, expected {check.__doc__}")


def count(value) -> bool:
    """a count (an integer >= 0)"""
    return type(value) is int and value >= 0


def flag(value) -> bool:
    """true or false"""
    return type(value) is bool


def text(value) -> bool:
    """a string"""
    return isinstance(value, str)
