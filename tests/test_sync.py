"""Code sync against a real sshd: .gitignore rules (checked against git), increments, pulls."""

# ruff: noqa: F811 - pytest fixtures imported from fixtures_sshd arrive as parameters
from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures_sshd import SshdServer  # noqa: F401
from fixtures_sshd import sshd  # noqa: F401

from gpudesk.services.remote import sync_manifest as wire
from gpudesk.services.remote.host_keys import HostKeyPolicy
from gpudesk.services.remote.host_keys import PinStore
from gpudesk.services.remote.ssh import SshConnection
from gpudesk.services.remote.ssh import SshTarget
from gpudesk.services.remote.sync import SyncCancelled
from gpudesk.services.remote.sync import SyncError
from gpudesk.services.remote.sync import SyncIncomplete
from gpudesk.services.remote.sync import SyncProgress
from gpudesk.services.remote.sync import plan_push
from gpudesk.services.remote.sync import pull
from gpudesk.services.remote.sync import push
from gpudesk.services.remote.sync import scan
from gpudesk.services.remote.sync import walk_roots

PROJECT: dict[str, bytes] = {
    ".gitignore": b"__pycache__/\n*.ckpt\n!keep.ckpt\ndata/\n!data/keep.txt\n/build\n*.log\n",
    "train.py": b"import torch\nprint('train')\n",
    "run.sh": b"#!/bin/sh\npython3 train.py\n",
    "keep.ckpt": b"small but wanted",
    "pkg/__init__.py": b"",
    "pkg/model.py": b"class Model: ...\n",
    "pkg/.gitignore": b"scratch/\n*.tmp\n!important.tmp\n",
    "pkg/important.tmp": b"re-included by the nested file",
    "pkg/build/gen.py": b"# only the top-level build/ is ignored\n",
    "docs/notes with space.md": "模型 notes\n".encode(),
    "données/naïve file 模型.py": b"# unicode and spaces\n",
    "empty.txt": b"",
}
IGNORED: dict[str, bytes] = {
    "pkg/__pycache__/model.cpython-311.pyc": b"\0" * 100,
    "run.ckpt": b"\1" * 5000,
    "pkg/sub/deep.ckpt": b"\1" * 10,
    "data/train.bin": b"\2" * 20000,
    "data/keep.txt": b"git cannot re-include a file in an ignored folder",
    "build/out.o": b"\3" * 30,
    "pkg/scratch/tmp.txt": b"local only",
    "pkg/x.tmp": b"nested rule",
    "train.log": b"log",
    "secrets.env": b"TOKEN=in .git/info/exclude",
    ".git/HEAD": b"ref: refs/heads/main\n",
}


def write_tree(root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def make_project(root: Path) -> dict[str, bytes]:
    write_tree(root, {**PROJECT, **IGNORED})
    (root / ".git" / "info").mkdir(parents=True)
    (root / ".git" / "info" / "exclude").write_text("secrets.env\n")
    (root / "run.sh").chmod(0o755)
    return dict(PROJECT)


def tree(root: Path) -> dict[str, bytes]:
    """Every regular file under ``root`` (symlinks listed as such), relative path -> bytes."""
    if not root.exists():
        return {}
    found: dict[str, bytes] = {}
    for path in root.rglob("*"):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink():
            found[rel] = b"<symlink>"
        elif path.is_file():
            found[rel] = path.read_bytes()
    return found


def git_would_track(root: Path) -> set[str]:
    """git's own answer: the untracked files it does not ignore."""
    subprocess.run(["git", "init", "-q", str(root)], check=True, capture_output=True)
    listed = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--others",
                             "--exclude-standard"], check=True, capture_output=True)
    return {p.decode() for p in listed.stdout.split(b"\0") if p}


@pytest.fixture
def conn(sshd: SshdServer) -> Iterator[SshConnection]:
    target = SshTarget(sshd.host, sshd.port, sshd.user, key_file=sshd.client_key)
    connection = SshConnection(target, HostKeyPolicy.accept_new(), store=PinStore())
    try:
        yield connection
    finally:
        connection.close()


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, Path, dict[str, bytes]]:
    local, remote = tmp_path / "project", tmp_path / "remote"
    local.mkdir()
    return local, remote, make_project(local)


# --------------------------------------------------------------------------- ignore rules

def test_scan_follows_gitignore_as_git_does(tmp_path: Path) -> None:
    local = tmp_path / "project"
    local.mkdir()
    wanted = make_project(local)
    plan = scan(local)
    assert {f.path for f in plan.files} == set(wanted)
    shutil.rmtree(local / ".git")
    (local / ".gitignore").write_text(PROJECT[".gitignore"].decode() + "secrets.env\n")
    assert git_would_track(local) == set(wanted)
    skipped = {s.path: s.reason for s in plan.skipped}
    assert skipped["data"] == "gitignore" and skipped["pkg/__pycache__"] == "gitignore"
    assert skipped[".git"] == ".git" and skipped["secrets.env"] == "gitignore"


