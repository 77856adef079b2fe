"""The weights and optimizer files parsed where they were read: loading takes their size once.

``load_checkpoint`` reads each file once, hashing it as it goes, into memory that the tensors then
view, not copy (reading all the bytes, then deserialising them, took 2.4 times the files' size):

* ``safetensors_views`` parses ``policy.safetensors`` in a ``bytearray``. Its header is checked as
  safetensors checks it (a length within the file, UTF-8 JSON, known dtypes, shapes that fill
  exactly the bytes their offsets span, offsets that tile the data with no gap or overlap), and it
  may hold at most ``MAX_JSON_BYTES``, as the JSON files may.
* ``memory_file`` holds ``optimizer.pt`` in an anonymous file in memory (a Linux memfd, never on
  disk) that ``torch_load`` maps, its tensors views of it. Without a memfd it is an ``io.BytesIO``
  and ``torch.load`` copies the tensors out of it, as before.
"""

from __future__ import annotations

import io
import math
import os
import zipfile
from typing import Any, BinaryIO

from agents.checkpoint.format import MAX_JSON_BYTES, _json_loads
from canasta_env.messages import short_repr

_DTYPES = {"F64": "float64", "F32": "float32", "F16": "float16", "BF16": "bfloat16", "I64": "int64",
           "I32": "int32", "I16": "int16", "I8": "int8", "U64": "uint64", "U32": "uint32",
           "U16": "uint16", "U8": "uint8", "BOOL": "bool", "C64": "complex64",
           "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2"}  # safetensors' names -> torch's
_MAX_DIMS = 8


def safetensors_views(data: bytearray) -> dict[str, Any]:
    """The tensors of the safetensors file held in ``data``, each a view of it (one whose offset
    is not a multiple of its element size is copied). ValueError for a header that does not
    describe ``data`` exactly."""
    import torch

    if len(data) < 8:
        raise ValueError(f"{len(data)} bytes, fewer than the 8 that give the header's length")
    n = int.from_bytes(data[:8], "little")
    if n > min(len(data) - 8, MAX_JSON_BYTES):
        raise ValueError(f"a header of {n:,} bytes, more than the file's {len(data) - 8:,} after its "
                         f"length or the {MAX_JSON_BYTES:,} a header may have")
    header = _json_loads(data[8:8 + n].decode("utf-8"))
    if not isinstance(header, dict):
        raise ValueError(f"the header is a {type(header).__name__}, not a JSON object")
    extra = header.pop("__metadata__", {})
    if not isinstance(extra, dict) or not all(isinstance(v, str) for v in extra.values()):
        raise ValueError("__metadata__ is not a mapping of strings to strings")
    entries = sorted(((_entry(name, info), name) for name, info in header.items()), key=lambda e: e[0][2])
    start, end = 8 + n, 0
    for (dtype, shape, (begin, stop)), name in entries:
        size = math.prod(shape) * getattr(torch, dtype).itemsize
        if begin != end or stop - begin != size:
            raise ValueError(f"{short_repr(name, 80)}: data_offsets {[begin, stop]} are not the {size:,} "
                             f"bytes from {end:,} that its {dtype} shape {shape} takes")
        end = stop
    if start + end != len(data):
        raise ValueError(f"the header describes {end:,} bytes of data, the file holds {len(data) - start:,}")
    out: dict[str, Any] = {}
    for (dtype, shape, (begin, _)), name in entries:
        kind, offset = getattr(torch, dtype), start + begin
        if not math.prod(shape):
            out[name] = torch.empty(shape, dtype=kind)
            continue
        view = torch.frombuffer(data, dtype=kind, count=math.prod(shape), offset=offset).view(shape)
        out[name] = view if offset % kind.itemsize == 0 else view.clone()
    return out


def _entry(name: str, info: Any) -> tuple[str, list[int], list[int]]:
    """One tensor's (torch dtype name, shape, data offsets) from the header, checked for types."""
    import torch

    if not isinstance(info, dict) or set(info) != {"dtype", "shape", "data_offsets"}:
        raise ValueError(f"{short_repr(name, 80)}: want dtype, shape and data_offsets")
    stored, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
    dtype = _DTYPES.get(stored) if isinstance(stored, str) else None
    if dtype is None or not hasattr(torch, dtype):
        raise ValueError(f"{short_repr(name, 80)}: unknown dtype {short_repr(stored, 80)}")
    if not isinstance(shape, list) or len(shape) > _MAX_DIMS or not all(
            type(d) is int and d >= 0 for d in shape):
        raise ValueError(f"{short_repr(name, 80)}: shape is not a list of at most {_MAX_DIMS} sizes")
    if not isinstance(offsets, list) or len(offsets) != 2 or not all(
            type(o) is int and o >= 0 for o in offsets):
        raise ValueError(f"{short_repr(name, 80)}: data_offsets is not two byte offsets")
    return dtype, shape, offsets


def memory_file() -> BinaryIO:
    """An empty file held in memory only: a Linux memfd that ``torch_load`` maps (its tensors are
    views of it), else an ``io.BytesIO``. The caller closes it."""
    create = getattr(os, "memfd_create", None)
    try:
        fd = create("canasta-checkpoint", os.MFD_CLOEXEC) if create is not None else -1
    except OSError:
        fd = -1
    if fd >= 0 and os.path.exists(f"/proc/self/fd/{fd}"):  # torch maps a file by its path
        return os.fdopen(fd, "w+b")
    if fd >= 0:
        os.close(fd)
    return io.BytesIO()


def torch_load(file: BinaryIO) -> Any:
    """``torch.load`` of tensors and plain containers only from a ``memory_file``, after checking
    the archive stores its records uncompressed (as ``torch.save`` writes them): no record can
    expand past the file."""
    import torch

    file.flush()
    size = file.seek(0, io.SEEK_END)
    try:
        with zipfile.ZipFile(file) as archive:
            records = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, EOFError) as exc:
        raise ValueError(f"not a torch.save archive ({exc})") from None
    if any(r.compress_type != zipfile.ZIP_STORED or r.file_size != r.compress_size
           for r in records) or sum(r.file_size for r in records) > size:
        raise ValueError("archive records are compressed or larger than the file")
    file.seek(0)
    if isinstance(file, io.BytesIO):
        return torch.load(file, map_location="cpu", weights_only=True)
    return torch.load(f"/proc/self/fd/{file.fileno()}", map_location="cpu", weights_only=True, mmap=True)
