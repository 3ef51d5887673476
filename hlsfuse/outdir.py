"""Writing a whole output folder so that a failure, or a kill at any instant, never loses one.

Files are written into a hidden staging folder beside the target, ``.<name>.<pid>.<random>``.
When they are all there, the staging folder takes the target's place in one step:

    new target      rename(staging, OUT), which succeeds only onto a missing or empty folder, so
                    files the user put in OUT meanwhile stay and the compile is refused
    --force         renameat2(staging, OUT, RENAME_EXCHANGE) (Linux 3.15+, glibc 2.28+): the two
                    folders swap atomically, then the old one (now the staging folder) is deleted

so whenever the process dies, OUT is either the old folder or the new one, complete. Where the
exchange is not available (another system, a filesystem without it), the old OUT is first renamed
to ``.<name>.old.<pid>`` and the new one moved in; a kill between the two renames leaves no OUT for
a moment, and the next ``write_tree`` or ``check_out_dir`` of that OUT puts the old folder back.
Leftover staging folders of dead processes are deleted by the next run, never those of a live one.
An existing non-empty target is refused unless ``force`` is given.

``write_tree(..., checksums=True)`` adds ``checksums.json`` (the SHA-256 of every other file) to what
``hlsfuse compile`` writes (``Design.write``), and the simulators ``verify`` the files they use against it first: a file
edited, truncated or deleted since is a one-line error naming it, never a functional PASS or FAIL
(unless the user says the edit is deliberate: ``--allow-edits``).

``Files`` holds what is to be written. A large file (a model's weights as text) can be given as a
producer of its content in chunks: ``write_tree`` writes and hashes it chunk by chunk, so that it is
never whole in memory, and the design's files are never all in memory at once.
"""

from __future__ import annotations

import ctypes
import errno
import hashlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path, PurePosixPath

from .errors import HlsfuseError

__all__ = ["check_out_dir", "write_tree", "Files", "Producer", "CHECKSUMS", "checksums_text", "verify", "amend"]

CHECKSUMS = "checksums.json"
_GRAPH = ("graph.json", "graph.npz")
"""The graph the simulators take their golden outputs from, and its side file (a large graph's values)."""
_SOURCES = (".cpp", ".h", ".hpp", ".v", ".sv", ".vh", ".mem", ".json", ".tcl", ".cfg", ".txt", ".dat", ".bin")
"""Suffixes of the files the simulators and AMD's tools read from OUT (a waveform or a log is none of them)."""


def _dead(pid: int) -> bool:
    """Whether process ``pid`` has ended, so that its staging folders may go. An id no process can have
    (beyond a C int: ``.OUT.99999999999999999999.x``) names no run of ours: its folder is left alone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError):  # another user's process; no process at all
        return False
    return False


def _remove(path: Path) -> None:
    """Delete a folder of ours, or the symbolic link an OUT was (never what it points to)."""
    if path.is_symlink():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path, ignore_errors=True)


def _recover(out: Path) -> None:
    """Put back an OUT a killed run had moved away, and delete dead runs' staging folders of OUT."""
    pattern = re.compile(rf"\.{re.escape(out.name)}\.(old\.)?(\d+)(\..*)?")
    parent = out.parent
    if not parent.is_dir():
        return
    for entry in sorted(parent.iterdir()):
        match = pattern.fullmatch(entry.name)
        if match is None or not (entry.is_dir() or entry.is_symlink()) or not _dead(int(match.group(2))):
            continue
        if match.group(1) and not out.exists():
            os.replace(entry, out)
        else:
            _remove(entry)


def check_out_dir(out: str | os.PathLike, force: bool) -> Path:
    """Refuse a target that exists and is not an empty folder (unless ``force``); return its path."""
    out = Path(out)
    _recover(out)
    if out.exists():
        if not out.is_dir():
            raise HlsfuseError(f"{out}: exists and is not a folder")
        if any(out.iterdir()) and not force:
            raise HlsfuseError(f"{out}: folder exists and is not empty (use --force to replace it)")
    if not out.parent.resolve().is_dir():
        raise HlsfuseError(f"{out}: parent folder '{out.parent}' does not exist")
    return out


