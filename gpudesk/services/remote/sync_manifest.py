"""The file stream and the remote half of code sync. Standard library only, Python 3.7+.

This one module runs in two places. On the desktop, ``sync.py`` uses its
record writer/reader (push writes records, pull reads them). On the machine,
its *source* is started once per connection as a small helper
(``python3 -c``): it answers "what do you have?" (stat, and a content hash
where size matches but the time differs, cached by size+mtime_ns), applies a
push stream, and sends files back for a pull. Keeping the helper alive on
the shared connection makes an unchanged sync one request and one reply,
without paying for a login shell and a Python start each time.

The stream is a sequence of records ``b"F" + header + path + data`` closed by
``b"E"``; the header carries the exact size, ``mtime_ns`` and permission bits.
Each file is written to a hidden temporary name beside its final path and
renamed over it when complete, so a cancelled or dropped sync never leaves a
half-written file under a real name.

Requests and replies are single JSON lines. The helper keeps, per synced
folder, a state file listing the files gpudesk wrote, with their hashes once
known: only those are ever deleted for the desktop. The state file lives in
the machine's user state folder (``$XDG_STATE_HOME/gpudesk/sync``, by default
``~/.local/state/gpudesk/sync``), not in the synced folder, so the folder holds
exactly the project's files.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import struct
import sys
from typing import IO
from typing import Any
from typing import Callable
from typing import Dict
from typing import Iterable
from typing import List
from typing import Optional
from typing import Tuple

PROTOCOL = 1
STATE_DIR = ("gpudesk", "sync")  # under $XDG_STATE_HOME (or ~/.local/state) on the machine
PART_SUFFIX = ".gpdpart"  # temporary names: "." + name + PART_SUFFIX
RECORD_FILE = b"F"
RECORD_END = b"E"
HEADER = struct.Struct(">HQqH")  # path length, size, mtime_ns, mode bits
CHUNK = 1 << 20
HASH_NAME = "sha256"  # OpenSSL's is the fastest on CPUs with SHA extensions

Progress = Callable[[str, int], None]  # (path, bytes just moved)


class Truncated(Exception):
    """The stream ended inside a record: the sender stopped (cancel) or the link dropped."""


def file_hash(path: str) -> str:
    digest = hashlib.new(HASH_NAME)
    with open(path, "rb") as handle:
        while True:
            block = handle.read(CHUNK)
            if not block:
                break
            digest.update(block)
    return digest.hexdigest()


def check_rel(rel: str) -> str:
    """A relative POSIX path with no way out of its folder, or ValueError."""
    wrapped = "/" + rel + "/"
    if (not rel or rel[0] == "/" or "//" in wrapped or "/./" in wrapped or "/../" in wrapped
            or "\x00" in rel or (os.sep == "\\" and ("\\" in rel or ":" in rel))):
        raise ValueError("unsafe path: " + rel[:200])
    return rel


def inside(real: str, real_root: str) -> bool:
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def encode_path(rel: str) -> bytes:
    return rel.encode("utf-8", "surrogateescape")


def decode_path(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


# --------------------------------------------------------------------------- writing records

def record_header(rel: str, size: int, mtime_ns: int, mode: int) -> bytes:
    raw = encode_path(rel)
    return RECORD_FILE + HEADER.pack(len(raw), size, mtime_ns, mode & 0o7777) + raw


def write_file_records(send: Callable[[bytes], None], root: str, rels: Iterable[str],
                       progress: Optional[Progress] = None,
                       cancelled: Optional[Callable[[], bool]] = None,
                       batch: int = 1 << 18) -> Tuple[List[str], int]:
    """Stream the files ``rels`` (relative to ``root``) as records; no end marker.

    Small files are batched into ``batch``-sized sends. A file that vanished is
    skipped; one that shrank while being read is padded and stamped with
    mtime 0, so that the next comparison sends it again. Returns the paths
    sent and the stream bytes.
    """
    buffer = bytearray()
    sent: List[str] = []
    total = 0
    for rel in rels:
        if cancelled is not None and cancelled():
            break
        path = os.path.join(root, *rel.split("/"))
        try:
            handle = open(path, "rb")
        except OSError:
            continue
        with handle:
            info = os.fstat(handle.fileno())
            size = info.st_size
            mode = info.st_mode & 0o777
            if os.name == "nt":  # no execute bits on Windows: plain files are 0644
                mode = 0o644
            mtime_ns = info.st_mtime_ns
            if size <= batch:
                data = handle.read(size)
                if len(data) < size:
                    data, mtime_ns = data.ljust(size, b"\0"), 0
                buffer += record_header(rel, size, mtime_ns, mode)
                buffer += data
                if progress is not None:
                    progress(rel, size)
            else:
                buffer += record_header(rel, size, mtime_ns, mode)
                remaining = size
                while remaining:
                    if cancelled is not None and cancelled():
                        break
                    block = handle.read(min(CHUNK, remaining)) or b"\0" * min(CHUNK, remaining)
                    buffer += block
                    remaining -= len(block)
                    if len(buffer) >= batch:
                        send(bytes(buffer))
                        total += len(buffer)
                        buffer.clear()
                    if progress is not None:
                        progress(rel, len(block))
                if remaining:
                    break  # cancelled inside this file: the receiver discards it
        sent.append(rel)
        if len(buffer) >= batch:
            send(bytes(buffer))
            total += len(buffer)
            buffer.clear()
    if buffer:
        send(bytes(buffer))
        total += len(buffer)
    return sent, total


# --------------------------------------------------------------------------- reading records

def _read_exact(read: Callable[[int], bytes], size: int) -> bytes:
    data = read(size)
    if len(data) == size:
        return data
    parts = [data]
    got = len(data)
    while got < size:
        more = read(size - got)
        if not more:
            raise Truncated
        parts.append(more)
        got += len(more)
    return b"".join(parts)


class Receiver:
    """Writes records under ``root``: temporary name, exact mtime and mode, then rename."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.real_root = os.path.realpath(root)
        self.dirs: Dict[str, str] = {}  # rel folder -> absolute folder prefix ("" if unsafe)
        self.fd_utime = os.utime in os.supports_fd
        self.written: List[Tuple[str, int, int]] = []  # (rel, size, mtime_ns)
        self.errors: List[str] = []

    def _folder(self, rel_dir: str) -> str:
        """The absolute folder (with a trailing separator), created; "" if it is not safe."""
        known = self.dirs.get(rel_dir)
        if known is not None:
            return known
        directory = os.path.join(self.root, *rel_dir.split("/")) if rel_dir else self.root
        try:
            # Check before creating: makedirs through a symlink on the way would create
            # folders outside the root. Check again after, in case one appeared meanwhile.
            safe = inside(os.path.realpath(directory), self.real_root)
            if safe:
                os.makedirs(directory, exist_ok=True)
                safe = inside(os.path.realpath(directory), self.real_root)
        except OSError:
            safe = False
        prefix = os.path.join(directory, "") if safe else ""
        self.dirs[rel_dir] = prefix
        return prefix

    def receive(self, read: Callable[[int], bytes],
                progress: Optional[Progress] = None) -> None:
        """Read records until the end marker; Truncated when the stream stops early."""
        while True:
            # The tag alone first: the end marker is one byte, and a blocking reader asked
            # for more would wait for bytes the sender will only write after our reply.
            tag = read(1)
            if tag == RECORD_END:
                return
            if tag != RECORD_FILE:
                if tag:
                    raise ValueError("not a file record: %r" % (tag,))
                raise Truncated
            head = _read_exact(read, HEADER.size)
            path_len, size, mtime_ns, mode = HEADER.unpack(head)
            rel = decode_path(_read_exact(read, path_len))
            self._receive_file(read, rel, size, mtime_ns, mode, progress)

    def _receive_file(self, read: Callable[[int], bytes], rel: str, size: int, mtime_ns: int,
                      mode: int, progress: Optional[Progress]) -> None:
        fd = -1
        tmp = ""
        try:
            check_rel(rel)
            rel_dir, _, name = rel.rpartition("/")
            folder = self._folder(rel_dir)
            if not folder:
                raise OSError("not a folder inside the sync folder")
            final = folder + name
            tmp = folder + "." + name[:200] + PART_SUFFIX
            fd = os.open(tmp, _WRITE_FLAGS, mode & 0o777 or 0o644)
        except (OSError, ValueError) as exc:
            self.errors.append("%s: %s" % (rel, exc))
            _discard(read, size)
            return
        remaining = size
        try:
            while remaining:
                block = read(min(CHUNK, remaining))
                if not block:
                    raise Truncated
                remaining -= len(block)
                os.write(fd, block)
                if progress is not None:
                    progress(rel, len(block))
            if os.name != "nt":  # os.open's mode: only for a new file, and less the umask
                os.fchmod(fd, mode & 0o777)
            if self.fd_utime:
                os.utime(fd, ns=(mtime_ns, mtime_ns))
            os.close(fd)
            fd = -1
            if not self.fd_utime:
                os.utime(tmp, ns=(mtime_ns, mtime_ns))
            os.replace(tmp, final)
            tmp = ""
            self.written.append((rel, size, mtime_ns))
        except OSError as exc:
            self.errors.append("%s: %s" % (rel, exc))
            _discard(read, remaining)  # keep the stream in step (disk full, say)
        finally:
            if fd >= 0:
                os.close(fd)
            if tmp:
                _unlink_quietly(tmp)