def test_plan_push_measures_what_is_skipped(tmp_path: Path) -> None:
    local = tmp_path / "project"
    local.mkdir()
    make_project(local)
    plan = plan_push(local)
    data = next(s for s in plan.skipped if s.path == "data")
    data_bytes = len(IGNORED["data/train.bin"]) + len(IGNORED["data/keep.txt"])
    assert (data.size, data.files, data.is_dir, data.complete) == (data_bytes, 2, True, True)
    assert plan.total_bytes == sum(len(v) for v in PROJECT.values())
    with pytest.raises(SyncError, match="is not a folder"):
        scan(tmp_path / "missing")


def test_walk_roots_limits_where_a_pull_looks() -> None:
    assert walk_roots(["checkpoints/*.pt", "logs/run1/", "# comment", ""]) == [
        "checkpoints", "logs/run1"]
    assert walk_roots(["/checkpoints/", "checkpoints/best/*.pt"]) == ["checkpoints"]
    assert walk_roots(["checkpoints/"]) == [""]  # a folder name alone: at any depth
    assert walk_roots(["*.pt"]) == [""]  # no slash: any depth
    assert walk_roots(["**/x.pt"]) == [""]


# --------------------------------------------------------------------------- push

def test_push_sends_exactly_the_files_git_would_track(
        conn: SshConnection, project: tuple[Path, Path, dict[str, bytes]]) -> None:
    local, remote, wanted = project
    result = push(conn, local, str(remote))
    assert tree(remote) == wanted
    assert result.files_sent == len(wanted) and set(result.sent) == set(wanted)
    assert result.bytes_sent == sum(len(v) for v in wanted.values())
    assert result.round_trips == 2 and not result.errors
    for rel in wanted:  # times kept exactly: the next push can trust size + mtime
        assert os.stat(remote / rel).st_mtime_ns == os.stat(local / rel).st_mtime_ns
    assert os.stat(remote / "run.sh").st_mode & 0o777 == 0o755
    assert os.stat(remote / "train.py").st_mode & 0o777 == 0o644
    assert not [p for p in remote.rglob("*") if p.name.endswith(wire.PART_SUFFIX)]
    # git agrees with the file list (with the exclude rule moved where a fresh repo sees it).
    shutil.rmtree(local / ".git")
    with (local / ".gitignore").open("a") as handle:
        handle.write("secrets.env\n")
    assert git_would_track(local) == set(wanted)


def test_second_push_sends_only_what_changed(
        conn: SshConnection, project: tuple[Path, Path, dict[str, bytes]]) -> None:
    local, remote, wanted = project
    push(conn, local, str(remote))
    (local / "train.py").write_bytes(b"import torch\nprint('TRAIN')\n")  # same size
    (local / "pkg/model.py").write_bytes(b"class Model:\n    layers = 12\n")
    (local / "pkg/new.py").write_bytes(b"NEW = 1\n")
    (local / "data/more.bin").write_bytes(b"ignored, not sent")
    os.utime(local / "empty.txt", ns=(1_600_000_000_000_000_000,) * 2)  # time only
    changed = {"train.py", "pkg/model.py", "pkg/new.py"}
    result = push(conn, local, str(remote))
    assert set(result.sent) == changed and result.files_sent == 3
    assert result.bytes_sent == sum((local / rel).stat().st_size for rel in changed)
    assert result.touched == 1 and result.unchanged == len(wanted) - 3
    assert result.round_trips == 2
    assert tree(remote) == {rel: (local / rel).read_bytes() for rel in [*wanted, "pkg/new.py"]}
    assert os.stat(remote / "empty.txt").st_mtime_ns == 1_600_000_000_000_000_000


def test_push_with_nothing_changed_sends_nothing(
        conn: SshConnection, project: tuple[Path, Path, dict[str, bytes]]) -> None:
    local, remote, wanted = project
    push(conn, local, str(remote))
    before = conn.exec_count
    result = push(conn, local, str(remote))
    assert (result.files_sent, result.bytes_sent, result.touched, result.deleted) == (0, 0, 0, 0)
    assert result.unchanged == len(wanted) and result.round_trips == 1
    assert result.stream_bytes == 0
    assert conn.exec_count == before  # the helper from the first push answered
    assert push(conn, local, str(remote), dry_run=True).files_sent == 0


