"""The managed ssh_config and the one Include line, checked with the real OpenSSH client.

``ssh -F $HOME/.ssh/config gpudesk-<name> true`` (HOME a temp folder) must reach the
loopback sshd with the key gpudesk pinned and ``StrictHostKeyChecking yes``, and
refuse when the pin is wrong or missing, even when the user's own config says
``StrictHostKeyChecking no`` further down.
"""

from __future__ import annotations

import base64
import os
import shutil
import stat
import subprocess
from pathlib import Path

import paramiko
import pytest
from fixtures_ssh_agent import agent  # noqa: F401
from fixtures_sshd import SshdServer  # noqa: F401
from fixtures_sshd import sshd  # noqa: F401

from gpudesk.services.cloud.providers.base import STATE_RUNNING
from gpudesk.services.cloud.providers.base import STATE_STOPPED
from gpudesk.services.cloud.providers.base import STATE_TERMINATED
from gpudesk.services.money.ledger import STATE_READY
from gpudesk.services.money.ledger import Machine
from gpudesk.services.remote import ssh_config
from gpudesk.services.remote.host_keys import PinStore
from gpudesk.services.remote.host_keys import known_hosts_file
from gpudesk.services.remote.ssh_config import SshConfigError

USER_CONFIG = (b"# my own settings\r\nHost work\r\n    HostName work.example.org\r\n"
               b"    User me\r\n\r\nHost *\r\n    StrictHostKeyChecking no\r\n"
               b"    ServerAliveInterval 60\r\n")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


def own(name: str, host: str = "127.0.0.1", port: int = 22, user: str = "me",
        state: str = STATE_READY, mid: str = "") -> Machine:
    return Machine(id=mid or f"m-{abs(hash(name)) % 10**10:010d}", provider="own", name=name,
                   public_ip=host, ssh_port=port, ssh_user=user, state=state, origin="added")


def cloud(name: str, state: str = STATE_RUNNING, ip: str = "203.0.113.7", port: int = 22,
          user: str = "ubuntu", mid: str = "") -> Machine:
    return Machine(id=mid or f"m-{abs(hash(name)) % 10**10:010d}", provider="aws", name=name,
                   public_ip=ip, ssh_port=port, ssh_user=user, state=state, cloud_id="i-0abc")


def pin_host_key(server: SshdServer, name: str) -> None:
    kind, blob = server.host_key_line.split()[:2]
    PinStore().pin(name, paramiko.PKey.from_type_string(kind, base64.b64decode(blob)))


def ssh(home: Path, alias: str, *extra: str, env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k != "SSH_AUTH_SOCK"}
    base["HOME"] = str(home)
    return subprocess.run(["ssh", "-F", str(home / ".ssh" / "config"), "-o", "BatchMode=yes",
                           "-o", "ConnectTimeout=10", *extra, alias, "true"],
                          capture_output=True, text=True, timeout=60,
                          env={**base, **(env or {})}, check=False)


# ------------------------------------------------------------------------------ the file