_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0)


def _discard(read: Callable[[int], bytes], size: int) -> None:
    while size:
        block = read(min(CHUNK, size))
        if not block:
            raise Truncated
        size -= len(block)


def _unlink_quietly(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


# --------------------------------------------------------------------------- the remote helper

class FolderState:
    """What gpudesk wrote into one folder on the machine: rel -> [size, mtime_ns, hash]."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.path = state_path(root)
        self.files: Dict[str, List[Any]] = {}
        try:
            with open(self.path, "rb") as handle:
                loaded = json.loads(handle.read().decode("utf-8"))
            if loaded.get("v") == PROTOCOL and loaded.get("root") == root:
                self.files = dict(loaded.get("files", {}))
        except (OSError, ValueError, AttributeError):
            self.files = {}

    def save(self) -> None:
        if not os.path.isdir(self.root):
            return
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        tmp = self.path + PART_SUFFIX
        data = json.dumps({"v": PROTOCOL, "root": self.root, "files": self.files},
                          separators=(",", ":"))
        with open(tmp, "wb") as handle:
            handle.write(data.encode("utf-8"))
        os.replace(tmp, self.path)


def state_path(root: str) -> str:
    """Where the state of the synced folder ``root`` (an absolute path) is kept."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "state")
    digest = hashlib.sha256(encode_path(root)).hexdigest()[:32]
    return os.path.join(base, *STATE_DIR) + os.sep + digest + ".json"


def resolve_root(root: str) -> str:
    return os.path.abspath(os.path.expanduser(root))


def op_manifest(state: FolderState, wanted: Dict[str, List[int]]) -> Dict[str, Any]:
    """Compare the desktop's ``{rel: [size, mtime_ns, mode]}`` with this folder.

    The reply lists only what differs: ``missing`` (theirs, absent here) and
    ``files`` (``rel: [size, mtime_ns, mode, hash, written_by_gpudesk]``) for
    files that differ or that gpudesk wrote and the desktop no longer has.
    A hash is computed only where the size matches and the time does not.
    """
    files: Dict[str, List[Any]] = {}
    missing: List[str] = []
    changed = False
    absent_dirs: Dict[str, bool] = {}
    root = state.root
    for rel in list(wanted) + [rel for rel in state.files if rel not in wanted]:
        want = wanted.get(rel)
        folder = rel.rpartition("/")[0]
        gone = absent_dirs.get(folder)
        if gone is None:
            gone = absent_dirs[folder] = not os.path.isdir(
                os.path.join(root, *folder.split("/")) if folder else root)
        info = None
        if not gone:
            try:
                check_rel(rel)
                info = os.lstat(os.path.join(root, *rel.split("/")))
            except (OSError, ValueError):
                info = None
        if info is None or not stat.S_ISREG(info.st_mode):
            if state.files.pop(rel, None) is not None:
                changed = True
            if want is not None:
                missing.append(rel)
            continue
        mode = info.st_mode & 0o777  # what a push sets
        if (want is not None and want[0] == info.st_size and want[1] == info.st_mtime_ns
                and want[2] == mode):
            continue  # the same as the desktop's: not mentioned
        known = state.files.get(rel)
        digest = ""
        if known is not None and known[0] == info.st_size and known[1] == info.st_mtime_ns:
            digest = known[2]
        if (not digest and want is not None and want[0] == info.st_size
                and want[1] != info.st_mtime_ns):
            try:
                digest = file_hash(os.path.join(root, *rel.split("/")))
            except OSError:
                continue
            if known is not None:  # only files gpudesk wrote are remembered
                state.files[rel] = [info.st_size, info.st_mtime_ns, digest]
                changed = True
        files[rel] = [info.st_size, info.st_mtime_ns, mode, digest,
                      1 if rel in state.files else 0]
    if changed:
        state.save()
    return {"files": files, "missing": missing, "root": root}


def op_apply(state: FolderState, request: Dict[str, Any],
             read: Callable[[int], bytes]) -> Dict[str, Any]:
    """Delete, prune, receive the stream, touch; always record what was written."""
    deleted = 0
    errors: List[str] = []
    os.makedirs(state.root, exist_ok=True)
    real_root = os.path.realpath(state.root)
    for rel in request.get("delete", []):
        try:
            check_rel(rel)
            path = os.path.join(state.root, *rel.split("/"))
            if not inside(os.path.realpath(os.path.dirname(path)), real_root):
                raise ValueError("outside the sync folder")
            info = os.lstat(path)
            if stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode):
                os.unlink(path)
                deleted += 1
        except FileNotFoundError:
            pass
        except (OSError, ValueError) as exc:
            errors.append("%s: %s" % (rel, exc))
        state.files.pop(rel, None)
    for rel in sorted(request.get("prune", []), key=lambda r: -r.count("/")):
        try:
            os.rmdir(os.path.join(state.root, *check_rel(rel).split("/")))
        except (OSError, ValueError):
            pass  # not empty (the machine's own files) or already gone
    receiver = Receiver(state.root)
    cancelled = False
    try:
        receiver.receive(read)
    except Truncated:
        cancelled = True
    for rel, size, mtime_ns in receiver.written:
        state.files[rel] = [size, mtime_ns, ""]
    touched = 0
    if not cancelled:
        for rel, mtime_ns, mode in request.get("touch", []):
            try:
                path = os.path.join(state.root, *check_rel(rel).split("/"))
                if not inside(os.path.realpath(os.path.dirname(path)), real_root):
                    raise ValueError("outside the sync folder")
                if not stat.S_ISREG(os.lstat(path).st_mode):
                    raise ValueError("not a regular file")
                os.chmod(path, mode & 0o777)
                os.utime(path, ns=(mtime_ns, mtime_ns))
                info = os.lstat(path)
                entry = state.files.get(rel)
                state.files[rel] = [info.st_size, mtime_ns, entry[2] if entry else ""]
                touched += 1
            except (OSError, ValueError) as exc:
                errors.append("%s: %s" % (rel, exc))
    state.save()
    return {"written": len(receiver.written), "deleted": deleted, "touched": touched,
            "errors": errors + receiver.errors, "cancelled": cancelled}


