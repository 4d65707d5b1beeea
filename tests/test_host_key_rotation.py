"""After the first login the launch host key proves nothing: a real sshd gets a key of its own.

The fixture's sshd plays the rented machine booted with the key gpudesk put in its user data
(pinned, private half in the keyring). The first login reads the guard's marker, makes a new
key with ssh-keygen into sshd's host key file, reloads sshd (SIGHUP to the fixture's own
sshd, the test's reload command, never the system's), pins the new key and drops the old
private half. A second sshd presenting the old key — whoever read the user data — is then
refused by the pin check.
"""
# ruff: noqa: F811 - fixtures imported from fixtures_* arrive as parameters

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from fixtures_agent import pid_gone
from fixtures_aws import MotoAws  # noqa: F401
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401
from fixtures_keyring import secret_service  # noqa: F401
from fixtures_sshd import SshdServer  # noqa: F401
from fixtures_sshd import sshd  # noqa: F401

from gpudesk.cli.entry import main
from gpudesk.services.cloud import credentials
from gpudesk.services.core.settings import Settings
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.remote import first_boot
from gpudesk.services.remote import host_key_rotation
from gpudesk.services.remote.host_key_rotation import GUARD_STATUS_NAME
from gpudesk.services.remote.host_key_rotation import RotationConfig
from gpudesk.services.remote.host_key_rotation import RotationError
from gpudesk.services.remote.host_key_rotation import first_login
from gpudesk.services.remote.host_key_rotation import host_key_entry
from gpudesk.services.remote.host_keys import HostKeyChanged
from gpudesk.services.remote.host_keys import HostKeyPolicy
from gpudesk.services.remote.host_keys import PinStore
from gpudesk.services.remote.ssh import SshConnection
from gpudesk.services.remote.ssh import SshTarget
from gpudesk.services.remote.ssh_config import host_alias

WAIT_S = 60.0


def _boot_with_user_data_key(sshd: SshdServer) -> first_boot.HostKey:
    """Restart the fixture's sshd with a key made as ``first_boot`` makes it for user data."""
    key = first_boot.new_host_key()
    sshd.stop()
    path = sshd.workdir / "host_ed25519"
    path.write_text(key.private_pem)
    path.chmod(0o600)
    path.with_suffix(".pub").write_text(key.public_line + "\n")
    sshd.host_key_line, sshd.host_key_fingerprint = key.public_line, key.fingerprint
    sshd.start()
    return key


def _machine(ledger: Ledger, sshd: SshdServer, key: first_boot.HostKey) -> Machine:
    """A launched machine as the launcher leaves it: pinned, keyring entry, guard recorded."""
    m = ledger.add(Machine(id="m-rot1", provider="aws", region="us-east-1", cloud_id="i-0rot",
                           state="running", public_ip=sshd.host, ssh_port=sshd.port,
                           ssh_user=sshd.user, name="m-rot1", budget=20.0, on_budget="stop",
                           enforced_by="agent,shutdown-behavior",
                           host_key_fingerprint=key.fingerprint))
    credentials.save_private_key(host_key_entry(m.id), key.private_pem)
    PinStore().pin(host_alias(m), first_boot._paramiko_key(key.public_line))
    return m


def _target(sshd: SshdServer, m: Machine, port: int | None = None) -> SshTarget:
    return SshTarget(host=sshd.host, port=port or sshd.port, user=sshd.user,
                     key_file=sshd.client_key, pin_name=host_alias(m))


def _config(sshd: SshdServer, marker: Path, reload: str = "") -> RotationConfig:
    assert sshd.proc is not None
    return RotationConfig(key_path=str(sshd.workdir / "host_ed25519"),
                          reload_command=reload or f"kill -HUP {sshd.proc.pid}", become="",
                          guard_status_path=str(marker), guard_wait_s=0)


def _show(m: Machine, capsys: pytest.CaptureFixture[str], *args: str) -> Any:
    capsys.readouterr()
    assert main(["show", m.id, *args]) == 0
    out = capsys.readouterr().out
    return json.loads(out) if "--json" in args else out


