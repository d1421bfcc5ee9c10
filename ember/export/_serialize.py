"""The export file format: a length-prefixed container of a JSON header, the IR text and safetensors consts.

Layout (all integers little-endian):

    b"EMBEREXP"                    8 bytes, the magic
    major, minor                   2 x uint16, the format version
    len, header                    uint64 + a UTF-8 JSON object (the schema in docs/export.md)
    len, graph                     uint64 + the UTF-8 IR text (`ember.fx.parse` reads it)
    len, consts                    uint64 + a safetensors file (`ember.save` of the const list)
    sha256                         32 bytes over everything before it

A reader refuses a newer major version before reading anything else (a newer
minor version only adds header fields, which are ignored).  Nothing in the
file is executed or unpickled: JSON, text and raw tensor bytes only.
"""
from __future__ import annotations

import hashlib
import json
import os
import struct
import tempfile

import numpy as np

MAGIC = b"EMBEREXP"
VERSION = (1, 0)
_PICKLE_HINT = ("ember export files never contain pickles and are never unpickled; this data "
                "looks like a Python pickle, which is refused")


def _looks_like_pickle(b: bytes) -> bool:
    # protocol 2+ pickles start with PROTO (0x80) and the protocol number
    return len(b) >= 2 and b[0] == 0x80 and 2 <= b[1] <= 5


def _consts_bytes(consts) -> bytes:
    from ..serialization import save
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "consts.safetensors")
        save(p, {"consts": [np.asarray(c) for c in consts]})
        with open(p, "rb") as f:
            return f.read()


def _consts_from(raw: bytes, n: int) -> list:
    from ..serialization import CheckpointError, load
    from . import ExportError
    if _looks_like_pickle(raw):
        raise ExportError(f"cannot read the exported consts: {_PICKLE_HINT}")
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "consts.safetensors")
        with open(p, "wb") as f:
            f.write(raw)
        try:
            tree = load(p)
        except CheckpointError as e:
            raise ExportError(f"cannot read the exported consts: {e}") from None
    consts = tree.get("consts") if isinstance(tree, dict) else None
    if n == 0 and consts is None:
        consts = []
    if not isinstance(consts, list) or len(consts) != n:
        raise ExportError(f"the exported consts do not match the header ({n} expected)")
    return [np.asarray(c) for c in consts]


def pack(header: dict, text: str, consts) -> bytes:
    """The bytes of one export file."""
    parts = [MAGIC, struct.pack("<HH", *VERSION)]
    for blob in (json.dumps(header, separators=(",", ":")).encode(), text.encode(), _consts_bytes(consts)):
        parts += [struct.pack("<Q", len(blob)), blob]
    body = b"".join(parts)
    return body + hashlib.sha256(body).digest()


def unpack(data) -> tuple[dict, str, list]:
    """(header, IR text, consts) of an export file, every defect an `ExportError`."""
    from . import ExportError
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"ember.export.deserialize: expected bytes (what Exported.serialize() "
                        f"returned), got {type(data).__name__}")
    data = bytes(data)
    if _looks_like_pickle(data):
        raise ExportError(f"cannot deserialize: {_PICKLE_HINT}")
    if len(data) < 12 or data[:8] != MAGIC:
        raise ExportError("cannot deserialize: not an ember export file (it does not start with "
                          "the magic b'EMBEREXP')")
    major, minor = struct.unpack_from("<HH", data, 8)
    if major > VERSION[0]:
        raise ExportError(f"cannot deserialize: the file has export format version {major}.{minor}, "
                          f"newer than this ember reads ({VERSION[0]}.x); upgrade ember to load it")
    if major < 1:
        raise ExportError(f"cannot deserialize: unknown export format version {major}.{minor}")
    if len(data) < 12 + 3 * 8 + 32:
        raise ExportError(f"cannot deserialize: the file is truncated ({len(data)} bytes)")
    body, digest = data[:-32], data[-32:]
    pos, blobs = 12, []
    for what in ("header", "graph", "consts"):
        if pos + 8 > len(body):
            raise ExportError(f"cannot deserialize: the file is truncated before its {what}")
        (n,) = struct.unpack_from("<Q", body, pos)
        pos += 8
        if pos + n > len(body):
            raise ExportError(f"cannot deserialize: the file is truncated in its {what} "
                              f"({len(body) - pos} of {n} bytes)")
        blobs.append(body[pos:pos + n])
        pos += n
    if pos != len(body):
        raise ExportError(f"cannot deserialize: {len(body) - pos} unexpected bytes after the sections")
    if hashlib.sha256(body).digest() != digest:
        raise ExportError("cannot deserialize: the checksum does not match; the file was modified "
                          "or damaged after it was written")
    raw_header, raw_text, raw_consts = blobs
    if _looks_like_pickle(raw_header) or _looks_like_pickle(raw_text):
        raise ExportError(f"cannot deserialize: {_PICKLE_HINT}")
    try:
        header = json.loads(raw_header.decode("utf-8"))
        text = raw_text.decode("utf-8")
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ExportError(f"cannot deserialize: the header is not valid JSON text ({e})") from None
    if not isinstance(header, dict) or header.get("format") != "ember.export":
        raise ExportError("cannot deserialize: the header is not an ember export header")
    n = header.get("num_consts")
    if not isinstance(n, int) or n < 0:
        raise ExportError("cannot deserialize: the header has no valid num_consts")
    return header, text, _consts_from(raw_consts, n)
