"""How a run's machine gets into its bucket, decided at run start (issue 22): own machines
and "none" get nothing; a cloud machine gets its account's bucket in its region and STS
keys limited to the run; a refusal gives kind "none" with the reason, and the run goes on.
The last test starts a run through run_control on the real sshd, as the Run page does."""
# ruff: noqa: F811 - pytest fixtures imported from the fixture modules arrive as parameters

from __future__ import annotations

import json
import stat
from datetime import UTC
from datetime import datetime
from pathlib import Path

import pytest
from fixtures_aws import MotoAws  # noqa: F401
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from fixtures_keyring import MemoryKeyring  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401
from fixtures_sshd import SshdServer  # noqa: F401
from fixtures_sshd import sshd  # noqa: F401
from test_runs import PYTHON

from gpudesk.services.cloud.credentials import save_credentials
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.core.said import Said
from gpudesk.services.money.ledger import STATE_RUNNING
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.remote.host_keys import HostKeyPolicy
from gpudesk.services.remote.host_keys import PinStore
from gpudesk.services.remote.ssh import SshConnection
from gpudesk.services.remote.ssh import SshTarget
from gpudesk.services.runs import machine_access
from gpudesk.services.runs import run_control
from gpudesk.services.runs import run_store
from gpudesk.services.storage import sts
from gpudesk.services.storage.buckets import BucketMemory
from gpudesk.services.storage.buckets import BucketTarget
from gpudesk.services.storage.buckets import default_name
from gpudesk.services.storage.errors import MSG_DENIED

RUN = "proj-20260101-120000-ab12"
REGION = "eu-west-1"


def cloud_machine(store: str = "auto", **kw: object) -> Machine:
    return Machine(id="m-00000000aa", provider="aws", region=REGION, name="gpu1",
                   state=STATE_RUNNING, cloud_id="i-0123456789abcdef0", store=store,
                   **kw)  # type: ignore[arg-type]


def test_own_machines_and_store_none_get_no_bucket() -> None:
    own = Machine(id="m-own", provider="own", public_ip="10.0.0.2", store="auto")
    assert machine_access.access_for(own, RUN) is None
    assert machine_access.access_for(cloud_machine("none"), RUN) is None
    assert machine_access.store_summary(own) == {"uri": "", "role": "", "credentials": "none"}
    assert machine_access.store_summary(cloud_machine("none"))["credentials"] == "none"
    assert machine_access.store_summary(cloud_machine("")) == {
        "uri": "auto", "role": "", "credentials": "sts"}
    assert machine_access.store_summary(cloud_machine("s3://my-bucket/lab")) == {
        "uri": "s3://my-bucket/lab/", "role": "", "credentials": "sts"}


def test_auto_makes_the_bucket_in_the_machines_region_and_run_keys(
        aws: MotoAws, tmp_path: Path) -> None:
    memory = BucketMemory(tmp_path / "buckets.json")
    access = machine_access.access_for(cloud_machine("auto"), RUN, credentials=aws.credentials,
                                       memory=memory, hours=3)
    assert access is not None and access.kind == "sts", access and access.why_none
    assert access.run_id == RUN and access.region == REGION and access.role == ""
    s3 = aws.client("s3", REGION)
    target = BucketTarget("aws", REGION, sts.whoami("aws", REGION, aws.credentials).account_id)
    assert access.store.bucket == default_name(target)
    assert s3.get_bucket_location(Bucket=access.store.bucket)["LocationConstraint"] == REGION
    assert {"Key": "gpudesk", "Value": "1"} in s3.get_bucket_tagging(
        Bucket=access.store.bucket)["TagSet"]
    assert memory.get(target.key) == access.store.bucket
    assert access.sts is not None and access.sts.token
    assert access.sts.key_id != aws.credentials.key_id  # never the account's keys
    left = (access.sts.expires - datetime.now(UTC)).total_seconds()
    assert 3 * 3600 - 60 < left <= 3 * 3600


