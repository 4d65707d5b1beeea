"""A run's store config on its machine (real sshd, moto's S3 server): no secret in the
config or in any command line run over SSH; the STS keys in a mode-600 file the agent's
own client reads and signs with."""
# ruff: noqa: F811 - pytest fixtures imported from the fixture modules arrive as parameters

from __future__ import annotations

import json
import stat
from datetime import UTC
from datetime import datetime
from datetime import timedelta
from pathlib import Path

import pytest
from fixtures_agent_store import Bucket  # noqa: F401 - fixtures
from fixtures_agent_store import aws  # noqa: F401 - fixtures
from fixtures_agent_store import bucket  # noqa: F401 - fixtures
from fixtures_agent_store import moto_server  # noqa: F401 - fixtures
from fixtures_sshd import SshdServer  # noqa: F401 - fixture
from fixtures_sshd import sshd  # noqa: F401 - fixture
from test_runs import PYTHON

from gpudesk.agent.store import CredentialSource
from gpudesk.agent.store import Store
from gpudesk.agent.store import StoreConfig
from gpudesk.services.remote.host_keys import HostKeyPolicy
from gpudesk.services.remote.host_keys import PinStore
from gpudesk.services.remote.ssh import SshConnection
from gpudesk.services.remote.ssh import SshTarget
from gpudesk.services.runs import run_store
from gpudesk.services.storage.access import StoreAccess
from gpudesk.services.storage.access import TempCredentials
from gpudesk.services.storage.uri import StoreUri

KEY_ID = "ASIARUNSTORE00000001"
SECRET = "run-store/SeCrEt+0123456789abcdefGHIJKLmnop"
TOKEN = "FwoGZXIvYXdzE-run-store-session-token-0123456789"


class RecordingConnection(SshConnection):
    """A real connection that keeps every command line it runs (what a process list on
    the machine, or sshd's log, would show)."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.commands: list[str] = []

    def start(self, command: str, what: str = "a command"):  # type: ignore[no-untyped-def]
        self.commands.append(command)
        return super().start(command, what)


def recording(server: SshdServer) -> RecordingConnection:
    target = SshTarget.parse(server.url, key_file=server.client_key)
    conn = RecordingConnection(target, HostKeyPolicy.expect(server.host_key_fingerprint),
                               store=PinStore())
    conn.connect()
    return conn


def sts_access(bucket_name: str, run_id: str, prefix: str = "",
               expires: datetime | None = None) -> StoreAccess:
    until = expires or datetime.now(UTC).replace(microsecond=0) + timedelta(hours=1)
    return StoreAccess(StoreUri("aws", bucket_name, prefix), "us-east-1", run_id,
                       sts=TempCredentials(KEY_ID, SECRET, TOKEN, until))


@pytest.fixture
def to_moto(bucket: Bucket, monkeypatch: pytest.MonkeyPatch) -> Bucket:
    """The machine's agent reaches moto on 127.0.0.1, path-style."""
    monkeypatch.setenv("GPUDESK_STORE_ENDPOINT_AWS", bucket.moto.endpoint)
    monkeypatch.setenv("GPUDESK_STORE_ADDRESSING_AWS", "path")
    for cloud in ("TENCENT", "ALIYUN"):
        monkeypatch.delenv(f"GPUDESK_STORE_ENDPOINT_{cloud}", raising=False)
    monkeypatch.delenv("GPUDESK_STORE_EVERY_S", raising=False)
    return bucket


