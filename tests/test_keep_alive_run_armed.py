"""A run started on a kept-alive machine arms its group, through the real path (issue 23).

``gpudesk launch --spot --keep-alive`` on moto makes the group; the row is then pointed at
the sshd fixture (the machine's address and login are the only things changed) and
``run_control.start_run`` starts a run there as the Run page does. After it:

* moto's launch template's newest version (the group's default, launched as $Latest) is
  the keep-alive user data of THIS run: decoded, it names ``runs/<id>/`` and the agent
  bundle's SHA-256 that run.json and the bucket hold;
* the members' role (moto IAM) allows ``runs/<id>/``;
* the run package is in moto's S3 and the run's log says the group's next machine resumes it;
* a reclaim: the replacement boots from that data, ``ls`` follows the row to it and
  expects the user data's host key. A real sshd holding that key is let in by
  ``targets.open_connection`` (which then replaces the key on the machine, as it does a
  launch key); the reclaimed member's key is refused.

moto's CreateLaunchTemplateVersion needs one fix to launch from a new version
(tests/moto_template_versions.py)."""
# ruff: noqa: F811 - fixtures imported from fixtures_* arrive as parameters

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import moto_template_versions
import pytest
from fixtures_aws import MotoAws  # noqa: F401
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401
from fixtures_sshd import SshdServer  # noqa: F401
from fixtures_sshd import sshd  # noqa: F401
from test_launch_keep_alive import LAUNCH
from test_launch_keep_alive import _run
from test_runs import PYTHON

from gpudesk.services.cloud import credentials
from gpudesk.services.cloud.providers.user_data import decode_base64
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.remote import first_boot
from gpudesk.services.remote import targets
from gpudesk.services.remote.host_key_rotation import STEP_MEMBER_KEY
from gpudesk.services.remote.host_key_rotation import STEP_ROTATED
from gpudesk.services.remote.host_key_rotation import RotationConfig
from gpudesk.services.remote.host_keys import HostKeyChanged
from gpudesk.services.remote.host_keys import HostKeyPolicy
from gpudesk.services.remote.host_keys import PinStore
from gpudesk.services.remote.ssh_config import host_alias
from gpudesk.services.runs import keep_alive_run
from gpudesk.services.runs import run_control
from gpudesk.services.storage.uri import parse_uri

REGION = "us-east-1"


@pytest.fixture
def cloud(aws: MotoAws, memory_keyring: Any, monkeypatch: pytest.MonkeyPatch) -> MotoAws:
    moto_template_versions.fix(monkeypatch)
    monkeypatch.setenv("GPUDESK_STORE_ENDPOINT_AWS", aws.endpoint)
    monkeypatch.setenv("GPUDESK_STORE_ADDRESSING_AWS", "path")
    credentials.save_credentials(aws.credentials)
    aws.publish_dlami(REGION)
    return aws


def _point_at(ledger_id: str, server: SshdServer) -> None:
    """The row's machine is ``server`` (address, login, its key pinned as a launch pins)."""
    with Ledger() as ledger:
        m = ledger.update(ledger_id, public_ip=server.host, ssh_port=server.port,
                          ssh_user=server.user, key_file=str(server.client_key))
    PinStore().forget(host_alias(m))
    PinStore().pin(host_alias(m), first_boot._paramiko_key(server.host_key_line))


def _template_user_data(cloud: MotoAws, name: str, version: str = "$Latest") -> str:
    ec2 = cloud.client("ec2")
    (template,) = ec2.describe_launch_templates(LaunchTemplateNames=[name])["LaunchTemplates"]
    (found,) = ec2.describe_launch_template_versions(
        LaunchTemplateId=template["LaunchTemplateId"], Versions=[version])[
        "LaunchTemplateVersions"]
    return decode_base64(found["LaunchTemplateData"]["UserData"])


def _project(tmp_path: Path) -> Path:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "train.py").write_text("print('step 1 loss 0.5')\n")
    return project


