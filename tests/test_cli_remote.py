"""``gpudesk sync`` against a real sshd: host-key pinning, .gitignore, incremental, delete."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fixtures_sshd import SshdServer  # noqa: F401
from fixtures_sshd import sshd  # noqa: F401

from gpudesk.cli.entry import main


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUDESK_HOME", str(tmp_path / "home"))


def make_project(root: Path) -> dict[str, bytes]:
    """A project with ignored parts; returns the files a sync must deliver."""
    wanted = {
        ".gitignore": b"__pycache__/\n*.ckpt\n!keep.ckpt\ndata/\n",
        "train.py": b"print('train')\n",
        "pkg/__init__.py": b"",
        "pkg/model.py": b"class Model: ...\n",
        "pkg/.gitignore": b"scratch.txt\n",
        "keep.ckpt": b"small but wanted",
        "notes with space.md": "模型 notes\n".encode(),
    }
    ignored = {
        "pkg/__pycache__/model.cpython-311.pyc": b"\0" * 100,
        "run.ckpt": b"\1" * 5000,
        "data/train.bin": b"\2" * 20000,
        "pkg/scratch.txt": b"local only",
        ".git/HEAD": b"ref: refs/heads/main\n",
    }
    for rel, data in {**wanted, **ignored}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return wanted


def remote_tree(remote: Path) -> dict[str, bytes]:
    if not remote.exists():
        return {}
    return {str(p.relative_to(remote)): p.read_bytes() for p in remote.rglob("*") if p.is_file()}


def sync(server: SshdServer, local: Path, remote: Path, *extra: str) -> int:
    return main(["sync", str(local), str(remote), "--on", server.url,
                 "--identity", str(server.client_key), *extra])


def test_unknown_host_key_is_refused_without_a_pin_and_nothing_is_synced(
        sshd: SshdServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    make_project(tmp_path / "proj")
    remote = tmp_path / "remote"
    assert sync(sshd, tmp_path / "proj", remote) == 1
    err = capsys.readouterr().err
    assert "not pinned" in err and sshd.host_key_fingerprint in err
    assert not remote.exists()


def test_sync_honours_gitignore_then_sends_only_changes(
        sshd: SshdServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    local, remote = tmp_path / "proj", tmp_path / "remote"
    wanted = make_project(local)
    (local / "train.py").chmod(0o755)
    assert sync(sshd, local, remote, "--accept-new", "--json") == 0
    assert remote_tree(remote) == wanted
    assert os.stat(remote / "train.py").st_mode & 0o111
    import json

    first = json.loads(capsys.readouterr().out)
    assert first["files_sent"] == len(wanted)

    # Pinned now: later runs need no flag. Nothing changed: nothing sent.
    assert sync(sshd, local, remote, "--json") == 0
    again = json.loads(capsys.readouterr().out)
    assert (again["files_sent"], again["deleted"]) == (0, 0)
    assert again["unchanged"] == len(wanted)

    (local / "pkg/model.py").write_bytes(b"class Model:\n    layers = 2\n")
    (local / "extra.py").write_bytes(b"x = 1\n")
    (local / "keep.ckpt").unlink()
    assert sync(sshd, local, remote, "--json") == 0
    third = json.loads(capsys.readouterr().out)
    assert sorted(third["sent"]) == ["extra.py", "pkg/model.py"]
    assert third["deleted"] == 0 and (remote / "keep.ckpt").exists()  # no --delete: kept

    assert sync(sshd, local, remote, "--delete", "--dry-run", "--json") == 0
    dry = json.loads(capsys.readouterr().out)
    assert dry["deleted_paths"] == ["keep.ckpt"] and (remote / "keep.ckpt").exists()

    assert sync(sshd, local, remote, "--delete", "--json") == 0
    capsys.readouterr()
    expected = {k: v for k, v in wanted.items() if k != "keep.ckpt"}
    expected["pkg/model.py"] = b"class Model:\n    layers = 2\n"
    expected["extra.py"] = b"x = 1\n"
    assert remote_tree(remote) == expected


def test_swapped_host_key_is_refused_and_nothing_is_synced(
        sshd: SshdServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    local, remote = tmp_path / "proj", tmp_path / "remote"
    wanted = make_project(local)
    first_key = sshd.host_key_fingerprint
    assert sync(sshd, local, remote, "--host-key", first_key) == 0
    capsys.readouterr()

    new_key = sshd.restart_with_new_host_key()
    (local / "train.py").write_bytes(b"print('changed')\n")
    # Neither a pinned nor an --accept-new connection may trust the new key.
    for extra in ((), ("--accept-new",)):
        assert sync(sshd, local, remote, *extra) == 1
        err = capsys.readouterr().err
        assert "has changed" in err and first_key in err and new_key in err
    assert remote_tree(remote) == wanted


def test_wrong_expected_fingerprint_is_refused(
        sshd: SshdServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    make_project(tmp_path / "proj")
    wrong = "SHA256:" + "A" * 43
    assert sync(sshd, tmp_path / "proj", tmp_path / "remote", "--host-key", wrong) == 1
    assert "not the expected" in capsys.readouterr().err
    assert not (tmp_path / "remote").exists()


def test_ledger_machine_as_target(sshd: SshdServer, tmp_path: Path,  # noqa: F811
                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["add-machine", "box", sshd.url, "--no-test"]) == 0
    local, remote = tmp_path / "proj", tmp_path / "remote"
    wanted = make_project(local)
    assert main(["sync", str(local), str(remote), "--on", "box", "--identity",
                 str(sshd.client_key), "--host-key", sshd.host_key_fingerprint]) == 0
    assert remote_tree(remote) == wanted
    assert "sent 7 files" in capsys.readouterr().out


def test_add_machine_refuses_a_taken_name_and_a_python_that_is_not_there(
        sshd: SshdServer, capsys: pytest.CaptureFixture[str]) -> None:  # noqa: F811
    """As the window (issue 31 item 19): one name, one machine; a profile whose Python is
    not there is not added."""
    from gpudesk.services.money.ledger import Ledger

    assert main(["add-machine", "box", sshd.url, "--no-test"]) == 0
    capsys.readouterr()
    assert main(["add-machine", "BOX", sshd.url, "--no-test"]) == 1
    assert "a machine named BOX is already in your list" in capsys.readouterr().err
    assert main(["add-machine", "box2", sshd.url, "--identity", str(sshd.client_key),
                 "--accept-new", "--python", "/nonexistent/bin/python3"]) == 1
    err = capsys.readouterr().err
    assert "not added: /nonexistent/bin/python3 was not found" in err and "--python" in err
    with Ledger() as ledger:
        assert [m.name for m in ledger.machines()] == ["box"]


def test_missing_folder_and_bad_target_are_readable_errors(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sync", str(tmp_path / "nope"), "/tmp/x", "--on", "ssh://u@127.0.0.1:1",
                 "--accept-new"]) == 1
    assert "is not a folder" in capsys.readouterr().err
    (tmp_path / "p").mkdir()
    assert main(["sync", str(tmp_path / "p"), "/tmp/x", "--on", "no-such-machine"]) == 1
    assert "No machine 'no-such-machine'" in capsys.readouterr().err
    assert main(["sync", str(tmp_path / "p"), "/tmp/x", "--on", "ssh://u@127.0.0.1:1",
                 "--identity", str(tmp_path / "missing_key")]) == 1
    assert "does not exist" in capsys.readouterr().err
