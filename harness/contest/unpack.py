"""Unpacking an upload safely: one source file, a .zip or a .tar.gz, into a fresh directory.

Participants are adversaries, so an archive is checked twice: from its headers before anything
is written (names, member kinds, count, declared sizes and compression ratios), and again while
extracting (the bytes actually read are counted, so a header that lies about a size is caught
at the cap, not after the disk is full). Refused, with a message naming the member and the rule:

- absolute paths, ``..`` components, backslashes, drive letters, control characters, a name twice;
- symbolic and hard links, devices, FIFOs (only regular files and directories are unpacked);
- more than ``files`` files, more than ``unpacked_kb`` in all, or a member (or the whole) whose
  unpacked size is more than ``ratio`` times its compressed size (a zip bomb);
- an archive without the runtime's entry file at its top level.

Files are created with ``O_EXCL | O_NOFOLLOW``, and on any refusal the directory is removed:
nothing of a refused upload is kept.
"""

from __future__ import annotations

import io
import os
import shutil
import stat
import tarfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

__all__ = ["UnpackError", "Caps", "check_name", "unpack_upload"]

CHUNK = 64 * 1024


class UnpackError(ValueError):
    """An upload refused; the message says which member broke which rule."""


@dataclass(frozen=True)
class Caps:
    files: int
    unpacked_bytes: int
    ratio: int


def _checked_name(name: str) -> list[str]:
    """The path components of an archive member's name, or UnpackError."""
    if not name or "\x00" in name or any(ord(ch) < 32 or ord(ch) == 127 for ch in name):
        raise UnpackError(f"refused: member {name!r} has control characters in its name")
    if "\\" in name:
        raise UnpackError(f"refused: member {name!r} has a backslash in its name")
    if name.startswith("/"):
        raise UnpackError(f"refused: member {name!r} is an absolute path (archive members must be relative)")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise UnpackError(f"refused: member {name!r} contains '..' (it would be written outside the upload)")
    if parts and len(parts[0]) >= 2 and parts[0][1] == ":":
        raise UnpackError(f"refused: member {name!r} starts with a drive letter")
    if len(parts) > 16 or any(len(p) > 255 for p in parts):
        raise UnpackError(f"refused: member {name!r} is nested too deep or has too long a name")
    return parts


#: the same checks for a build's output (harness.contest.build_output)
check_name = _checked_name


class _Budget:
    """Counts files and bytes against the caps, as declared and as actually written."""

    def __init__(self, caps: Caps, upload_size: int) -> None:
        self.caps = caps
        self.upload_size = max(1, upload_size)
        self.files = 0
        self.declared = 0
        self.written = 0
        self.names: set[tuple[str, ...]] = set()

    def declare(self, name: str, parts: list[str], size: int, compressed: int | None) -> None:
        key = tuple(parts)
        if key in self.names:
            raise UnpackError(f"refused: member {name!r} appears twice")
        self.names.add(key)
        self.files += 1
        if self.files > self.caps.files:
            raise UnpackError(f"refused: more than {self.caps.files} files in the archive (the quota)")
        if compressed is not None and size > self.caps.ratio * max(compressed, 1) and size > CHUNK:
            raise UnpackError(f"refused: member {name!r} unpacks to {size} bytes from {compressed}, more than "
                              f"{self.caps.ratio} times (a zip bomb?)")
        self.declared += size
        self._check_total(self.declared, "declares")

    def _check_total(self, total: int, verb: str) -> None:
        if total > self.caps.unpacked_bytes:
            raise UnpackError(f"refused: the archive {verb} more than {self.caps.unpacked_bytes // 1024} KB unpacked "
                              f"(the quota)")
        if total > self.caps.ratio * self.upload_size and total > CHUNK:
            raise UnpackError(f"refused: the archive unpacks to more than {self.caps.ratio} times its size "
                              f"({self.upload_size} bytes; a zip bomb?)")

    def wrote(self, n: int) -> None:
        self.written += n
        self._check_total(self.written, "unpacks to")


