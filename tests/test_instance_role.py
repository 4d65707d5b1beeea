"""Issue 21: a machine that stops its own bill through a role, with no key on it.

AWS end to end on moto: gpudesk makes the role and instance profile (tagged as its own,
the policy limited to stopping or terminating the calling instance), associates it with
a launched machine and records it; the agent's ``cloud_stop`` then reads the role's
temporary credentials (moto's STS AssumeRole) from a metadata stand-in on 127.0.0.1 with
IMDSv2 and stops the machine through a SigV4-signed EC2 Query call — as a process, the way
the guard runs it, and in-process. Tencent and Aliyun: signed calls accepted by their
stand-ins, which check the real signatures.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from fixtures_aws import ACCOUNT  # noqa: F401
from fixtures_aws import MotoAws  # noqa: F401
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401
from metadata_standin import MetadataStandin

from gpudesk.agent import cloud_stop
from gpudesk.services.cloud import instance_role
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine

AMI = "ami-0abcdef1234567890"


def _launch(cloud: MotoAws, tags: dict[str, str] | None = None) -> str:
    cloud.publish_image("us-east-1", AMI, "ubuntu", datetime(2026, 1, 1, tzinfo=UTC))
    ec2 = cloud.client("ec2")
    tags = {"gpudesk": "1"} if tags is None else tags
    out = ec2.run_instances(ImageId=AMI, InstanceType="g5.xlarge", MinCount=1, MaxCount=1,
                            TagSpecifications=[{"ResourceType": "instance", "Tags": [
                                {"Key": k, "Value": v} for k, v in tags.items()]}])
    iid = str(out["Instances"][0]["InstanceId"])
    ec2.describe_instances(InstanceIds=[iid])  # pending → running
    return iid


def _state(cloud: MotoAws, iid: str) -> str:
    out = cloud.client("ec2").describe_instances(InstanceIds=[iid])
    return str(out["Reservations"][0]["Instances"][0]["State"]["Name"])


def _issuer(cloud: MotoAws, iid: str) -> Any:
    """The metadata's credentials: STS AssumeRole of the machine's role, as EC2 does."""
    issued: list[dict[str, str]] = []

    def issue() -> dict[str, str]:
        got = cloud.client("sts").assume_role(
            RoleArn=f"arn:aws:iam::{ACCOUNT}:role/{instance_role.ROLE_NAME}",
            RoleSessionName=iid, DurationSeconds=900)["Credentials"]
        answer = {"Code": "Success", "Type": "AWS-HMAC", "AccessKeyId": got["AccessKeyId"],
                  "SecretAccessKey": got["SecretAccessKey"], "Token": got["SessionToken"],
                  "Expiration": got["Expiration"].strftime("%Y-%m-%dT%H:%M:%SZ"),
                  "LastUpdated": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
        issued.append(answer)
        return answer

    issue.issued = issued  # type: ignore[attr-defined]
    return issue


def test_aws_role_made_tagged_attached_and_recorded(aws: MotoAws) -> None:  # noqa: F811
    iid = _launch(aws)
    with Ledger() as ledger:
        ledger.add(Machine(id="m-1", provider="aws", region="us-east-1", cloud_id=iid,
                           enforced_by="agent,shutdown-behavior", budget=10.0,
                           on_budget="stop"))
        got = instance_role.give_role(ledger, "m-1", aws.provider(), sleep=lambda s: None)
        assert got.attached and got.role == instance_role.ROLE_NAME
        iam = aws.client("iam")
        role = iam.get_role(RoleName=instance_role.ROLE_NAME)["Role"]
        assert {"Key": "gpudesk", "Value": "1"} in role["Tags"]
        trust = role["AssumeRolePolicyDocument"]
        trust = json.loads(trust) if isinstance(trust, str) else trust
        assert trust["Statement"][0]["Principal"] == {"Service": "ec2.amazonaws.com"}
        profile = iam.get_instance_profile(
            InstanceProfileName=instance_role.ROLE_NAME)["InstanceProfile"]
        assert [r["RoleName"] for r in profile["Roles"]] == [instance_role.ROLE_NAME]
        assert got.profile == profile["Arn"]
        assert {"Key": "gpudesk", "Value": "1"} in profile["Tags"]
        # the policy: stop/terminate only, only gpudesk's machines, only the caller itself
        doc = iam.get_role_policy(RoleName=instance_role.ROLE_NAME,
                                  PolicyName=instance_role.POLICY_NAME)["PolicyDocument"]
        doc = json.loads(doc) if isinstance(doc, str) else doc
        [statement] = doc["Statement"]
        assert statement["Effect"] == "Allow"
        assert sorted(statement["Action"]) == ["ec2:StopInstances", "ec2:TerminateInstances"]
        assert statement["Resource"] == "arn:aws:ec2:*:*:instance/*"
        assert statement["Condition"] == {"StringEquals": {
            "aws:ARN": "${ec2:SourceInstanceARN}", "aws:ResourceTag/gpudesk": "1"}}
        assoc = aws.client("ec2").describe_iam_instance_profile_associations(
            Filters=[{"Name": "instance-id", "Values": [iid]}])["IamInstanceProfileAssociations"]
        assert [a["IamInstanceProfile"]["Arn"] for a in assoc] == [profile["Arn"]]
        m = ledger.get("m-1")
        assert m is not None and m.enforced_by.split(",") == [
            "agent", "shutdown-behavior", "instance-role"]
        assert any(e.step == "instance-role" and instance_role.ROLE_NAME in e.detail
                   for e in ledger.events("m-1"))
        assert instance_role.role_of(ledger, m) == (True, "")
        # a second machine finds the same role and profile (nothing duplicated)
        iid2 = _launch(aws)
        ledger.add(Machine(id="m-2", provider="aws", region="us-east-1", cloud_id=iid2))
        assert instance_role.give_role(ledger, "m-2", aws.provider(),
                                       sleep=lambda s: None).attached
        assert len(iam.list_instance_profiles()["InstanceProfiles"]) == 1


def test_aws_refusal_falls_back_to_no_role_with_words(aws: MotoAws) -> None:  # noqa: F811
    iid = _launch(aws)

    class DeniedIam:
        def get_role(self, **kw: Any) -> Any:
            from botocore.exceptions import ClientError

            raise ClientError({"Error": {"Code": "AccessDenied", "Message":
                                         "User is not authorized to perform: iam:GetRole"}},
                              "GetRole")

    class Provider:
        def _client(self, service: str, region: str) -> Any:
            return DeniedIam() if service == "iam" else aws.client("ec2")

    with Ledger() as ledger:
        ledger.add(Machine(id="m-1", provider="aws", region="us-east-1", cloud_id=iid,
                           enforced_by="agent,shutdown-behavior", budget=5.0))
        got = instance_role.give_role(ledger, "m-1", Provider())
        assert not got.attached and got.why.startswith("AccessDenied")
        m = ledger.get("m-1")
        assert m is not None and "instance-role" not in m.enforced_by
        has, why = instance_role.role_of(ledger, m)
        assert not has and "AccessDenied" in why
        template, values = instance_role.sentence(m, "5.00 USD", "stop", "AWS", why)
        assert template == instance_role.MSG_NO_ROLE and "AccessDenied" in str(values["why"])
        # the user said no: no call at all
        ledger.add(Machine(id="m-2", provider="aws", region="us-east-1", cloud_id=iid))
        assert instance_role.give_role(ledger, "m-2", Provider(), allowed=False).why == "off"


def _env_without_keys() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["NO_PROXY"] = "127.0.0.1,localhost"
    return env


def test_agent_stops_its_machine_through_the_role_as_a_process(
        aws: MotoAws, moto_server: str, tmp_path: Path) -> None:  # noqa: F811
    iid = _launch(aws)
    with Ledger() as ledger:
        ledger.add(Machine(id="m-1", provider="aws", region="us-east-1", cloud_id=iid))
        assert instance_role.give_role(ledger, "m-1", aws.provider(),
                                       sleep=lambda s: None).attached
    issue = _issuer(aws, iid)
    with MetadataStandin("aws", instance_role.ROLE_NAME, iid, "us-east-1", issue) as md:
        commands = instance_role.agent_commands("aws")
        argv = cloud_stop.expand(commands["stop"]) + ["--metadata", md.url,
                                                      "--endpoint", moto_server]
        assert argv[:2] == [sys.executable, cloud_stop.__file__]
        done = subprocess.run(argv, env=_env_without_keys(), capture_output=True, text=True,
                              timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        assert f"StopInstances {iid}" in done.stdout
        # IMDSv2: a token first; the role's credentials from the metadata, nowhere else
        assert md.hits[0] == "PUT /latest/api/token"
        assert f"GET /latest/meta-data/iam/security-credentials/{instance_role.ROLE_NAME}" \
            in md.hits
    creds = issue.issued[-1]
    for secret in (creds["SecretAccessKey"], creds["Token"]):
        assert secret not in done.stdout + done.stderr and secret not in " ".join(argv)
    assert _state(aws, iid) in ("stopping", "stopped")


def test_agent_terminates_in_process_and_signs_as_botocore(
        aws: MotoAws, moto_server: str) -> None:  # noqa: F811
    iid = _launch(aws)
    with Ledger() as ledger:
        ledger.add(Machine(id="m-1", provider="aws", region="us-east-1", cloud_id=iid))
        instance_role.give_role(ledger, "m-1", aws.provider(), sleep=lambda s: None)
    with MetadataStandin("aws", instance_role.ROLE_NAME, iid, "us-east-1",
                         _issuer(aws, iid)) as md:
        said = cloud_stop.stop_self("aws", "terminate", instance_role.ROLE_NAME,
                                    metadata=md.url, endpoint=moto_server)
    assert said == f"EC2 TerminateInstances {iid}: accepted"
    assert _state(aws, iid) in ("shutting-down", "terminated")


def test_sigv4_matches_botocore() -> None:
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    creds = cloud_stop.Creds("ASIAEXAMPLE", "c2VjcmV0/secret+KEY", "FwoGZXIvYXdzEXAMPLE==")
    url = "https://ec2.eu-west-1.amazonaws.com/"
    body = b"Action=StopInstances&Version=2016-11-15&InstanceId.1=i-0123456789abcdef0"
    now = 1_780_000_000.0
    mine = cloud_stop.aws_sigv4(creds, "eu-west-1", url, body, now)
    req = AWSRequest("POST", url, data=body, headers={
        "Content-Type": mine["content-type"], "X-Amz-Date": mine["x-amz-date"],
        "X-Amz-Security-Token": creds.token, "Host": mine["host"]})
    req.context["timestamp"] = mine["x-amz-date"]
    auth = SigV4Auth(Credentials(creds.key_id, creds.secret, creds.token), "ec2", "eu-west-1")
    expected = auth.signature(auth.string_to_sign(req, auth.canonical_request(req)), req)
    assert mine["authorization"].endswith(f"Signature={expected}")
    assert "SignedHeaders=content-type;host;x-amz-date;x-amz-security-token" in \
        mine["authorization"]


def test_metadata_refusals_are_errors_without_secrets(aws: MotoAws) -> None:  # noqa: F811
    def refuse() -> dict[str, str]:
        return {"Code": "AssumeRoleUnauthorizedAccess", "Message": "no"}

    with MetadataStandin("aws", "gpudesk-self-stop", "i-1", "us-east-1", refuse) as md:
        with pytest.raises(cloud_stop.CloudStopError, match="AssumeRoleUnauthorizedAccess"):
            cloud_stop.stop_self("aws", "stop", "gpudesk-self-stop", metadata=md.url,
                                 endpoint="http://127.0.0.1:9")
        with pytest.raises(cloud_stop.CloudStopError, match="HTTP 404"):
            cloud_stop.stop_self("aws", "stop", "other-role", metadata=md.url,
                                 endpoint="http://127.0.0.1:9")
    assert "secret" not in repr(cloud_stop.Creds("AKIA", "secret", "token"))


def test_agent_commands_name_the_role_and_fall_back_only_on_aws() -> None:
    aws_cmds = instance_role.agent_commands("aws")
    assert aws_cmds["stop"][0] == cloud_stop.COMMAND == instance_role.AGENT_COMMAND
    assert "--or-poweroff" in aws_cmds["terminate"]
    # an OS power-off keeps a CVM/ECS machine charging: no fallback there
    assert "--or-poweroff" not in instance_role.agent_commands("tencent")["stop"]
    from gpudesk.agent.rules import parse_rules

    rules = parse_rules({"commands": {k: list(v) for k, v in aws_cmds.items()}})
    assert rules.command("stop") == aws_cmds["stop"]


def test_agent_guard_at_the_budget_stops_through_the_role(
        aws: MotoAws, moto_server: str, tmp_path: Path) -> None:  # noqa: F811
    """The agent's own budget rule fires the role's command (``gpudesk-cloud-stop``, run by
    the agent's python) and the cloud stops the machine: no shutdown from inside needed."""
    from gpudesk.agent.clock import SimClock
    from gpudesk.agent.events import EventLog
    from gpudesk.agent.events import read_events
    from gpudesk.agent.guard import Guard
    from gpudesk.agent.rules import parse_rules

    iid = _launch(aws)
    with Ledger() as ledger:
        ledger.add(Machine(id="m-1", provider="aws", region="us-east-1", cloud_id=iid))
        assert instance_role.give_role(ledger, "m-1", aws.provider(),
                                       sleep=lambda s: None).attached
    clock = SimClock()
    with MetadataStandin("aws", instance_role.ROLE_NAME, iid, "us-east-1",
                         _issuer(aws, iid)) as md:
        commands = {k: [*v, "--metadata", md.url, "--endpoint", moto_server]
                    for k, v in instance_role.agent_commands("aws").items()}
        rules = parse_rules({"budget": {"cap": 1.0, "price_per_hour": 3600.0,
                                        "since": clock.time() - 10, "action": "stop"},
                             "commands": commands})
        agent = tmp_path / "agent"
        guard = Guard(rules, EventLog(agent, clock), runs_dir=tmp_path / "runs",
                      log_dir=agent, clock=clock, boot="boot-1")
        events = guard.tick()
    kinds = [e["kind"] for e in events]
    assert "rule-fired" in kinds
    ran = [e for e in read_events(agent) if e["kind"] == "action-run"]
    log_text = (agent / "actions.log").read_text()
    assert ran and ran[0]["rc"] == 0, log_text
    assert f"EC2 StopInstances {iid}: accepted" in log_text
    assert "SecretAccessKey" not in log_text
    assert _state(aws, iid) in ("stopping", "stopped")


def test_launch_gives_the_role_when_allowed_and_none_when_not(
        aws: MotoAws, memory_keyring: Any) -> None:  # noqa: F811
    """The launcher, through moto: LaunchPlan.instance_role on (the default) associates the
    role and records the enforcer; off, the machine has none and the ledger says why."""
    import asyncio

    from gpudesk.services.cloud import credentials
    from gpudesk.services.cloud.launcher import Launcher
    from gpudesk.services.cloud.launcher import LaunchPlan

    credentials.save_credentials(aws.credentials)
    aws.publish_dlami("us-east-1")
    with Ledger() as ledger:
        machines = []
        for allowed in (True, False):
            plan = LaunchPlan(provider="aws", instance_type="g5.xlarge", region="us-east-1",
                              allow_from="203.0.113.7/32", price_per_hour=1.006,
                              wait_ssh=False, budget=20.0, instance_role=allowed)
            machines.append(asyncio.run(Launcher(ledger, poll_s=0.01).launch(plan)).machine)
        on, off = (ledger.get(m.id) for m in machines)
        assert on is not None and off is not None
        assert "instance-role" in on.enforced_by.split(",")
        assert "instance-role" not in off.enforced_by.split(",")
        assert instance_role.rules_commands(on)["stop"][0] == cloud_stop.COMMAND
        assert instance_role.rules_commands(off) == {}
        assert [e.step for e in ledger.events(off.id)].count("instance-role-off") == 1
        assoc = aws.client("ec2").describe_iam_instance_profile_associations()[
            "IamInstanceProfileAssociations"]
        assert [a["InstanceId"] for a in assoc] == [on.cloud_id]


def test_words_rules_and_budget_changes_keep_the_role() -> None:
    from gpudesk.services.cloud import guard
    from gpudesk.services.core.settings import Settings
    from gpudesk.services.remote.machine_rules import agent_rules

    with Ledger() as ledger:
        m = ledger.add(Machine(id="m-1", provider="aws", region="us-east-1", cloud_id="i-1",
                               price_per_hour=1.0, budget=10.0, on_budget="stop",
                               enforced_by="agent,shutdown-behavior,instance-role"))
        words = guard.english(m)
        assert any("asks AWS itself to stop the machine" in w and "no keys" in w
                   for w in words), words
        rules = agent_rules(m, Settings(), ledger).to_json()
        assert rules["commands"]["stop"][:2] == [cloud_stop.COMMAND, "--provider"]
        g = guard.apply(ledger, m, None, 20.0, "terminate", 1_780_000_000.0)
        assert "instance-role" in g.enforced_by
        after = ledger.get("m-1")
        assert after is not None and "instance-role" in after.enforced_by.split(",")
        bare = ledger.add(Machine(id="m-2", provider="aws", region="us-east-1", cloud_id="i-2",
                                  price_per_hour=1.0, budget=10.0, on_budget="stop",
                                  enforced_by="agent,shutdown-behavior"))
        assert not any("itself to" in w for w in guard.english(bare))
        assert "commands" not in agent_rules(bare, Settings(), ledger).to_json()