def test_sts_keys_go_to_a_private_file_never_into_argv_and_the_agent_signs_with_them(
        sshd: SshdServer, to_moto: Bucket, tmp_path: Path) -> None:
    root = tmp_path / "machine"
    run_dir = f"{root}/runs/proj-1"
    expires = datetime(2036, 1, 2, 3, 4, 5, tzinfo=UTC)
    access = sts_access(to_moto.name, "proj-1", "team/", expires)
    conn = recording(sshd)
    try:
        written = run_store.write_config(conn, run_dir, "proj-1", access, python=PYTHON,
                                         keep=4)
    finally:
        conn.close()
    assert conn.commands, "nothing ran over SSH"
    for command in conn.commands:
        assert SECRET not in command and TOKEN not in command and KEY_ID not in command

    config_text = Path(written.config_path).read_text()
    assert SECRET not in config_text and TOKEN not in config_text
    creds = root / "store-credentials" / "proj-1.json"
    assert json.loads(config_text) == {
        "cloud": "aws", "region": "us-east-1", "bucket": to_moto.name,
        "prefix": "team/runs/proj-1/", "run_id": "proj-1", "keep": 4,
        "credentials_file": str(creds), "endpoint": to_moto.moto.endpoint,
        "addressing": "path"}
    # the keys live outside the run folder (pull copies that folder to the laptop)
    assert written.credentials_path == str(creds) and Path(run_dir) not in creds.parents
    assert stat.S_IMODE(creds.stat().st_mode) == 0o600
    assert stat.S_IMODE(creds.parent.stat().st_mode) == 0o700
    assert json.loads(creds.read_text()) == {"key_id": KEY_ID, "secret": SECRET,
                                             "token": TOKEN,
                                             "expiration": "2036-01-02T03:04:05Z"}
    assert not [p.name for p in creds.parent.iterdir() if ".tmp-" in p.name]
    assert (written.uri, written.credentials, written.expires) == (
        f"s3://{to_moto.name}/team/runs/proj-1/", "sts", expires)

    # the agent's own client takes the file as written and uploads with those keys
    config = StoreConfig.from_dict(json.loads(config_text))
    source = CredentialSource(config)
    assert source.get().key_id == KEY_ID and source.expires == expires.timestamp()
    Store(config, source).put_bytes(config.prefix + "probe", b"1")
    assert to_moto.keys("team/") == ["team/runs/proj-1/probe"]


def test_a_role_config_names_the_role_and_writes_no_key_file(
        sshd: SshdServer, to_moto: Bucket, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUDESK_STORE_EVERY_S", "0.5")
    run_dir = f"{tmp_path}/m/runs/r-2"
    access = StoreAccess(StoreUri("aws", to_moto.name), "us-east-1", "r-2", role="gpudesk-run")
    conn = recording(sshd)
    with conn:
        written = run_store.write_config(conn, run_dir, "r-2", access, python=PYTHON, keep=2)
    data = json.loads(Path(written.config_path).read_text())
    assert data["role"] == "gpudesk-run" and "credentials_file" not in data
    assert (data["interval_s"], data["log_every_s"], data["prefix"]) == (0.5, 0.5, "runs/r-2/")
    assert written.credentials == "role" and written.credentials_path == ""
    assert not (tmp_path / "m" / "store-credentials").exists()


def test_overrides_are_per_cloud_and_a_role_is_reused_but_keys_are_not() -> None:
    env = {"GPUDESK_STORE_ENDPOINT_TENCENT": "http://127.0.0.1:9",
           "GPUDESK_STORE_PROXY_TENCENT": "http://127.0.0.1:8",
           "GPUDESK_STORE_ENDPOINT_AWS": "http://127.0.0.1:7"}
    assert run_store.overrides("tencent", env) == {"endpoint": "http://127.0.0.1:9",
                                                   "proxy": "http://127.0.0.1:8"}
    assert run_store.overrides("aliyun", env) == {}
    again = run_store.reuse_access("oss://my-runs/lab/", "cn-hangzhou", "r-3", "gpudesk-run")
    assert again is not None and again.kind == "role"
    assert str(again.store.run("r-3").uri) == "oss://my-runs/lab/runs/r-3/"
    assert run_store.reuse_access("oss://my-runs/lab/", "cn-hangzhou", "r-3", "") is None
    assert run_store.reuse_access("", "", "r-3", "gpudesk-run") is None
    with pytest.raises(ValueError, match="none"):
        run_store.write_config(None, "/x/runs/r", "r",  # type: ignore[arg-type]
                               StoreAccess(StoreUri("aws", "b-1"), "us-east-1", "r"))
