"""Pinned host keys against a real sshd: console fingerprints, pins, changed and unknown keys."""

# ruff: noqa: F811 - pytest fixtures imported from fixtures_sshd arrive as parameters
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import paramiko
import pytest
from fixtures_sshd import SshdServer  # noqa: F401
from fixtures_sshd import sshd  # noqa: F401

from gpudesk.services.core import files
from gpudesk.services.remote import host_keys
from gpudesk.services.remote.host_keys import HostKeyChanged
from gpudesk.services.remote.host_keys import HostKeyError
from gpudesk.services.remote.host_keys import HostKeyMismatch
from gpudesk.services.remote.host_keys import HostKeyPolicy
from gpudesk.services.remote.host_keys import HostKeyUnknown
from gpudesk.services.remote.host_keys import PinStore
from gpudesk.services.remote.host_keys import fingerprint
from gpudesk.services.remote.host_keys import host_pattern
from gpudesk.services.remote.host_keys import normalize_fingerprint
from gpudesk.services.remote.host_keys import parse_console_fingerprints
from gpudesk.services.remote.ssh import SshConnection
from gpudesk.services.remote.ssh import SshTarget
from gpudesk.services.remote.sync import push

OTHER_FP = "SHA256:" + "A" * 43


def console_output(ed25519_fp: str) -> str:
    """What EC2 GetConsoleOutput returns for an Ubuntu boot: kernel and cloud-init noise, an
    earlier boot's block, then the current one (with the ``ec2:`` prefix cloud-init adds)."""
    return f"""\
[    0.000000] Linux version 6.8.0-1012-aws (buildd@lcy02-amd64-047) (x86_64-linux-gnu-gcc-13)
[    3.212001] EXT4-fs (nvme0n1p1): mounted filesystem with ordered data mode.
ec2: #############################################################
ec2: -----BEGIN SSH HOST KEY FINGERPRINTS-----
ec2: 256 SHA256:{"B" * 43} root@ip-172-31-7-19 (ECDSA)
ec2: -----END SSH HOST KEY FINGERPRINTS-----
ec2: #############################################################
[   11.402113] cloud-init[1021]: Cloud-init v. 24.1.3-0ubuntu3 running 'modules:config'
<14>Mar  3 08:00:01 ec2:
<14>Mar  3 08:00:01 ec2: #############################################################
<14>Mar  3 08:00:01 ec2: -----BEGIN SSH HOST KEY FINGERPRINTS-----
<14>Mar  3 08:00:01 ec2: 256 SHA256:{"C" * 43} root@ip-172-31-20-5 (ECDSA)
<14>Mar  3 08:00:01 ec2: 256 {ed25519_fp} root@ip-172-31-20-5 (ED25519)
<14>Mar  3 08:00:01 ec2: 3072 SHA256:{"D" * 42}g root@ip-172-31-20-5 (RSA)
<14>Mar  3 08:00:01 ec2: -----END SSH HOST KEY FINGERPRINTS-----
<14>Mar  3 08:00:01 ec2: #############################################################
-----BEGIN SSH HOST KEY KEYS-----
ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTY= root@ip-172-31-20-5
-----END SSH HOST KEY KEYS-----
[   12.990215] cloud-init[1102]: Cloud-init v. 24.1.3 finished. Datasource DataSourceEc2Local.
"""


def target(server: SshdServer, **extra: object) -> SshTarget:
    return SshTarget(server.host, server.port, server.user, key_file=server.client_key,
                     **extra)  # type: ignore[arg-type]


def connection(server: SshdServer, policy: HostKeyPolicy, store: PinStore | None = None,
               **extra: object) -> SshConnection:
    return SshConnection(target(server, **extra), policy, store=store or PinStore(),
                         attempts=1)


def logins(server: SshdServer) -> int:
    """Sessions the server authenticated: a refused host key must leave this unchanged."""
    return server.log_file.read_text(errors="replace").count("Accepted publickey")