@pytest.fixture(params=["memory", "secret-service"])
def any_keyring(request: pytest.FixtureRequest) -> Any:
    """The keyring module over memory, and over the real Secret Service (scripts/test.sh)."""
    return request.getfixturevalue("memory_keyring" if request.param == "memory"
                                   else "secret_service")


def test_after_rotation_the_user_data_key_no_longer_proves_the_host(
        sshd: SshdServer, tmp_path: Path, any_keyring: Any,
        capsys: pytest.CaptureFixture[str]) -> None:
    old = _boot_with_user_data_key(sshd)
    marker = tmp_path / GUARD_STATUS_NAME
    marker.write_text("installed\n")
    with Ledger() as ledger:
        m = _machine(ledger, sshd, old)
        assert _show(m, capsys, "--json")["host_key_rotated"] is False
        # the launcher's hook, as a launch runs it once SSH answers: it logs in the way
        # gpudesk reaches a launched machine (the keyring's key, the profile's user)
        credentials.save_private_key(credentials.KEY_KINDS["ed25519"],
                                     sshd.client_key.read_text())
        hook = first_boot.for_launch(lambda: Settings(), ledger,
                                     rotation=_config(sshd, marker)).first_login
        assert hook is not None
        hook(m)
        done = first_login(ledger, m, config=_config(sshd, marker), target=_target(sshd, m))

        row = ledger.get(m.id)
        assert row is not None
        assert host_key_rotation.host_key_rotated(ledger, m.id)
    new_line = (sshd.workdir / "host_ed25519.pub").read_text().split()
    new_fp = first_boot.HostKey("", " ".join(new_line[:2])).fingerprint
    assert new_fp != old.fingerprint
    # a second first login (wait_ready, or a retry) reads the guard again, rotates no more
    assert not done.rotated and done.guard.state == "installed"
    assert done.host_key_fingerprint == new_fp
    # the machine's key file now holds a key made there, not the one from user data
    assert (sshd.workdir / "host_ed25519").read_text() != old.private_pem
    assert not list(sshd.workdir.glob("host_ed25519.gpudesk-*"))  # no copy left behind
    # one pin, the new key; the ledger knows it; the old private half left the keyring
    assert PinStore().fingerprints(host_alias(m)) == [new_fp]
    assert row.host_key_fingerprint == new_fp
    assert credentials.load_private_key(host_key_entry(m.id)) is None

    # the new key is accepted: a fresh login that trusts only the pin
    with SshConnection(_target(sshd, m), HostKeyPolicy.refuse(), attempts=5) as conn:
        assert conn.exec("echo ok", timeout=WAIT_S).stdout.strip() == b"ok"
        assert conn.host_key_fingerprint == new_fp

    # whoever read the user data serves the old key: refused by the pin check, nothing sent
    impostor = SshdServer(workdir=tmp_path / "impostor", host_key_line=old.public_line,
                          host_key_fingerprint=old.fingerprint)
    (tmp_path / "impostor").mkdir()
    (tmp_path / "impostor" / "host_ed25519").write_text(old.private_pem)
    (tmp_path / "impostor" / "host_ed25519").chmod(0o600)
    impostor.start()
    try:
        with pytest.raises(HostKeyChanged) as refused, SshConnection(
                _target(sshd, m, impostor.port), HostKeyPolicy.refuse(), attempts=1) as conn:
            conn.connect()
        assert refused.value.offered == old.fingerprint
        assert refused.value.expected == (new_fp,)
        # not even "ask" or trust-on-first-use lets a changed key in
        with pytest.raises(HostKeyChanged), SshConnection(
                _target(sshd, m, impostor.port), HostKeyPolicy.accept_new(), attempts=1) as conn:
            conn.connect()
    finally:
        impostor.stop()
    assert PinStore().fingerprints(host_alias(m)) == [new_fp]

    shown = _show(m, capsys, "--json")
    assert shown["host_key_rotated"] is True and shown["host_key_fingerprint"] == new_fp
    assert shown["guard"]["installed"] is True
    assert "guard: installed" in _show(m, capsys)
    with Ledger() as ledger:
        assert [e.step for e in ledger.events(m.id)].count(
            host_key_rotation.STEP_ROTATED) == 1