def walk_files(root: str, under: str) -> Dict[str, List[int]]:
    """Regular files below ``root/under`` (no symlinks followed, no .git, no partial files)."""
    found: Dict[str, List[int]] = {}
    start = os.path.join(root, *under.split("/")) if under else root
    try:
        info = os.lstat(start)
    except OSError:
        return found
    if stat.S_ISREG(info.st_mode):
        found[under] = [info.st_size, info.st_mtime_ns, stat.S_IMODE(info.st_mode)]
        return found
    todo = [(start, under)]
    while todo:
        directory, prefix = todo.pop()
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            rel = prefix + "/" + entry.name if prefix else entry.name
            if entry.name == ".git" or entry.name.endswith(PART_SUFFIX):
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    todo.append((entry.path, rel))
                elif entry.is_file(follow_symlinks=False):
                    info = entry.stat(follow_symlinks=False)
                    found[rel] = [info.st_size, info.st_mtime_ns, stat.S_IMODE(info.st_mode)]
            except OSError:
                continue
    return found


def serve(inp: IO[bytes], out: IO[bytes]) -> int:
    """The helper's loop: one JSON request line in, one JSON reply line out."""
    def reply(message: Dict[str, Any]) -> None:
        out.write(json.dumps(message, separators=(",", ":")).encode("utf-8") + b"\n")
        out.flush()

    def emit(data: bytes) -> None:
        out.write(data)

    states: Dict[str, FolderState] = {}

    def state_for(root: str) -> FolderState:
        resolved = resolve_root(root)
        if resolved not in states:
            states[resolved] = FolderState(resolved)
        return states[resolved]

    reply({"hello": PROTOCOL, "python": sys.version.split()[0]})
    while True:
        line = inp.readline()
        if not line:
            return 0
        request = json.loads(line.decode("utf-8"))
        op = request.get("op")
        try:
            if op == "manifest":
                reply(op_manifest(state_for(request["root"]), request["files"]))
            elif op == "apply":
                result = op_apply(state_for(request["root"]), request, inp.read)
                reply(result)
                if result["cancelled"]:
                    return 3
            elif op == "list":
                root = resolve_root(request["root"])
                files: Dict[str, List[int]] = {}
                for under in request.get("under", [""]):
                    files.update(walk_files(root, check_rel(under) if under else ""))
                reply({"files": files, "root": root})
            elif op == "send":
                root = resolve_root(request["root"])
                safe = [check_rel(rel) for rel in request["files"]]
                sent, _ = write_file_records(emit, root, safe)
                out.write(RECORD_END)
                reply({"sent": len(sent), "missing": sorted(set(safe) - set(sent))})
            else:
                reply({"error": "unknown request %r" % (op,)})
        except (OSError, ValueError, KeyError) as exc:
            reply({"error": "%s: %s" % (type(exc).__name__, exc)})


if __name__ == "__main__":
    sys.exit(serve(open(sys.stdin.fileno(), "rb", buffering=1 << 18, closefd=False),
                   open(sys.stdout.fileno(), "wb", buffering=1 << 18, closefd=False)))