def test_only_a_mode_change_is_a_touch_not_a_send(
        conn: SshConnection, project: tuple[Path, Path, dict[str, bytes]]) -> None:
    local, remote, _ = project
    push(conn, local, str(remote))
    (local / "train.py").chmod(0o755)
    (local / "run.sh").chmod(0o700)
    result = push(conn, local, str(remote))
    assert (result.files_sent, result.touched) == (0, 2)
    assert os.stat(remote / "train.py").st_mode & 0o777 == 0o755
    assert os.stat(remote / "run.sh").st_mode & 0o777 == 0o700


def test_delete_removes_only_files_gpudesk_wrote(
        conn: SshConnection, project: tuple[Path, Path, dict[str, bytes]]) -> None:
    local, remote, _ = project
    push(conn, local, str(remote))
    (remote / "outputs").mkdir()
    (remote / "outputs" / "model.pt").write_bytes(b"made on the machine")
    (remote / "pkg" / "made-remotely.txt").write_bytes(b"also the machine's")
    (local / "pkg" / "model.py").unlink()
    shutil.rmtree(local / "données")

    kept = push(conn, local, str(remote), delete=False)
    assert kept.deleted == 0 and (remote / "pkg" / "model.py").exists()
    assert (remote / "données" / "naïve file 模型.py").exists()

    dry = push(conn, local, str(remote), delete=True, dry_run=True)
    assert set(dry.deleted_paths) == {"pkg/model.py", "données/naïve file 模型.py"}
    assert (remote / "pkg" / "model.py").exists()

    result = push(conn, local, str(remote), delete=True)
    assert result.deleted == 2 and result.files_sent == 0
    assert not (remote / "pkg" / "model.py").exists()
    assert not (remote / "données").exists()  # emptied folder pruned
    assert (remote / "outputs" / "model.pt").read_bytes() == b"made on the machine"
    assert (remote / "pkg" / "made-remotely.txt").exists()
    assert push(conn, local, str(remote), delete=True).deleted == 0


def test_symlinks_are_not_followed_or_sent(
        conn: SshConnection, project: tuple[Path, Path, dict[str, bytes]],
        tmp_path: Path) -> None:
    """Documented: a symlink in the project is skipped (reason "symlink"), never followed."""
    local, remote, wanted = project
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "private.key").write_bytes(b"not part of the project")
    (local / "link-to-outside").symlink_to(outside, target_is_directory=True)
    (local / "train-link.py").symlink_to("train.py")
    plan = scan(local)
    reasons = {s.path: s.reason for s in plan.skipped}
    assert reasons["link-to-outside"] == "symlink" and reasons["train-link.py"] == "symlink"
    push(conn, local, str(remote))
    assert tree(remote) == wanted


def test_a_symlink_on_the_machine_cannot_lead_writes_out_of_the_folder(
        conn: SshConnection, project: tuple[Path, Path, dict[str, bytes]],
        tmp_path: Path) -> None:
    local, remote, wanted = project
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    remote.mkdir()
    (remote / "pkg").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(SyncIncomplete) as caught:
        push(conn, local, str(remote))
    failed = {e.split(":")[0] for e in caught.value.result.errors}
    assert failed == {rel for rel in wanted if rel.startswith("pkg/")}
    assert list(elsewhere.iterdir()) == []
    assert (remote / "train.py").read_bytes() == wanted["train.py"]


def test_large_file_round_trips(conn: SshConnection, tmp_path: Path) -> None:
    local, remote, back = tmp_path / "project", tmp_path / "remote", tmp_path / "back"
    local.mkdir()
    blob = os.urandom(6 * 2**20 + 12345)  # several stream batches and channel windows
    (local / "weights.bin").write_bytes(blob)
    (local / "small.py").write_bytes(b"x = 1\n")
    seen: list[SyncProgress] = []
    result = push(conn, local, str(remote), progress=seen.append)
    assert result.bytes_sent == len(blob) + 6
    digest = hashlib.sha256(blob).hexdigest()
    assert hashlib.sha256((remote / "weights.bin").read_bytes()).hexdigest() == digest
    assert seen[-1].phase == "done" and seen[-1].bytes_done == len(blob) + 6
    sends = [p for p in seen if p.phase == "send"]
    assert sends and sends[-1].bytes_done == len(blob) + 6
    got = pull(conn, str(remote), ["*.bin"], back)
    assert got.sent == ("weights.bin",) and got.bytes_sent == len(blob)
    assert hashlib.sha256((back / "weights.bin").read_bytes()).hexdigest() == digest


# --------------------------------------------------------------------------- pull