def test_a_reload_that_fails_keeps_the_pinned_key_everywhere(
        sshd: SshdServer, tmp_path: Path, memory_keyring: Any) -> None:
    old = _boot_with_user_data_key(sshd)
    marker = tmp_path / GUARD_STATUS_NAME
    marker.write_text("installed\n")
    with Ledger() as ledger:
        m = _machine(ledger, sshd, old)
        with pytest.raises(RotationError) as failed:
            first_login(ledger, m, config=_config(sshd, marker, reload="echo no sshd here; false"),
                        target=_target(sshd, m))
        assert not host_key_rotation.host_key_rotated(ledger, m.id)
        row = ledger.get(m.id)
    assert "reload" in str(failed.value) and "no sshd here" in str(failed.value)
    # the machine's key file is the old one again, the pin and the keyring unchanged
    assert (sshd.workdir / "host_ed25519").read_text() == old.private_pem
    assert PinStore().fingerprints(host_alias(m)) == [old.fingerprint]
    assert credentials.load_private_key(host_key_entry(m.id)) == old.private_pem
    assert row is not None and row.host_key_fingerprint == old.fingerprint
    with SshConnection(_target(sshd, m), HostKeyPolicy.refuse(), attempts=1) as conn:
        assert conn.exec("echo ok", timeout=WAIT_S).ok


def test_a_guard_that_did_not_install_changes_what_show_says(
        sshd: SshdServer, tmp_path: Path, memory_keyring: Any,
        capsys: pytest.CaptureFixture[str]) -> None:
    old = _boot_with_user_data_key(sshd)
    marker = tmp_path / GUARD_STATUS_NAME
    marker.write_text("not-installed: no user ubuntu on this machine\n")
    with Ledger() as ledger:
        m = _machine(ledger, sshd, old)
        before = _show(m, capsys, "--json")
        assert before["guard"]["installed"] == "unknown"
        assert any("agent shuts it down" in line for line in before["guard_says"])
        done = first_login(ledger, m, config=_config(sshd, marker), target=_target(sshd, m))
    assert done.guard.state == "not-installed" and done.rotated
    shown = _show(m, capsys, "--json")
    assert shown["guard"]["installed"] is False
    # no agent: neither it nor EC2's shutdown behaviour (which acts on its power-off) guards
    assert shown["guard"]["enforced_by"] == []
    assert not any("agent" in line for line in shown["guard_says"])
    text = _show(m, capsys)
    assert "guard: not installed" in text and "enforced by: nobody" in text


# --------------------------------------------------------------------------- later connects

def test_a_later_connect_replaces_the_launch_key_a_failed_first_login_left(
        sshd: SshdServer, tmp_path: Path, memory_keyring: Any,
        capsys: pytest.CaptureFixture[str]) -> None:
    """The first login's rotation failed (here: the reload); the next connection of any kind
    (``targets.open_connection``: Run, Watch, sync, ssh) finishes it, once, and records it as
    the first login does; the connection itself is the caller's to use."""
    from gpudesk.services.remote.targets import open_connection

    old = _boot_with_user_data_key(sshd)
    marker = tmp_path / GUARD_STATUS_NAME
    marker.write_text("installed\n")
    credentials.save_private_key(credentials.KEY_KINDS["ed25519"], sshd.client_key.read_text())
    with Ledger() as ledger:
        m = _machine(ledger, sshd, old)
        with pytest.raises(RotationError):
            first_login(ledger, m, config=_config(sshd, marker, reload="false"),
                        target=_target(sshd, m))
        assert not host_key_rotation.host_key_rotated(ledger, m.id)
        # the failure was just now: a connect within the hour leaves the key alone
        with open_connection(m.id, None, HostKeyPolicy.refuse(),
                             rotation=_config(sshd, marker)) as conn:
            assert conn.exec("echo ok", timeout=WAIT_S).ok
        assert not host_key_rotation.host_key_rotated(ledger, m.id)
        assert PinStore().fingerprints(host_alias(m)) == [old.fingerprint]
        # an hour on (the failure's record aged): the next connect rotates
        ledger._db.execute("UPDATE events SET at = at - 3700 WHERE ledger_id = ?", (m.id,))
        ledger._db.commit()
    with open_connection(m.id, None, HostKeyPolicy.refuse(),
                         rotation=_config(sshd, marker)) as conn:
        assert conn.exec("echo still here", timeout=WAIT_S).stdout.strip() == b"still here"
    new_line = (sshd.workdir / "host_ed25519.pub").read_text().split()
    new_fp = first_boot.HostKey("", " ".join(new_line[:2])).fingerprint
    assert new_fp != old.fingerprint
    assert PinStore().fingerprints(host_alias(m)) == [new_fp]
    assert credentials.load_private_key(host_key_entry(m.id)) is None
    shown = _show(m, capsys, "--json")
    assert shown["host_key_rotated"] is True and shown["host_key_fingerprint"] == new_fp
    assert shown["guard"]["installed"] is True  # the marker, read at that connect
    # later connects verify the new key and rotate no more
    with open_connection(m.id, None, HostKeyPolicy.refuse(),
                         rotation=_config(sshd, marker)) as conn:
        assert conn.host_key_fingerprint == new_fp
    assert (sshd.workdir / "host_ed25519.pub").read_text().split()[:2] == new_line[:2]
    with Ledger() as ledger:
        steps = [e.step for e in ledger.events(m.id)]
    assert steps.count(host_key_rotation.STEP_ROTATED) == 1
    assert steps.count(host_key_rotation.STEP_ROTATING) == 2  # the failed try, the later one