def test_a_run_on_a_kept_alive_machine_arms_its_group_and_the_replacement_is_expected(
        cloud: MotoAws, sshd: SshdServer, tmp_path: Path) -> None:
    code, out, err = _run([*LAUNCH, "--spot", "--keep-alive", "--budget", "5", "--json"])
    assert code == 0, err
    ledger_id = json.loads(out)["id"]
    with Ledger() as ledger:
        m = ledger.get(ledger_id)
    assert m is not None and m.group_live
    launch_data = _template_user_data(cloud, m.group_id)
    assert "runs/" not in launch_data  # the launch's user data: the guard only
    _point_at(ledger_id, sshd)

    said: list[str] = []
    form = run_control.RunForm(target=ledger_id, project=str(_project(tmp_path)),
                               script="train.py", nproc=0, python=PYTHON,
                               root=str(tmp_path / "machine"))
    record = run_control.start_run(form, HostKeyPolicy.refuse(), said.append, check=False)

    assert f"The group's next machine resumes run {record.id} from the bucket." in said, said
    assert any(f"resumes run {record.id}" in n for n in record.said())  # kept in its notes
    store = parse_uri(record.store_uri)
    s3 = cloud.client("s3")
    prefix = f"runs/{record.id}/"
    keys = {o["Key"] for o in s3.list_objects_v2(Bucket=store.bucket, Prefix=prefix)[
        "Contents"]}
    assert {prefix + "run.json", prefix + "code/project.tar.gz",
            prefix + "boot/agent.tar.gz"} <= keys
    run_json = json.loads(s3.get_object(Bucket=store.bucket, Key=prefix + "run.json")[
        "Body"].read())
    assert run_json["group"] == {"cloud": "aws", "region": REGION, "group_id": m.group_id}
    assert run_json["budget"]["amount"] == 5.0 and run_json["budget"]["currency"] == "USD"
    assert run_json["budget"]["price_per_hour"] >= m.price_per_hour > 0

    # the template's newest version, the one the group launches from, is this run's
    data = _template_user_data(cloud, m.group_id)
    assert data == _template_user_data(cloud, m.group_id, "$Default")
    assert prefix in data and run_json["agent"]["sha256"] in data and store.bucket in data
    role = f"gpudesk-run-{ledger_id}"
    assert f'"role":"{role}"' in data
    # the role may reach this run's folder
    policy = cloud.client("iam").get_role_policy(RoleName=role, PolicyName="gpudesk-run")
    assert prefix in json.dumps(policy["PolicyDocument"])
    with Ledger() as ledger:
        steps = [(e.step, e.detail) for e in ledger.events(ledger_id)]
        fp, line = keep_alive_run.armed_key(ledger, m) or ("", "")
    assert ("group-armed", f"{record.id} {fp} 2") in steps
    assert f"ed25519_public: {line}" in data and fp.startswith("SHA256:")

    # a reclaim: the replacement boots from the run's data; ls follows the row to it
    asg = cloud.client("autoscaling")
    asg.terminate_instance_in_auto_scaling_group(InstanceId=m.cloud_id,
                                                 ShouldDecrementDesiredCapacity=False)
    (second,) = [i["InstanceId"] for i in asg.describe_auto_scaling_groups(
        AutoScalingGroupNames=[m.group_id])["AutoScalingGroups"][0]["Instances"]
        if i["InstanceId"] != m.cloud_id]
    value = cloud.client("ec2").describe_instance_attribute(
        InstanceId=second, Attribute="userData")["UserData"]["Value"]
    assert decode_base64(value) == data
    code, _, err = _run(["ls", "--json"])
    assert code == 0, err
    with Ledger() as ledger:
        row = ledger.get(ledger_id)
        assert row is not None and row.cloud_id == second
        assert row.host_key_fingerprint == fp
        assert ledger.events(ledger_id)[-1].step in (STEP_MEMBER_KEY, "reconcile",
                                                      "guard-read")
    assert PinStore().fingerprints(host_alias(row)) == [fp]

    # the replacement is a real sshd holding the user data's key: let in, then re-keyed
    pem = credentials.load_private_key(keep_alive_run.template_key_entry(ledger_id))
    assert pem is not None
    member = SshdServer(workdir=tmp_path / "member")
    member.workdir.mkdir()
    key_file = member.workdir / "host_ed25519"
    key_file.write_text(pem)
    key_file.chmod(0o600)
    member.client_key, member.host_key_line = sshd.client_key, line
    (member.workdir / "authorized_keys").write_text(
        (sshd.workdir / "authorized_keys").read_text())  # the same login key
    member.start()
    try:
        with Ledger() as ledger:
            ledger.update(ledger_id, public_ip=member.host, ssh_port=member.port)
        assert member.proc is not None
        rotation = RotationConfig(key_path=str(key_file), become="", guard_wait_s=0,
                                  reload_command=f"kill -HUP {member.proc.pid}")
        conn = targets.open_connection(ledger_id, None, HostKeyPolicy.refuse(),
                                       rotation=rotation)
        try:
            assert conn.host_key_fingerprint == fp
        finally:
            conn.close()
        with Ledger() as ledger:
            after = [e.step for e in ledger.events(ledger_id)]
            row = ledger.get(ledger_id)
        assert STEP_ROTATED in after[after.index(STEP_MEMBER_KEY):]
        assert row is not None and row.host_key_fingerprint not in ("", fp)
        # the reclaimed member's key (the first sshd) is refused, not accepted
        with Ledger() as ledger:
            ledger.update(ledger_id, public_ip=sshd.host, ssh_port=sshd.port)
        with pytest.raises(HostKeyChanged):
            targets.open_connection(ledger_id, None, HostKeyPolicy.refuse(),
                                    rotation=rotation).close()
    finally:
        member.stop()


def test_a_group_that_refuses_the_user_data_leaves_the_run_running_and_says_why(
        cloud: MotoAws, sshd: SshdServer, tmp_path: Path) -> None:
    code, out, err = _run([*LAUNCH, "--spot", "--keep-alive", "--budget", "5", "--json"])
    assert code == 0, err
    ledger_id = json.loads(out)["id"]
    _point_at(ledger_id, sshd)
    with Ledger() as ledger:
        m = ledger.get(ledger_id)
    assert m is not None
    # the group is gone behind gpudesk's back (the ledger still thinks it lives)
    cloud.client("autoscaling").delete_auto_scaling_group(AutoScalingGroupName=m.group_id,
                                                          ForceDelete=True)
    said: list[str] = []
    form = run_control.RunForm(target=ledger_id, project=str(_project(tmp_path)),
                               script="train.py", nproc=0, python=PYTHON,
                               root=str(tmp_path / "machine"))
    record = run_control.start_run(form, HostKeyPolicy.refuse(), said.append, check=False)
    assert record.id and record.store_uri  # the run started, with its bucket
    refused = [s for s in said if "was not given run" in s]
    assert len(refused) == 1 and record.id in refused[0], said
    assert getattr(refused[0], "context", "") == "KeepAlive"
    assert not any("resumes run" in s for s in said)
    with Ledger() as ledger:
        events = [(e.step, e.detail) for e in ledger.events(ledger_id)]
    steps = [step for step, _ in events]
    # armed only for the launch (its own user data), never for this run
    assert "group-arm-failed" in steps
    assert [d.split()[0] for step, d in events if step == "group-armed"] == ["-"]