def test_pull_brings_back_only_matching_files(conn: SshConnection, tmp_path: Path) -> None:
    remote, local = tmp_path / "remote", tmp_path / "here"
    write_tree(remote, {
        "checkpoints/epoch1.pt": b"1" * 1000,
        "checkpoints/epoch2.pt": b"2" * 2000,
        "checkpoints/notes.txt": b"not a .pt",
        "checkpoints/old/epoch0.pt": b"0" * 10,
        "logs/train.log": b"loss 0.1\n",
        "train.py": b"code",
    })
    (remote / "checkpoints" / "run.sh").write_bytes(b"#!/bin/sh\n")
    (remote / "checkpoints" / "run.sh").chmod(0o755)
    result = pull(conn, str(remote), ["checkpoints/*.pt"], local)
    assert tree(local) == {"checkpoints/epoch1.pt": b"1" * 1000,
                           "checkpoints/epoch2.pt": b"2" * 2000}
    assert (result.files_sent, result.bytes_sent) == (2, 3000)
    assert (os.stat(local / "checkpoints/epoch1.pt").st_mtime_ns
            == os.stat(remote / "checkpoints/epoch1.pt").st_mtime_ns)

    again = pull(conn, str(remote), ["checkpoints/*.pt"], local)
    assert (again.files_sent, again.unchanged) == (0, 2)

    (remote / "checkpoints" / "epoch2.pt").write_bytes(b"3" * 2500)
    more = pull(conn, str(remote), ["checkpoints/", "!checkpoints/old/", "logs/"], local)
    assert set(more.sent) == {"checkpoints/epoch2.pt", "checkpoints/notes.txt",
                              "checkpoints/run.sh", "logs/train.log"}
    assert (local / "checkpoints/epoch2.pt").read_bytes() == b"3" * 2500
    assert os.stat(local / "checkpoints/run.sh").st_mode & 0o777 == 0o755
    assert not (local / "checkpoints" / "old").exists() and not (local / "train.py").exists()
    assert pull(conn, str(remote), ["*.nothing"], local).files_sent == 0


# --------------------------------------------------------------------------- cancel

def test_cancelled_push_leaves_no_partial_files_and_the_next_push_finishes(
        conn: SshConnection, tmp_path: Path) -> None:
    local, remote = tmp_path / "project", tmp_path / "remote"
    local.mkdir()
    for i in range(6):
        (local / f"part{i}.bin").write_bytes(bytes([i]) * (600_000 + i))
    cancel = threading.Event()

    def progress(p: SyncProgress) -> None:
        if p.phase == "send" and p.bytes_done > 900_000:
            cancel.set()

    with pytest.raises(SyncCancelled) as caught:
        push(conn, local, str(remote), progress=progress, cancel=cancel)
    written = caught.value.result.files_sent
    assert 1 <= written < 6
    on_machine = sorted(p.name for p in remote.iterdir())
    assert len(on_machine) == written  # whole files only, no temporary names
    for name in on_machine:
        assert (remote / name).read_bytes() == (local / name).read_bytes()
    result = push(conn, local, str(remote))
    assert result.files_sent == 6 - written
    assert tree(remote) == tree(local)


# --------------------------------------------------------------------------- the stream

def test_stream_round_trip_and_unsafe_paths(tmp_path: Path) -> None:
    src, dst = tmp_path / "src", tmp_path / "dst"
    write_tree(src, {"a.txt": b"alpha", "sub/b.bin": os.urandom(300_000), "empty": b""})
    buffer = io.BytesIO()
    sent, size = wire.write_file_records(buffer.write, str(src), ["a.txt", "sub/b.bin",
                                                                    "empty", "gone.txt"])
    assert sent == ["a.txt", "sub/b.bin", "empty"]  # a vanished file is skipped
    evil = b"evil"
    buffer.write(wire.record_header("../escape.txt", len(evil), 0, 0o644) + evil)
    buffer.write(wire.RECORD_END)
    buffer.write(b'{"reply": "after the stream"}\n')
    stream = io.BytesIO(buffer.getvalue())
    receiver = wire.Receiver(str(dst))
    receiver.receive(stream.read)
    assert stream.read() == b'{"reply": "after the stream"}\n'  # not one byte too many
    assert [r for r, _s, _m in receiver.written] == ["a.txt", "sub/b.bin", "empty"]
    assert receiver.errors and "unsafe path" in receiver.errors[0]
    assert tree(dst) == tree(src)
    assert not (tmp_path / "escape.txt").exists()

    cut = io.BytesIO(buffer.getvalue()[: size // 2])  # the link dropped mid-file
    partial = wire.Receiver(str(tmp_path / "cut"))
    with pytest.raises(wire.Truncated):
        partial.receive(cut.read)
    assert tree(tmp_path / "cut") == {"a.txt": b"alpha"}  # no half-written file, not even hidden