# --------------------------------------------------------------------------- console output

def test_console_fingerprints_are_read_from_the_last_block() -> None:
    fp = "SHA256:" + "x" * 42 + "Q"
    found = parse_console_fingerprints(console_output(fp))
    assert [(f.bits, f.key_type) for f in found] == [(256, "ECDSA"), (256, "ED25519"),
                                                     (3072, "RSA")]
    assert found[1].fingerprint == fp
    assert found[0].fingerprint == "SHA256:" + "C" * 43  # not the earlier boot's "B..."
    assert found[1].comment == "root@ip-172-31-20-5"


def test_old_md5_console_lines_and_missing_blocks() -> None:
    md5 = ":".join(["Ab"] * 16)
    old = ("-----BEGIN SSH HOST KEY FINGERPRINTS-----\n"
           f"2048 {md5} /etc/ssh/ssh_host_rsa_key.pub (RSA)\n"
           "-----END SSH HOST KEY FINGERPRINTS-----\n")
    (only,) = parse_console_fingerprints(old)
    assert only.fingerprint == "MD5:" + md5.lower() and only.key_type == "RSA"
    truncated = "ec2: -----BEGIN SSH HOST KEY FINGERPRINTS-----\nec2: 256 " + OTHER_FP
    assert parse_console_fingerprints(truncated) == []
    assert parse_console_fingerprints("") == []
    assert HostKeyPolicy.from_console(truncated).mode == "refuse"
    assert HostKeyPolicy.from_console(truncated, HostKeyPolicy.accept_new()).mode == "accept-new"


def test_fingerprint_text_is_checked() -> None:
    assert normalize_fingerprint(f"  {OTHER_FP}=\n") == OTHER_FP
    for bad in ("SHA256:short", "AAAA", "", "SHA1:" + "A" * 43):
        with pytest.raises(HostKeyError, match="not a host key fingerprint"):
            normalize_fingerprint(bad)
    with pytest.raises(HostKeyError):
        HostKeyPolicy.expect("SHA256:tooshort")


# --------------------------------------------------------------------------- against sshd

def test_console_pin_then_swapped_host_key_is_refused_and_nothing_runs(
        sshd: SshdServer, tmp_path: Path) -> None:
    store = PinStore()
    policy = HostKeyPolicy.from_console(console_output(sshd.host_key_fingerprint))
    assert policy.mode == "fingerprints"
    with connection(sshd, policy, store) as conn:
        assert conn.exec("echo pinned").text == "pinned\n"
        assert conn.host_key_fingerprint == sshd.host_key_fingerprint
    name = host_pattern(sshd.host, sshd.port)
    assert name == f"[127.0.0.1]:{sshd.port}"
    assert store.fingerprints(name) == [sshd.host_key_fingerprint]

    old = sshd.host_key_fingerprint
    new = sshd.restart_with_new_host_key()
    before = logins(sshd)
    remote = tmp_path / "remote"
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text("print(1)\n")
    # Even a trust-on-first-use policy never accepts a key that differs from its pin.
    with connection(sshd, HostKeyPolicy.accept_new(), store) as conn, \
            pytest.raises(HostKeyChanged) as caught:
        push(conn, project, str(remote))
    text = str(caught.value)
    assert old in text and new in text and name in text
    assert caught.value.expected == (old,) and caught.value.offered == new
    assert not remote.exists()
    assert logins(sshd) == before  # refused before logging in: nothing could run
    assert store.fingerprints(name) == [old]  # the pin is kept


def test_a_live_connection_that_meets_a_new_host_key_refuses_every_time(
        sshd: SshdServer) -> None:
    store = PinStore()
    conn = connection(sshd, HostKeyPolicy.accept_new(), store)
    conn.attempts = 3
    assert conn.exec("true").ok
    sshd.restart_with_new_host_key()
    for _ in range(2):
        with pytest.raises(HostKeyChanged):
            conn.exec("touch should-not-exist")
    assert conn.connects == 1 and conn.exec_count == 1
    conn.close()


