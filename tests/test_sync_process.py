"""The app's push in a niced child process, against a real sshd: same files, progress and
errors as an in-process push, host keys checked against the pins only."""

# ruff: noqa: F811 - pytest fixtures imported from fixtures_sshd arrive as parameters
from __future__ import annotations

import os
import pickle
import signal
import threading
from pathlib import Path

import pytest
from fixtures_sshd import SshdServer  # noqa: F401
from fixtures_sshd import sshd  # noqa: F401

from gpudesk.services.remote.host_keys import HostKeyError
from gpudesk.services.remote.host_keys import HostKeyPolicy
from gpudesk.services.remote.host_keys import PinStore
from gpudesk.services.remote.ssh import SshConnection
from gpudesk.services.remote.ssh import SshTarget
from gpudesk.services.remote.sync import SyncCancelled
from gpudesk.services.remote.sync import SyncError
from gpudesk.services.remote.sync import SyncProgress
from gpudesk.services.remote.sync import SyncResult
from gpudesk.services.remote.sync_process import NICE
from gpudesk.services.remote.sync_process import PushJob
from gpudesk.services.remote.sync_process import push_in_child

FILES = {"train.py": b"print('hi')\n", "pkg/model.py": b"class M: ...\n",
         "data/big.bin": os.urandom(1 << 16), ".gitignore": b"*.log\n", "out.log": b"no"}


def _project(root: Path, n_extra: int = 0) -> Path:
    for rel, data in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)
    for i in range(n_extra):
        (root / f"many/f{i}.txt").parent.mkdir(parents=True, exist_ok=True)
        (root / f"many/f{i}.txt").write_bytes(os.urandom(4096))
    return root


def _pin(server: SshdServer) -> None:
    target = SshTarget(server.host, server.port, server.user, key_file=server.client_key)
    SshConnection(target, HostKeyPolicy.accept_new(), store=PinStore()).connect().close()


def _logins(server: SshdServer) -> int:
    return server.log_file.read_text(errors="replace").count("Accepted publickey")


def _job(server: SshdServer, local: Path, remote: Path) -> PushJob:
    return PushJob(f"ssh://{server.user}@{server.host}:{server.port}", str(server.client_key),
                   ((str(local), str(remote)),), delete=True)


def test_the_child_pushes_the_same_files_and_reports_progress_at_lower_priority(
        sshd: SshdServer, tmp_path: Path) -> None:
    _pin(sshd)
    local = _project(tmp_path / "project")
    remote = tmp_path / "remote"
    seen: list[SyncProgress] = []
    pids: list[int] = []
    niceness: list[int] = []

    def progress(p: SyncProgress) -> None:
        seen.append(p)
        if p.phase == "send" and not niceness:  # the child has lowered itself by now
            niceness.append(os.getpriority(os.PRIO_PROCESS, pids[0]))

    result = push_in_child(_job(sshd, local, remote), progress=progress,
                           on_start=pids.append)[0]

    assert isinstance(result, SyncResult)
    assert pids and pids[0] != os.getpid()
    assert niceness == [min(19, os.getpriority(os.PRIO_PROCESS, 0) + NICE)]
    assert sorted(result.sent) == sorted(r for r in FILES if r != "out.log")
    for rel, data in FILES.items():
        assert (remote / rel).exists() == (rel != "out.log")
        if rel != "out.log":
            assert (remote / rel).read_bytes() == data
    assert [p.phase for p in seen][0] == "scan" and seen[-1].phase == "done"
    assert seen[-1].bytes_done == sum(len(d) for r, d in FILES.items() if r != "out.log")
    (local / "pkg/model.py").unlink()
    logins = _logins(sshd)
    again = push_in_child(_job(sshd, local, remote))[0]
    assert _logins(sshd) == logins  # the child kept its login (and the helper) open
    assert again.files_sent == 0 and again.unchanged == len(FILES) - 2
    assert again.deleted_paths == ("pkg/model.py",) and not (remote / "pkg/model.py").exists()


def test_several_folders_go_through_one_child_in_order(sshd: SshdServer,
                                                         tmp_path: Path) -> None:
    _pin(sshd)
    project = _project(tmp_path / "project")
    lib = tmp_path / "lib"
    (lib / "gpudesk_train").mkdir(parents=True)
    (lib / "gpudesk_train/__init__.py").write_text("VERSION = 1\n")
    folders = ((str(project), str(tmp_path / "r/project")), (str(lib), str(tmp_path / "r/lib")))
    job = PushJob(_job(sshd, project, tmp_path).ref, str(sshd.client_key), folders, delete=True)
    first, second = push_in_child(job)
    assert first.files_sent == 4 and second.sent == ("gpudesk_train/__init__.py",)
    assert (tmp_path / "r/lib/gpudesk_train/__init__.py").read_text() == "VERSION = 1\n"


def test_an_unpinned_machine_is_refused_in_the_child_with_the_same_error(
        sshd: SshdServer, tmp_path: Path) -> None:
    local = _project(tmp_path / "project")
    remote = tmp_path / "remote"
    with pytest.raises(HostKeyError) as caught:
        push_in_child(_job(sshd, local, remote))
    assert str(sshd.port) in caught.value.message() or sshd.host in caught.value.message()
    assert not remote.exists()


def test_cancel_reaches_the_child(sshd: SshdServer, tmp_path: Path) -> None:
    """Cancelled as the child starts: it stops before sending anything, and says so."""
    _pin(sshd)
    local = _project(tmp_path / "project", n_extra=300)
    remote = tmp_path / "remote"
    cancel = threading.Event()
    with pytest.raises(SyncCancelled) as caught:
        push_in_child(_job(sshd, local, remote), cancel=cancel,
                      on_start=lambda _pid: cancel.set())
    assert caught.value.result.files_sent == 0
    assert "after 0 of 304 files" in caught.value.message()
    assert not any(p.is_file() for p in remote.rglob("*"))


def test_a_child_that_dies_is_reported_in_words(sshd: SshdServer, tmp_path: Path) -> None:
    _pin(sshd)
    local = _project(tmp_path / "project")
    with pytest.raises(SyncError) as caught:
        push_in_child(_job(sshd, local, tmp_path / "remote"),
                      on_start=lambda pid: os.kill(pid, signal.SIGKILL))
    assert "ended unexpectedly" in caught.value.message()
    assert "-9" in caught.value.message()
    again = push_in_child(_job(sshd, local, tmp_path / "remote"))  # a new child takes over
    assert again[0].files_sent == 4


def test_service_errors_pickle_as_their_own_type_with_their_values() -> None:
    result = SyncResult(files_sent=3, bytes_sent=10, deleted=0, skipped=0, seconds=0.1)
    error = pickle.loads(pickle.dumps(SyncCancelled(result, 7)))
    assert type(error) is SyncCancelled
    assert error.result == result and error.values == {"done": 3, "total": 7}
    assert error.message() == str(error) and "3 of 7" in error.message()