Producer = Callable[[], Iterable[str | bytes]]
"""A file's content made on demand, in chunks (all text or all bytes)."""


class Files(Mapping[str, str | bytes]):
    """Output files by relative POSIX path: text, bytes or a ``Producer``. Reading a produced file makes its
    whole content (again each time: nothing is kept); ``chunks`` streams it."""

    def __init__(self, entries: Mapping[str, str | bytes | Producer] | None = None):
        self._entries: dict[str, str | bytes | Producer] = {}
        if entries is not None:
            self.add(entries)

    def __getitem__(self, path: str) -> str | bytes:
        data = self._entries[path]
        if not callable(data):
            return data
        pieces = list(data())
        return b"".join(pieces) if pieces and isinstance(pieces[0], bytes) else "".join(pieces)

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __setitem__(self, path: str, data: str | bytes | Producer) -> None:
        self._entries[path] = data

    def add(self, entries: Mapping[str, str | bytes | Producer], prefix: str = "") -> None:
        """Add ``entries`` under ``prefix`` (``"hls/"``); the producers of a ``Files`` stay producers."""
        raw = entries._entries if isinstance(entries, Files) else entries
        for path, data in raw.items():
            self._entries[prefix + path] = data

    def chunks(self, path: str) -> Iterator[bytes]:
        """The content of ``path`` as UTF-8 bytes, in pieces of about a megabyte (a template makes many small ones)."""
        data = self._entries[path]
        if not callable(data):
            yield data.encode("utf-8") if isinstance(data, str) else data
            return
        pieces, size = [], 0
        for piece in data():
            pieces.append(piece)
            size += len(piece)
            if size >= _CHUNK:
                yield _joined(pieces)
                pieces, size = [], 0
        if pieces:
            yield _joined(pieces)


_CHUNK = 1 << 20


def _joined(pieces: list[str | bytes]) -> bytes:
    return b"".join(pieces) if isinstance(pieces[0], bytes) else "".join(pieces).encode("utf-8")


_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


def _exchange(a: Path, b: Path) -> bool:
    """Swap the folders ``a`` and ``b`` in one step; False where this system or filesystem cannot."""
    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if renameat2 is None:
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EINVAL):
        return False
    raise OSError(err, os.strerror(err), str(b))


def _replace(staging: Path, out: Path, force: bool) -> None:
    """``staging`` becomes ``out``; the old ``out`` is deleted (the module docstring). Without ``force``
    one rename, which succeeds only onto a missing or empty folder: files the user put in OUT while
    the compile ran are never replaced."""
    if not force:
        try:
            os.rename(staging, out)
        except OSError as exc:
            if exc.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR, errno.EISDIR):
                raise HlsfuseError(f"{out}: was filled or made a file while the output was made; it is left as it "
                                   "is and nothing was written (use --force to replace it)") from None
            raise
        return
    if not out.exists():
        os.replace(staging, out)
        return
    if _exchange(staging, out):
        _remove(staging)  # the old folder (or link) now
        return
    trash = out.with_name(f".{out.name}.old.{os.getpid()}")
    os.replace(out, trash)
    os.replace(staging, out)
    _remove(trash)


def write_tree(out: str | os.PathLike, files: Mapping[str, str | bytes | Producer], force: bool = False,
               checksums: bool = False) -> Path:
    """Write ``files`` (relative POSIX path -> text, bytes or a producer) as the folder ``out``, each file
    streamed; ``checksums``: and CHECKSUMS, the SHA-256 of each, taken as it is written."""
    out = check_out_dir(out, force)
    files = files if isinstance(files, Files) else Files(files)
    for rel in files:
        parts = PurePosixPath(rel).parts
        if PurePosixPath(rel).is_absolute() or ".." in parts or not parts:
            raise HlsfuseError(f"refusing to write '{rel}' outside the output folder")
    if checksums and CHECKSUMS in files:
        raise HlsfuseError(f"{out}: {CHECKSUMS} is written from the other files, not given")
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.{os.getpid()}.", dir=out.parent.resolve()))
    try:
        digests = {}
        for rel in sorted(files):
            digests[rel] = _write(staging / rel, files.chunks(rel), out, rel)
        if checksums:
            _write(staging / CHECKSUMS, [_checksums(digests).encode("utf-8")], out, CHECKSUMS)
        os.chmod(staging, 0o755)
        _replace(staging, out, force)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return out