def test_blocks_for_reachable_machines_only(home: Path) -> None:
    machines = [own("box", port=2222, mid="m-0000000001"),
                cloud("train 1*", mid="m-0000000002"),
                cloud("old", state=STATE_TERMINATED, mid="m-0000000003"),
                cloud("parked", state=STATE_STOPPED, mid="m-0000000004"),
                own("box", host="10.1.1.1", mid="m-0000000005"),
                cloud("", ip="", mid="m-0000000006")]
    written = ssh_config.write_managed_config(machines)
    assert written.path == ssh_config.managed_file()
    assert [b.alias for b in written.blocks] == ["gpudesk-box", "gpudesk-train-1",
                                                 "gpudesk-m-0000000005"]
    text = written.path.read_text()
    kh = known_hosts_file().as_posix()
    assert ("Host gpudesk-box\n    HostName 127.0.0.1\n    User me\n    Port 2222\n"
            "    HostKeyAlias gpudesk-box\n"
            f'    UserKnownHostsFile "{kh}"\n    GlobalKnownHostsFile none\n'
            "    StrictHostKeyChecking yes\n    ServerAliveInterval 15\n") in text
    assert "Host gpudesk-train-1\n    # key in the keyring" in text
    assert "HostName 203.0.113.7\n    User ubuntu\n" in text
    assert "old" not in text.replace("Host gpudesk", "") and "parked" not in text
    assert "*" not in "".join(ln for ln in text.splitlines() if ln.startswith("Host "))
    assert stat.S_IMODE(written.path.stat().st_mode) == 0o600
    assert written.changed
    again = ssh_config.write_managed_config(machines)
    assert not again.changed and again.path.read_text() == text
    leftovers = [p.name for p in written.path.parent.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_percent_in_paths_is_escaped_and_quotes_are_refused(home: Path,
                                                            tmp_path: Path) -> None:
    key = tmp_path / "100%key"
    key.write_text("not read")
    written = ssh_config.write_managed_config([own("box", mid="m-1")],
                                              identities={"m-1": key})
    assert f'IdentityFile "{tmp_path.as_posix()}/100%%key"' in written.path.read_text()
    with pytest.raises(SshConfigError):
        ssh_config.write_managed_config([own("box", mid="m-1")],
                                        identities={"m-1": tmp_path / 'a"b'})


# ------------------------------------------------------------------------------ Include

def test_include_needs_consent_and_is_added_once(home: Path) -> None:
    config = home / ".ssh" / "config"
    config.parent.mkdir(mode=0o700)
    config.write_bytes(USER_CONFIG)
    config.chmod(0o644)
    before = config.stat().st_mtime_ns
    with pytest.raises(SshConfigError) as refused:
        ssh_config.add_include(consent=False)
    assert "needs your consent" in refused.value.message()
    assert config.read_bytes() == USER_CONFIG and config.stat().st_mtime_ns == before

    assert ssh_config.add_include(consent=True) == "added"
    data = config.read_bytes()
    line = f'Include "{ssh_config.managed_file().as_posix()}"'.encode()
    assert data == line + b"\r\n" + USER_CONFIG  # CRLF kept; the rest byte-for-byte
    assert stat.S_IMODE(config.stat().st_mode) == 0o644  # the user's mode kept
    assert ssh_config.has_include()
    assert ssh_config.add_include(consent=True) == "present"
    assert config.read_bytes() == data

    assert ssh_config.remove_include() == "removed"
    assert config.read_bytes() == USER_CONFIG
    assert ssh_config.remove_include() == "absent"


def test_included_settings_come_first_and_the_users_still_apply(home: Path) -> None:
    """``ssh -G`` (resolve, don't connect): our block wins for gpudesk hosts; the user's
    top-level and ``Host`` settings after the Include still apply to the rest."""
    if shutil.which("ssh") is None:
        pytest.skip("no OpenSSH client")
    config = home / ".ssh" / "config"
    config.parent.mkdir(mode=0o700)
    config.write_bytes(b"User toplevel\n" + USER_CONFIG)
    ssh_config.write_managed_config([own("box", port=2222, mid="m-1")])
    ssh_config.add_include(consent=True)

    def resolved(alias: str) -> dict[str, str]:
        out = subprocess.run(["ssh", "-G", "-F", str(config), alias], capture_output=True,
                             text=True, timeout=30, check=True, env={**os.environ,
                                                                     "HOME": str(home)}).stdout
        return dict(line.split(" ", 1) for line in out.splitlines() if " " in line)

    box = resolved("gpudesk-box")
    assert (box["hostname"], box["port"], box["user"]) == ("127.0.0.1", "2222", "me")
    assert box["stricthostkeychecking"] in ("yes", "true")
    assert box["hostkeyalias"] == "gpudesk-box"
    assert box["userknownhostsfile"] == known_hosts_file().as_posix()
    work = resolved("work")
    assert (work["hostname"], work["user"]) == ("work.example.org", "toplevel")
    assert work["stricthostkeychecking"] in ("no", "false")


def test_include_creates_ssh_folder_and_config(home: Path) -> None:
    assert ssh_config.add_include(consent=True) == "added"
    folder = home / ".ssh"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    config = folder / "config"
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert config.read_text() == f'Include "{ssh_config.managed_file().as_posix()}"\n'


def test_symlinked_config_stays_a_symlink(home: Path, tmp_path: Path) -> None:
    real = tmp_path / "dotfiles" / "ssh_config"
    real.parent.mkdir()
    real.write_bytes(b"Host a\n  User b\n")
    (home / ".ssh").mkdir()
    (home / ".ssh" / "config").symlink_to(real)
    assert ssh_config.add_include(consent=True) == "added"
    assert (home / ".ssh" / "config").is_symlink()
    assert real.read_bytes().endswith(b"\nHost a\n  User b\n")
    assert ssh_config.remove_include() == "removed"
    assert real.read_bytes() == b"Host a\n  User b\n"


# ------------------------------------------------------------------------------ real ssh

def _needs_ssh() -> None:
    if shutil.which("ssh") is None:
        pytest.skip("no OpenSSH client")


def test_real_ssh_reaches_the_machine_with_its_pin_and_refuses_a_wrong_one(
        sshd: SshdServer, home: Path) -> None:  # noqa: F811
    _needs_ssh()
    config = home / ".ssh" / "config"
    config.parent.mkdir(mode=0o700)
    config.write_bytes(USER_CONFIG)  # says StrictHostKeyChecking no for Host *
    machine = own("box", port=sshd.port, user=sshd.user, mid="m-00000000aa")
    ssh_config.remember_identity(machine.id, sshd.client_key)
    ssh_config.write_managed_config([machine])
    assert ssh_config.add_include(consent=True) == "added"

    # No pin yet: StrictHostKeyChecking yes (ours comes first) refuses, pins nothing.
    unpinned = ssh(home, "gpudesk-box")
    assert unpinned.returncode == 255, unpinned.stderr
    assert "Host key verification failed" in unpinned.stderr
    assert PinStore().names() == []

    pin_host_key(sshd, "gpudesk-box")
    ok = ssh(home, "gpudesk-box")
    assert ok.returncode == 0, ok.stderr

    sshd.restart_with_new_host_key()  # the machine now offers a different key
    changed = ssh(home, "gpudesk-box")
    assert changed.returncode == 255
    assert "REMOTE HOST IDENTIFICATION HAS CHANGED" in changed.stderr
    assert "Host key verification failed" in changed.stderr


def test_launched_machine_key_goes_to_the_agent_never_to_a_file(
        sshd: SshdServer, home: Path, agent: str,  # noqa: F811
        gpudesk_home: Path) -> None:
    _needs_ssh()
    from gpudesk.services.cloud.credentials import _generate

    pem, key = _generate("ed25519")  # what ensure_ssh_key keeps in the keyring
    with (sshd.workdir / "authorized_keys").open("a") as f:
        f.write(f"{key.get_name()} {key.get_base64()}\n")
    machine = cloud("gpu1", ip="127.0.0.1", port=sshd.port, user=sshd.user, mid="m-00000000bb")
    pin_host_key(sshd, "gpudesk-gpu1")
    written = ssh_config.write_managed_config([machine])
    assert written.blocks[0].identity_file is None  # no agent key yet: no IdentityFile
    ssh_config.add_include(consent=True)

    keys = {"gpudesk": pem}
    env = {"SSH_AUTH_SOCK": agent}
    pubs = ssh_config.add_keys_to_agent([ssh_config.cloud_key_name(machine)], lifetime_s=600,
                                        load=keys.get, env={**os.environ, **env})
    assert pubs == [ssh_config.public_key_file("gpudesk")]
    written = ssh_config.write_managed_config([machine])
    assert written.blocks[0].identity_file == pubs[0]
    assert "IdentitiesOnly yes" in written.path.read_text()

    assert ssh(home, "gpudesk-gpu1", env=env).returncode == 0
    without_agent = ssh(home, "gpudesk-gpu1")
    assert without_agent.returncode == 255
    assert "Permission denied" in without_agent.stderr
    secret = pem.strip().splitlines()[1]
    for root in (gpudesk_home, home):
        for path in root.rglob("*"):
            if path.is_file():
                assert secret not in path.read_text(errors="replace"), path


def test_no_agent_is_a_readable_error(home: Path, tmp_path: Path) -> None:
    from gpudesk.services.cloud.credentials import _generate

    pem, _ = _generate("ed25519")
    env = {**os.environ, "SSH_AUTH_SOCK": str(tmp_path / "nothing.sock")}
    with pytest.raises(SshConfigError) as caught:
        ssh_config.add_keys_to_agent(["gpudesk"], load={"gpudesk": pem}.get, env=env)
    assert "No ssh-agent is running" in caught.value.message()
    assert not ssh_config.public_key_file("gpudesk").exists()