def test_unknown_host_under_refuse_is_refused_and_nothing_is_pinned(sshd: SshdServer) -> None:
    store = PinStore()
    with connection(sshd, HostKeyPolicy.refuse(), store) as conn, \
            pytest.raises(HostKeyUnknown) as caught:
        conn.exec("true")
    assert sshd.host_key_fingerprint in str(caught.value)
    assert "not pinned" in str(caught.value)
    assert store.names() == [] and not store.path.exists()
    assert logins(sshd) == 0


def test_accept_new_pins_a_known_hosts_line_openssh_accepts(sshd: SshdServer) -> None:
    store = PinStore()
    with connection(sshd, HostKeyPolicy.accept_new(), store) as conn:
        assert conn.exec("true").ok
    line = store.path.read_text()
    assert line == f"[127.0.0.1]:{sshd.port} {sshd.host_key_line.split()[0]} " \
                   f"{sshd.host_key_line.split()[1]}\n"
    assert store.path.parent == host_keys.known_hosts_file().parent
    # The OpenSSH client, told to trust only this file, logs in without a prompt ...
    command = [*sshd.ssh_command(store.path), f"{sshd.user}@{sshd.host}", "echo from-openssh"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "from-openssh\n"
    # ... and refuses once the machine's key changed, as gpudesk does.
    sshd.restart_with_new_host_key()
    refused = subprocess.run(command, capture_output=True, text=True, timeout=30)
    assert refused.returncode == 255
    assert "HOST IDENTIFICATION HAS CHANGED" in refused.stderr


def test_expected_fingerprint_that_does_not_match_is_refused(sshd: SshdServer) -> None:
    store = PinStore()
    with connection(sshd, HostKeyPolicy.expect(OTHER_FP), store) as conn, \
            pytest.raises(HostKeyMismatch) as caught:
        conn.exec("true")
    assert OTHER_FP in str(caught.value) and sshd.host_key_fingerprint in str(caught.value)
    assert store.names() == []
    assert logins(sshd) == 0


def test_pinned_key_that_is_not_the_expected_one_is_refused(sshd: SshdServer) -> None:
    """A pin from earlier, but the caller now knows the machine's key is another one."""
    store = PinStore()
    with connection(sshd, HostKeyPolicy.accept_new(), store) as conn:
        conn.connect()
    with connection(sshd, HostKeyPolicy.expect(OTHER_FP), store) as conn, \
            pytest.raises(HostKeyMismatch):
        conn.exec("touch should-not-exist")
    assert not (Path.home() / "should-not-exist").exists()


def test_key_of_another_type_than_the_pin_is_refused(sshd: SshdServer) -> None:
    """A man in the middle without the pinned key offers a key of another type instead."""
    store = PinStore()
    name = host_pattern(sshd.host, sshd.port)
    pinned = paramiko.ECDSAKey.generate()
    store.pin(name, pinned)
    with connection(sshd, HostKeyPolicy.accept_new(), store) as conn, \
            pytest.raises(HostKeyChanged) as caught:
        conn.connect()
    assert fingerprint(pinned) in str(caught.value)
    assert sshd.host_key_fingerprint in str(caught.value)
    assert store.fingerprints(name) == [fingerprint(pinned)]
    # Not even with its fingerprint given: a pin wins until it is forgotten (a rebuild).
    with connection(sshd, HostKeyPolicy.expect(sshd.host_key_fingerprint), store) as conn, \
            pytest.raises(HostKeyChanged):
        conn.connect()
    assert store.forget(name)
    with connection(sshd, HostKeyPolicy.expect(sshd.host_key_fingerprint), store) as conn:
        assert conn.exec("true").ok
    assert store.fingerprints(name) == [sshd.host_key_fingerprint]
    assert logins(sshd) == 1


def test_pins_under_a_machine_name_follow_the_machine_not_the_address(
        sshd: SshdServer) -> None:
    store = PinStore()
    with connection(sshd, HostKeyPolicy.accept_new(), store, pin_name="gpudesk-m1") as conn:
        assert conn.exec("true").ok
    assert store.names() == ["gpudesk-m1"]
    # Another machine at the same address (a recycled IP) is not trusted through m1's pin.
    with connection(sshd, HostKeyPolicy.refuse(), store, pin_name="gpudesk-m2") as conn, \
            pytest.raises(HostKeyUnknown):
        conn.connect()
    assert store.forget("gpudesk-m1") is True
    assert store.forget("gpudesk-m1") is False
    assert store.names() == []


# --------------------------------------------------------------------------- the pin file

def test_pin_store_replaces_the_file_atomically(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    store = PinStore(tmp_path / "pins" / "known_hosts")
    first, second = paramiko.ECDSAKey.generate(), paramiko.ECDSAKey.generate()
    store.pin("[10.0.0.1]:2222", first)
    store.path.write_text("# a comment the user wrote\n" + store.path.read_text())
    good = store.path.read_text()

    def refuse(src: object, dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", refuse)
    with pytest.raises(OSError, match="No space"):
        store.pin("[10.0.0.2]:22", second)
    assert store.path.read_text() == good  # the old file, whole
    assert sorted(os.listdir(store.path.parent)) == ["known_hosts"]  # no temporary left
    monkeypatch.undo()

    store.pin("[10.0.0.1]:2222", second)  # the same type replaces the earlier pin
    text = store.path.read_text()
    assert text.startswith("# a comment the user wrote\n")
    assert store.fingerprints("[10.0.0.1]:2222") == [fingerprint(second)]
    assert sorted(os.listdir(store.path.parent)) == ["known_hosts"]
    # ssh-keygen, OpenSSH's own reader, finds the pin in the file.
    found = subprocess.run(["ssh-keygen", "-F", "[10.0.0.1]:2222", "-f", str(store.path)],
                           capture_output=True, text=True, timeout=30)
    assert found.returncode == 0 and second.get_base64() in found.stdout


def test_a_login_that_fails_after_the_key_was_accepted_leaves_no_pin(sshd: SshdServer,
                                                                     tmp_path: Path) -> None:
    import base64

    from fixtures_sshd import _write_ed25519

    from gpudesk.services.remote.ssh import SshAuthError

    stranger = tmp_path / "stranger_ed25519"
    _write_ed25519(stranger)  # a key the machine does not accept
    store = PinStore()
    name = host_pattern(sshd.host, sshd.port)

    def with_stranger() -> SshConnection:
        return SshConnection(SshTarget(sshd.host, sshd.port, sshd.user, key_file=stranger),
                             HostKeyPolicy.accept_new(), store=store, attempts=1)

    # without the guard, the key accepted before authentication stays pinned
    with with_stranger() as conn, pytest.raises(SshAuthError):
        conn.exec("true")
    assert store.fingerprints(name) == [sshd.host_key_fingerprint]
    assert store.forget(name)
    # with it, a failed login puts the pins back as they were ...
    with pytest.raises(SshAuthError), store.kept_if_ok(name), with_stranger() as conn:
        conn.exec("true")
    assert store.fingerprints(name) == [] and logins(sshd) == 0
    # ... a pin of another name is untouched, and a good login keeps its pin
    kind, blob = sshd.host_key_line.split()[:2]
    store.pin("other-machine", paramiko.PKey.from_type_string(kind, base64.b64decode(blob)))
    with store.kept_if_ok(name), connection(sshd, HostKeyPolicy.accept_new(), store) as conn:
        assert conn.exec("true").ok
    assert store.fingerprints(name) == [sshd.host_key_fingerprint]
    assert store.fingerprints("other-machine") == [sshd.host_key_fingerprint]