def test_a_given_uri_is_used_as_it_is_and_a_wrong_one_says_why(
        aws: MotoAws, tmp_path: Path) -> None:
    memory = BucketMemory(tmp_path / "buckets.json")
    access = machine_access.access_for(cloud_machine("s3://team-bucket/lab"), RUN,
                                       credentials=aws.credentials, memory=memory)
    assert access is not None and access.kind == "sts"
    assert str(access.store) == "s3://team-bucket/lab/"
    assert aws.client("s3").list_buckets()["Buckets"] == []  # nothing made for a URI
    other = machine_access.access_for(cloud_machine("oss://team-bucket/lab"), RUN,
                                      credentials=aws.credentials)
    assert other is not None and other.kind == "none"
    assert isinstance(other.why_none, Said) and other.why_none.context == "Storage"
    assert "oss://team-bucket/lab/" in other.why_none and "s3" in other.why_none


def test_a_refusal_gives_no_access_with_the_denied_action_and_no_secret(
        aws: MotoAws, tmp_path: Path) -> None:
    iam = aws.client("iam")
    iam.create_user(UserName="no-sts")
    iam.put_user_policy(UserName="no-sts", PolicyName="p", PolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [
            {"Effect": "Allow", "Action": "*", "Resource": "*"},
            {"Effect": "Deny", "Action": "sts:GetFederationToken", "Resource": "*"}]}))
    made = iam.create_access_key(UserName="no-sts")["AccessKey"]
    creds = Credentials("aws", made["AccessKeyId"], made["SecretAccessKey"])
    with aws.enforce_iam():
        access = machine_access.access_for(cloud_machine("auto"), RUN, credentials=creds,
                                           memory=BucketMemory(tmp_path / "b.json"))
    assert access is not None and access.kind == "none" and access.sts is None
    assert "sts:GetFederationToken" in access.why_none
    assert isinstance(access.why_none, Said) and access.why_none.template == MSG_DENIED
    assert made["SecretAccessKey"] not in access.why_none


def test_no_keys_in_the_keyring_says_so(memory_keyring: MemoryKeyring) -> None:
    access = machine_access.access_for(cloud_machine("auto"), RUN)
    assert access is not None and access.kind == "none"
    assert access.why_none.template == machine_access.MSG_NO_KEYS  # type: ignore[attr-defined]


# ------------------------------------------------------------------ a real start

def test_a_run_started_on_a_launched_machine_gets_sts_keys_in_a_private_file(
        sshd: SshdServer, aws: MotoAws, memory_keyring: MemoryKeyring, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GPUDESK_STORE_ENDPOINT_AWS", aws.endpoint)
    monkeypatch.setenv("GPUDESK_STORE_ADDRESSING_AWS", "path")
    save_credentials(aws.credentials)
    with Ledger() as ledger:
        ledger.add(cloud_machine("auto", public_ip="127.0.0.1", ssh_port=sshd.port,
                                 ssh_user=sshd.user, key_file=str(sshd.client_key)))
    pin = SshConnection(SshTarget("127.0.0.1", sshd.port, sshd.user, key_file=sshd.client_key,
                                  pin_name="gpudesk-gpu1"),
                        HostKeyPolicy.expect(sshd.host_key_fingerprint), store=PinStore())
    pin.connect().close()
    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text("print('step 1 loss 0.5')\n")
    root = tmp_path / "machine"
    form = run_control.RunForm(target="m-00000000aa", project=str(project), script="train.py",
                               nproc=0, python=PYTHON, root=str(root))
    said: list[str] = []
    record = run_control.start_run(form, HostKeyPolicy.expect(sshd.host_key_fingerprint),
                                   said.append, check=False)
    assert record.store_credentials == "sts" and record.store_region == REGION
    assert record.store_uri.startswith("s3://gpudesk-")
    assert any("short-lived" in line for line in said), said
    config = json.loads((root / "runs" / record.id / run_store.CONFIG_FILE).read_text())
    assert config["prefix"] == f"runs/{record.id}/" and "role" not in config
    keys_file = Path(config["credentials_file"])
    assert keys_file == root / run_store.CREDENTIALS_DIR / f"{record.id}.json"
    assert stat.S_IMODE(keys_file.stat().st_mode) == 0o600
    keys = json.loads(keys_file.read_text())
    assert keys["key_id"] and keys["token"] and keys["expiration"].endswith("Z")
    assert keys["key_id"] != aws.credentials.key_id
    assert aws.credentials.secret not in json.dumps(config)
    assert aws.credentials.secret not in keys_file.read_text()
