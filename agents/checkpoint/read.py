"""Reading a checkpoint back, verified: ``load_checkpoint`` and ``validate_state``.

Loading refuses, with a ``CheckpointError`` naming the file: a missing file, a truncated one, a sha256
mismatch, one that does not parse, and (when the caller says what it expects) other rules or another
observation/action layout, showing both values. ``meta.json`` carries the hashes, so it is checked by
parsing, not by hash.

A checkpoint is untrusted input (``meta.json`` can be edited and re-hashed), so loading: verifies
every listed file (size and sha256, regular files only) on every path, even one it does not parse;
caps ``meta.json``/``state.json`` at ``MAX_JSON_BYTES`` and the weights and optimizer files at
what the described network can fill, before reading; checks meta.json's policy
description (``policy_spec``: allow-listed classes and arguments, a bounded network, the weights'
shapes, finite floating-point weights) and that its rules are stored options, never a name to
resolve; validates ``state.json`` (``validate_state``); refuses optimizer.pt tensors that hold more
bytes than the file or values that are not finite; and writes nothing anywhere. Each file is read
once, hashed as it is read, into the memory its tensors then view (``tensors``): a checkpoint takes
its size in memory once.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from agents.checkpoint.find import incomplete_after, is_complete, latest_checkpoint, latest_name
from agents.checkpoint.format import (
    COUNTERS,
    FILES,
    FORMAT,
    LATEST,
    LISTED,
    MAX_COUNTER,
    MAX_FILE_BYTES,
    MAX_JSON_BYTES,
    MAX_POOL,
    META_FILE,
    OPTIMIZER_FILE,
    POLICY_FILE,
    STATE_FILE,
    Checkpoint,
    CheckpointError,
    _json_loads,
    _json_round_trip,
    _one_line,
)
from agents.checkpoint.policy_spec import (
    _all_finite,
    _check_file_sizes,
    _check_weight_values,
    _check_weights,
)
from agents.checkpoint.rng import _rng_problem
from agents.checkpoint.tensors import memory_file, safetensors_views, torch_load
from canasta_env.messages import short_repr

_SHA256 = re.compile(r"[0-9a-f]{64}")
_CHUNK = 1 << 20
_MAX_NODES = 1_000_000  # entries of optimizer.pt walked (a real one holds a few per parameter)


def load_checkpoint(path_or_run_dir: str | os.PathLike[str], *, rules: Any = None,
                    expect_layout: str | Mapping[str, Any] | None = None,
                    load_optimizer: bool = True) -> Checkpoint:
    """Read and verify a checkpoint (or a run directory's latest one).

    Every file ``meta.json`` lists is checked (regular file, size, sha256) before any is parsed,
    whether or not it is parsed: ``load_optimizer=False`` still refuses a damaged ``optimizer.pt``.
    ``meta.json`` itself is checked field by field (types, bounds, the policy's classes against an
    allow-list), ``state.json`` by ``validate_state``, and the stored weights' shapes against the
    network ``meta.json`` describes. Nothing is written anywhere.

    Args:
        path_or_run_dir: a checkpoint directory, or a run directory or its ``latest`` file (the
            run's ``latest_checkpoint``).
        rules: if given (preset name, YAML path, dict or ``RuleSet``), refuse a checkpoint trained
            under other rules (every option but ``name`` is compared).
        expect_layout: if given, refuse another layout: a ``layout_hash`` string, or a mapping of
            some keys of ``meta["layout"]`` (``current_layout(rules)`` gives all of them).
        load_optimizer: False skips parsing ``optimizer.pt`` (it is still verified).

    Raises:
        CheckpointError: naming the file at fault.
    """
    path = _resolve(Path(path_or_run_dir))
    meta = _read_meta(path)
    if rules is not None:
        _check_rules(path / META_FILE, meta, rules)
    if expect_layout is not None:
        _check_layout(path / META_FILE, meta, expect_layout)
    _check_unlisted(path, meta)
    weights, state_bytes = bytearray(), bytearray()
    with memory_file() as optimizer:
        sinks = {POLICY_FILE: weights.extend, STATE_FILE: state_bytes.extend,
                 OPTIMIZER_FILE: optimizer.write if load_optimizer else None}
        for fname in meta["files"]:
            _verify(path, meta, fname, sinks[fname])
        policy_state = _parse(path / POLICY_FILE, weights, safetensors_views)
        if "policy" in meta:
            _check_weights(path, meta["policy"], policy_state)
        _check_weight_values(path, policy_state)
        state = _parse(path / STATE_FILE, state_bytes, _json_loads)
        if not isinstance(state, dict):
            raise CheckpointError(f"{path / STATE_FILE}: holds a {type(state).__name__}, not a mapping")
        validate_state(path, state)
        optimizer_state = None
        if load_optimizer and OPTIMIZER_FILE in meta["files"]:
            file = path / OPTIMIZER_FILE
            optimizer_state = _parse(file, optimizer, torch_load)
            _check_optimizer_state(file, optimizer_state, meta["files"][OPTIMIZER_FILE]["bytes"])
    return Checkpoint(path, policy_state, optimizer_state, state, meta)


def _resolve(path: Path) -> Path:
    if path.name == LATEST and path.is_file():  # RUN_DIR/latest names the run's latest checkpoint
        path = path.parent
    if not path.is_dir():
        what = ("a file, not a checkpoint or run directory" if path.exists() else
                "a symbolic link to nothing (a loop or a missing target)" if path.is_symlink() else
                "no such checkpoint or run directory")
        raise CheckpointError(f"{path}: {what}")
    if any((path / f).exists() for f in FILES):
        return path
    found = latest_checkpoint(path)
    damaged = incomplete_after(path, found)
    named = latest_name(path)
    if named is not None and (path / named).is_dir() and not is_complete(path / named):
        damaged = sorted({*damaged, named})
    if damaged:  # never an older checkpoint in silence
        older = f"; name a checkpoint folder to use an older one ({found})" if found is not None else ""
        raise CheckpointError(f"{path}: its latest checkpoint is incomplete ({', '.join(damaged)}){older}")
    if found is None:
        raise CheckpointError(f"{path}: neither a checkpoint ({', '.join(FILES)}) nor a run "
                              "directory holding a complete one")
    return found


def _open_regular(file: Path, what: str) -> Any:
    """Open ``file`` for reading, refusing anything but a regular file (a FIFO would block, a
    device never end); ``what`` completes the 'missing' message."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(file, flags)
    except FileNotFoundError:
        raise CheckpointError(f"{file}: missing{what}") from None
    except OSError as exc:
        raise CheckpointError(f"{file}: unreadable ({_one_line(exc)})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise CheckpointError(f"{file}: not a regular file")
    return os.fdopen(fd, "rb")


def _read_meta(path: Path) -> dict[str, Any]:
    file = path / META_FILE
    with _open_regular(file, f"; {path} is not a complete checkpoint") as f:
        size = os.fstat(f.fileno()).st_size
        if size > MAX_JSON_BYTES:
            raise CheckpointError(f"{file}: {size} bytes, more than the {MAX_JSON_BYTES} a "
                                  f"{META_FILE} may have")
        try:
            meta = _json_loads(f.read(MAX_JSON_BYTES + 1))
        except (OSError, ValueError) as exc:
            raise CheckpointError(f"{file}: unreadable or truncated ({_one_line(exc)})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        got = meta.get("format") if isinstance(meta, dict) else type(meta).__name__
        raise CheckpointError(f"{file}: format {short_repr(got)}, expected {FORMAT!r}")
    if "policy" in meta and "rules" not in meta:  # build_meta stores both
        raise CheckpointError(f"{file}: no 'rules' recorded (a policy's checkpoint records the rules "
                              "it was trained for)")
    if "rules" in meta and not isinstance(meta["rules"], dict):  # stored resolved, as options
        raise CheckpointError(f"{file}: rules {short_repr(meta['rules'])}: want the rule options (a "
                              "JSON object); a checkpoint never names a preset or a rules file to read")
    _check_files(file, meta.get("files"))
    if "policy" in meta:
        _check_file_sizes(file, meta["policy"], meta["files"])
    return meta


def _check_files(file: Path, files: Any) -> None:
    """meta.json's "files": plain names this format knows, each {bytes: int, sha256: hex}."""
    if not isinstance(files, dict) or POLICY_FILE not in files or STATE_FILE not in files:
        raise CheckpointError(f"{file}: 'files' must give bytes and sha256 of {POLICY_FILE}, "
                              f"{STATE_FILE} and any {OPTIMIZER_FILE}")
    for name, info in files.items():
        where = f"{file}: files[{short_repr(name)}]"
        if name not in LISTED:
            plain = name and not any(c in name for c in "/\\:\0") and name not in (".", "..")
            why = "unknown file" if plain else "not a plain file name"
            raise CheckpointError(f"{where}: {why} (a checkpoint lists only {', '.join(LISTED)})")
        if not isinstance(info, dict) or set(info) != {"bytes", "sha256"}:
            raise CheckpointError(f"{where}: want {{'bytes': int, 'sha256': hex}}, got "
                                  f"{short_repr(info)}")
        limit = MAX_JSON_BYTES if name == STATE_FILE else MAX_FILE_BYTES
        size = info["bytes"]
        if type(size) is not int or not 0 <= size <= limit:
            raise CheckpointError(f"{where}: bytes {short_repr(size)} is not an integer in "
                                  f"[0, {limit}]")
        if not isinstance(info["sha256"], str) or not _SHA256.fullmatch(info["sha256"]):
            raise CheckpointError(f"{where}: sha256 {short_repr(info['sha256'])} is not 64 lowercase "
                                  "hex digits")


def _check_unlisted(path: Path, meta: dict[str, Any]) -> None:
    """A checkpoint file present but not in meta.json's list would be neither verified nor used."""
    for name in LISTED:
        if name not in meta["files"] and os.path.lexists(path / name):
            raise CheckpointError(f"{path / name}: present but not listed in {META_FILE} (no size "
                                  "or sha256 to verify it against)")


def _verify(path: Path, meta: dict[str, Any], fname: str, sink: Callable[[memoryview], Any] | None) -> None:
    """Check ``fname``'s size and sha256 against meta.json, passing what is read to ``sink`` (if
    given): each byte is read once, and kept only where the sink keeps it."""
    file, info = path / fname, meta["files"][fname]
    want = info["bytes"]
    with _open_regular(file, f" (listed in {META_FILE})") as f:
        size = os.fstat(f.fileno()).st_size
        if size == want:
            digest, size, chunk = hashlib.sha256(), 0, memoryview(bytearray(_CHUNK))
            try:
                while size <= want and (n := f.readinto(chunk)):
                    digest.update(chunk[:n])
                    size += n
                    if sink is not None:
                        sink(chunk[:n])
            except OSError as exc:
                raise CheckpointError(f"{file}: unreadable ({_one_line(exc)})") from None
    if size != want:  # checked by stat, and again by what was read (the file may have changed)
        how = "truncated" if size < want else "too long"
        raise CheckpointError(f"{file}: {how}: {size} bytes, {META_FILE} records {want}")
    if digest.hexdigest() != info["sha256"]:
        raise CheckpointError(f"{file}: sha256 mismatch (file {digest.hexdigest()}, {META_FILE} "
                              f"records {info['sha256']}): the file was modified or corrupted")


def _parse(file: Path, data: Any, parse: Any) -> Any:
    """Parse a verified file held in memory; any parser error is a CheckpointError naming it."""
    try:
        return parse(data)
    except Exception as exc:  # safetensors, torch and json errors alike
        raise CheckpointError(f"{file}: unreadable ({_one_line(exc)})") from None


def _check_optimizer_state(file: Path, value: Any, size: int) -> None:
    if not isinstance(value, dict):
        raise CheckpointError(f"{file}: holds a {type(value).__name__}, not a mapping")
    if (not isinstance(value.get("state"), dict) or not isinstance(value.get("param_groups"), list)
            or not all(isinstance(g, dict) for g in value["param_groups"])):
        raise CheckpointError(f"{file}: not an optimizer state_dict (want 'state': dict and "
                              "'param_groups': list of dicts)")
    _check_optimizer_tensors(file, value, size)


def _check_optimizer_tensors(file: Path, value: Any, size: int) -> None:
    """Refuse tensors holding more bytes than the file's ``size``, and NaN or infinite values.

    A stored tensor may be a view that repeats one stored value (stride 0), and one tensor may be
    referenced many times; neither costs bytes in the file, but ``optimizer.load_state_dict`` copies
    each reference into a tensor of its own when it casts it to the parameter's dtype (a 2 MB file
    claimed 80 GB). A NaN would spread into every weight at a resumed run's first update.
    Containers are walked by reference, at most ``_MAX_NODES`` entries (a cycle ends the walk)."""
    import torch

    stack, total, nodes = [value], 0, 0
    while stack:
        item = stack.pop()
        nodes += 1
        if nodes > _MAX_NODES:
            raise CheckpointError(f"{file}: more than {_MAX_NODES:,} entries (a repeated or cyclic "
                                  "structure), not an optimizer state_dict")
        if isinstance(item, torch.Tensor):
            total += item.numel() * item.element_size()
            if total > size:
                raise CheckpointError(f"{file}: its tensors hold more than the file's {size:,} bytes "
                                      "(views that repeat stored values: a tampered file)")
            if item.is_floating_point() and not _all_finite(item):
                raise CheckpointError(f"{file}: holds NaN or infinite values (a diverged or damaged run)")
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)


def validate_state(path: str | os.PathLike[str], state: Any, *,
                   require: tuple[str, ...] = ()) -> None:
    """Check the ``state.json`` fields loaders use, refusing wrong types and absurd values.

    ``num_timesteps``, ``n_updates``, ``episodes``: integers in ``[0, MAX_COUNTER]``;
    ``opponent_pool``: a list of plain checkpoint names (no path separators, no leading '.');
    ``rng``: ``rng_state()``'s output, tried on throwaway generators (no global RNG is touched).
    Other keys are left alone; ``require`` names keys that must be present (e.g. a resume needs
    ``("num_timesteps", "rng")``). ``load_checkpoint`` calls this on every load.

    Args:
        path: the checkpoint directory (or its ``state.json``), for the message.
        state: the parsed ``state.json``.

    Raises:
        CheckpointError: naming ``state.json`` and the field.
    """
    file = Path(path)
    if file.name != STATE_FILE:
        file = file / STATE_FILE
    if not isinstance(state, Mapping):
        raise CheckpointError(f"{file}: holds a {type(state).__name__}, not a mapping")
    for key in require:
        if key not in state:
            raise CheckpointError(f"{file}: no {key!r}")
    for key in COUNTERS:
        value = state.get(key, 0)
        if type(value) is not int or not 0 <= value <= MAX_COUNTER:
            raise CheckpointError(f"{file}: {key} {short_repr(value)} is not an integer in "
                                  f"[0, {MAX_COUNTER}]")
    pool = state.get("opponent_pool", [])
    if not isinstance(pool, list) or len(pool) > MAX_POOL:
        raise CheckpointError(f"{file}: opponent_pool must be a list of at most {MAX_POOL} "
                              f"checkpoint names, got {short_repr(pool)}")
    for name in pool:
        if not _plain_name(name):
            raise CheckpointError(f"{file}: opponent_pool entry {short_repr(name)} is not a plain "
                                  "checkpoint name (no path separators, not starting with '.')")
    if "rng" in state:
        why = _rng_problem(state["rng"])
        if why:
            raise CheckpointError(f"{file}: rng: {why}")


def _plain_name(name: Any) -> bool:
    return (isinstance(name, str) and 0 < len(name) <= 255 and not name.startswith(".")
            and name != LATEST and not any(c in name for c in "/\\:\0"))


def _check_rules(file: Path, meta: dict[str, Any], rules: Any) -> None:
    from canasta_env.rules import load_rules

    want = _json_round_trip(load_rules(rules).to_dict())
    try:
        have = _json_round_trip(load_rules(meta["rules"]).to_dict())
    except Exception as exc:
        raise CheckpointError(f"{file}: stored rules unusable ({_one_line(exc)})") from None
    diff = [k for k in sorted(set(want) | set(have)) if k != "name" and want.get(k) != have.get(k)]
    if diff:
        shown = "; ".join(f"{k}: checkpoint {short_repr(have.get(k))}, expected {short_repr(want.get(k))}"
                          for k in diff)
        raise CheckpointError(f"{file}: rules mismatch (checkpoint {short_repr(have.get('name'))}, "
                              f"expected {short_repr(want.get('name'))}): {shown}")


def _check_layout(file: Path, meta: dict[str, Any], expect: str | Mapping[str, Any]) -> None:
    have = meta.get("layout")
    if not isinstance(have, dict):
        raise CheckpointError(f"{file}: no 'layout' recorded")
    want = {"layout_hash": expect} if isinstance(expect, str) else dict(expect)
    diff = [k for k in want if have.get(k) != want[k]]
    if diff:
        shown = "; ".join(f"{k}: checkpoint {short_repr(have.get(k))}, expected {short_repr(want[k])}"
                          for k in diff)
        raise CheckpointError(f"{file}: layout mismatch: {shown}")
    policy = meta.get("policy")  # checked by _read_meta: a flat Box in, a Discrete out
    if isinstance(policy, dict):  # the network's own widths, before its weights are read: a width of
        # 10**6 lets its files be gigabytes (_check_file_sizes) whatever the layout recorded says
        widths = {"obs_dim": policy["observation_space"]["shape"][0],
                  "num_actions": policy["action_space"]["n"]}
        diff = [k for k in widths if k in want and widths[k] != want[k]]
        if diff:
            shown = "; ".join(f"{k}: its network {widths[k]}, expected {short_repr(want[k])}" for k in diff)
            raise CheckpointError(f"{file}: policy layout mismatch: {shown}")