def test_a_guard_push_connect_replaces_a_launch_key_never_replaced(
        sshd: SshdServer, tmp_path: Path, memory_keyring: Any, aws: MotoAws,
        capsys: pytest.CaptureFixture[str]) -> None:
    """A machine whose first login never ran (launched before gpudesk rotated keys, or the
    app closed first): the background guard push's connect rotates it."""
    from fixtures_telemetry import PYTHON
    from service_manager_standin import StandinSystemd

    from gpudesk.services.cloud.providers.base import LaunchRequest
    from gpudesk.services.remote.agent_deploy import UNIT
    from gpudesk.services.remote.agent_deploy import ServiceManager
    from gpudesk.services.remote.guard_push import push_all

    old = _boot_with_user_data_key(sshd)
    marker = tmp_path / GUARD_STATUS_NAME
    marker.write_text("not-installed: sudo asked for a password\n")
    credentials.save_private_key(credentials.KEY_KINDS["ed25519"], sshd.client_key.read_text())
    credentials.save_credentials(aws.credentials)
    aws.publish_dlami("us-east-1")
    provider = aws.provider()
    group = provider.ensure_security_group("us-east-1", "203.0.113.7/32")
    inst = provider.run_instance(LaunchRequest("m-rot1", "us-east-1", "g5.xlarge",
                                               security_group=group, on_budget="stop"))
    systemd = StandinSystemd.install(tmp_path / "systemd")
    pid = 0
    try:
        with Ledger() as ledger:
            m = _machine(ledger, sshd, old)
            ledger.update(m.id, cloud_id=inst.cloud_id, remote_root=str(tmp_path / "root"),
                          remote_python=PYTHON)
            report = push_all(ledger, Settings(), rotation=_config(sshd, marker),
                              service=ServiceManager(systemctl=str(systemd.systemctl),
                                                     unit_dir=str(systemd.unit_dir)))
            pid = report.agent_pids.get(m.id, 0)
            assert report.pushed == [m.id], report.failed
            assert host_key_rotation.host_key_rotated(ledger, m.id)
    finally:
        systemd.shutdown(UNIT)
        if pid and not pid_gone(pid):
            os.kill(pid, signal.SIGKILL)
    new_line = (sshd.workdir / "host_ed25519.pub").read_text().split()
    new_fp = first_boot.HostKey("", " ".join(new_line[:2])).fingerprint
    assert PinStore().fingerprints(host_alias(m)) == [new_fp] != [old.fingerprint]
    assert credentials.load_private_key(host_key_entry(m.id)) is None
    shown = _show(m, capsys, "--json")
    assert shown["host_key_rotated"] is True
    assert shown["guard"]["installed"] is False  # the marker said so: recorded as at launch