def _open_new(root: Path, parts: list[str]) -> IO[bytes]:
    """Create ``root/parts`` (never following a link, never replacing a file) for writing."""
    parent = root
    for p in parts[:-1]:
        parent = parent / p
        if parent.is_symlink() or (parent.exists() and not parent.is_dir()):
            raise UnpackError(f"refused: {'/'.join(parts)} is inside something that is not a directory")
        parent.mkdir(exist_ok=True)
    try:
        fd = os.open(parent / parts[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    except FileExistsError:
        raise UnpackError(f"refused: member {'/'.join(parts)!r} appears twice") from None
    return os.fdopen(fd, "wb")


def _copy(src: IO[bytes], dst: IO[bytes], budget: _Budget, declared: int, name: str) -> None:
    got = 0
    while True:
        chunk = src.read(CHUNK)
        if not chunk:
            break
        got += len(chunk)
        if got > declared:
            raise UnpackError(f"refused: member {name!r} holds more than the {declared} bytes its header declares")
        budget.wrote(len(chunk))
        dst.write(chunk)


def _unzip(data: bytes, root: Path, budget: _Budget) -> None:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        infos = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise UnpackError(f"refused: not a readable .zip ({exc})") from None
    plan = []
    for info in infos:  # the headers first: nothing is written unless every member passes
        parts = _checked_name(info.filename)
        kind = stat.S_IFMT(info.external_attr >> 16)  # 0: no Unix file type recorded (a plain file)
        if kind == stat.S_IFLNK:
            raise UnpackError(f"refused: member {info.filename!r} is a symbolic link (only files and directories)")
        if kind and kind not in (stat.S_IFREG, stat.S_IFDIR):
            raise UnpackError(f"refused: member {info.filename!r} is not a regular file or directory")
        if info.is_dir() or not parts:
            continue
        if info.flag_bits & 0x1:
            raise UnpackError(f"refused: member {info.filename!r} is encrypted")
        budget.declare(info.filename, parts, info.file_size, info.compress_size)
        plan.append((info, parts))
    for info, parts in plan:
        try:
            with archive.open(info) as src, _open_new(root, parts) as dst:
                _copy(src, dst, budget, info.file_size, info.filename)
        except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError) as exc:
            raise UnpackError(f"refused: member {info.filename!r} cannot be read ({exc})") from None


def _untar(data: bytes, root: Path, budget: _Budget) -> None:
    try:
        archive = tarfile.open(fileobj=io.BytesIO(data), mode="r:*")
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise UnpackError(f"refused: not a readable .tar.gz ({exc})") from None
    with archive:
        members = []
        try:
            for member in archive:  # headers: reading them decompresses the stream, so caps apply now
                parts = _checked_name(member.name)
                if member.issym() or member.islnk():
                    raise UnpackError(f"refused: member {member.name!r} is a link (only files and directories)")
                if not (member.isreg() or member.isdir()):
                    raise UnpackError(f"refused: member {member.name!r} is a device, FIFO or other special file")
                if member.isdir() or not parts:
                    continue
                budget.declare(member.name, parts, member.size, None)
                members.append((member, parts))
        except (tarfile.TarError, OSError, EOFError, zlib_error()) as exc:
            raise UnpackError(f"refused: the .tar.gz cannot be read ({exc})") from None
        for member, parts in members:
            src = archive.extractfile(member)
            if src is None:
                continue
            with src, _open_new(root, parts) as dst:
                _copy(src, dst, budget, member.size, member.name)


def zlib_error() -> type[Exception]:
    import zlib

    return zlib.error


@contextmanager
def _fresh(target: Path) -> Iterator[Path]:
    """``target`` created empty; removed again if the block raises (nothing of a refused upload is kept)."""
    target.mkdir(parents=True)
    try:
        yield target
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)
        raise


def unpack_upload(data: bytes, filename: str, entry: str, target: Path, caps: Caps) -> list[str]:
    """Unpack ``data`` (uploaded as ``filename``) into the new directory ``target``; return its files.

    A .zip or a .tar.gz (recognized by content, not by name) is unpacked; anything else is the
    single entry file itself, saved as ``entry``. Raises :class:`UnpackError` (``target`` removed).
    """
    with _fresh(target):
        budget = _Budget(caps, len(data))
        if data[:4] == b"PK\x03\x04" or data[:4] == b"PK\x05\x06":
            _unzip(data, target, budget)
        elif data[:2] == b"\x1f\x8b" or filename.endswith((".tar", ".tar.gz", ".tgz")):
            _untar(data, target, budget)
        else:
            suffix = Path(filename).suffix.lower()
            if suffix and suffix != Path(entry).suffix.lower():
                # a bot.cpp uploaded as python would be saved as bot.py and fail its build obscurely
                raise UnpackError(f"refused: {Path(filename).name} is not a {Path(entry).suffix} file, and this runtime "
                                  f"runs {entry}: choose the runtime of {suffix} files, or upload {entry}")
            budget.declare(entry, [entry], len(data), None)
            with _open_new(target, [entry]) as fh:
                fh.write(data)
        if not (target / entry).is_file():
            raise UnpackError(f"refused: no {entry} at the top level of the upload (the runtime runs {entry}; "
                              f"put it at the archive's root, not in a folder)")
        return sorted(str(p.relative_to(target)) for p in target.rglob("*") if p.is_file())