def _write(path: Path, chunks: Iterable[bytes], out: Path, rel: str) -> str:
    """Write ``chunks`` to ``path``; their SHA-256."""
    digest = hashlib.sha256()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as file:
            for chunk in chunks:
                file.write(chunk)
                digest.update(chunk)
    except OSError as exc:  # a full disk says nothing of the file; the user needs OUT's path
        raise HlsfuseError(f"{out}: cannot write {rel}: {exc.strerror or exc}; {out} is left as it was") from None
    return digest.hexdigest()


def _digest(data: str | bytes) -> str:
    return hashlib.sha256(data.encode("utf-8") if isinstance(data, str) else data).hexdigest()


def _checksums(digests: Mapping[str, str]) -> str:
    return json.dumps({"sha256": dict(sorted(digests.items()))}, indent=1) + "\n"


def checksums_text(files: Mapping[str, str | bytes]) -> str:
    """CHECKSUMS as ``write_tree`` writes it for ``files`` (each read in turn)."""
    return _checksums({rel: _digest(files[rel]) for rel in files})


def verify(out: str | os.PathLike, folders: tuple[str, ...]) -> None:
    """Check graph.json (and graph.npz) and every file ``hlsfuse compile`` wrote under ``folders`` of OUT
    against CHECKSUMS."""
    out = Path(out)
    path = out / CHECKSUMS
    hint = "compile again, or pass --allow-edits to simulate the files as they are"
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise HlsfuseError(f"{path}: missing, so the files cannot be checked against what hlsfuse compile wrote; "
                           f"{hint}") from None
    except (OSError, ValueError) as exc:
        raise HlsfuseError(f"{path}: unreadable ({exc}); {hint}") from None
    digests = document.get("sha256") if isinstance(document, dict) else None
    if not isinstance(digests, dict) or not all(isinstance(d, str) for d in digests.values()):
        raise HlsfuseError(f"{path}: not what hlsfuse compile writes (expected an object {{\"sha256\": {{file: "
                           f"SHA-256 hex digest}}}}); {hint}")
    for folder in folders:  # a source the tools would read that compile did not write (or whose entry is gone)
        for file in sorted((out / folder).rglob("*")):
            rel = file.relative_to(out).as_posix()
            if rel not in digests and file.is_file() and (file.suffix in _SOURCES or file.name == "Makefile"):
                raise HlsfuseError(f"{file}: not written by hlsfuse compile (it has no entry in {path}); {hint}")
    # a graph.npz without an entry is no source: a graph.json compile wrote names it only when it wrote it too
    if "graph.json" not in digests and (out / "graph.json").is_file():
        raise HlsfuseError(f"{out / 'graph.json'}: has no entry in {path}; {hint}")
    for rel, digest in digests.items():
        if rel not in _GRAPH and not rel.startswith(tuple(f"{f}/" for f in folders)):
            continue
        file = out / rel
        try:
            data = file.read_bytes()
        except FileNotFoundError:
            raise HlsfuseError(f"{file}: deleted since hlsfuse compile wrote it; {hint}") from None
        if _digest(data) != digest:
            raise HlsfuseError(f"{file}: changed since hlsfuse compile wrote it; {hint}")


def amend(out: str | os.PathLike, files: Mapping[str, str]) -> None:
    """Add or replace ``files`` (relative path -> text) in a folder ``hlsfuse compile`` wrote, with their entries
    in CHECKSUMS: what a later command adds to the design's reports (``hlsfuse synth``: synth.json and the
    synthesis section of report.md). Every file and the new CHECKSUMS are moved in together, each whole."""
    from .fileio import write_together

    out = Path(out)
    path = out / CHECKSUMS
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        digests = dict(document["sha256"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise HlsfuseError(f"{path}: unreadable ({exc}); compile the design again") from None
    for rel, text in files.items():
        digests[rel] = _digest(text)
    write_together({**{out / rel: text for rel, text in files.items()}, path: _checksums(digests)})
