"""Issue 29: the first-boot guard stops the bill through the machine's role, and its user data
fits each cloud's limit as that cloud counts it, with 2 KB to spare.

The user data (``first_boot.user_data``) carries the boot guard and ``cloud_stop.py`` cut to
the machine's own cloud; it is sent gzip on AWS (EC2 counts 16 KB of the raw bytes) and as
base64 of the gzip on Tencent Cloud (CVM and AS count 16 KB of the base64), as text on
Alibaba Cloud (32 KB raw) (``providers/user_data.py``). Measured here on the largest
realistic user data: a budget, an idle rule, the spot watcher, the role's stop and terminate
commands with the region, and the longest login user (or root); and a keep-alive group's.

Then the whole path on each cloud, every part real: a machine launched through gpudesk's
provider with that user data (moto's EC2, the CVM and ECS stand-ins); the user data read
back from the cloud and unpacked as cloud-init does; its script run with the service
manager and folders replaced (``GPUDESK_BOOT_*``, as tests/test_first_boot.py); the boot
guard the unit starts crossing its budget and running the rules' ``gpudesk-cloud-stop``,
which is the bundled ``cloud_stop.py`` run by the guard's python; the role's keys from the
metadata stand-in; and the cloud stopping the machine in its stop-charging mode.
"""
# ruff: noqa: F811 - fixtures imported from fixtures_* arrive as parameters

from __future__ import annotations

import base64
import getpass
import json
import os
import random
import signal
import subprocess
from collections.abc import Callable
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from aliyun_standin import AliyunStandin
from aliyun_standin import sdk_client as ecs_client
from fixtures_agent import pid_gone
from fixtures_agent import wait_for
from fixtures_aliyun import aliyun  # noqa: F401
from fixtures_aliyun import aliyun_creds  # noqa: F401
from fixtures_aliyun import aliyun_server  # noqa: F401
from fixtures_aws import MotoAws  # noqa: F401
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from fixtures_telemetry import PYTHON
from fixtures_tencent import tencent  # noqa: F401
from fixtures_tencent import tencent_creds  # noqa: F401
from fixtures_tencent import tencent_server  # noqa: F401
from metadata_standin import MetadataStandin
from tencent_standin import TencentStandin
from tencent_standin import sdk_client as cvm_client
from test_first_boot import FAKE_SYSTEMCTL
from test_instance_role import _issuer
from test_role_stop_cn import TMP_ID
from test_role_stop_cn import TMP_SECRET
from test_role_stop_cn import _aliyun_keys
from test_role_stop_cn import _tencent_keys

from gpudesk.services.cloud import instance_role
from gpudesk.services.cloud.providers import user_data as sent
from gpudesk.services.cloud.providers.aliyun import AliyunProvider
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.providers.base import LaunchRequest
from gpudesk.services.cloud.providers.tencent import TencentProvider
from gpudesk.services.remote import first_boot
from gpudesk.services.remote.agent_deploy import AgentRules
from gpudesk.services.remote.agent_deploy import BudgetStop
from gpudesk.services.remote.agent_deploy import IdleStop

CLOUDS = ("aws", "tencent", "aliyun")
SPARE = 2048  # the issue's margin, on each cloud's own count
LIMITS = {"aws": 16 * 1024, "tencent": 16 * 1024, "aliyun": 32 * 1024}
# the longest names a launch writes into the user data
LONG_REGION = {"aws": "ap-southeast-5", "tencent": "ap-shanghai-fsi",
               "aliyun": "cn-wulanchabu"}
LONG_ROLE = "gpudesk-self-stop-m-0123456789abcdef0123456789abcdef0123456789ab"  # 64, IAM's most
LONG_USER = "researcher-with-a-long-name-0123"  # 32: useradd's longest
ALIYUN_KEY_ID = "STS.roleStopKey0001"  # _aliyun_keys()'s
WAIT_S = 60.0


def _largest_rules(cloud: str) -> AgentRules:
    """A launch's rules with everything in them, every number at full float precision."""
    return AgentRules(
        idle=IdleStop(minutes=30.0, below_pct=5.0, action="stop"),
        budget=BudgetStop(cap=123.45678901234567, price_per_hour=8.123456789012345,
                          since=1_800_000_000.123456, spent_before=12.345678901234567,
                          action="stop", currency="USD"),
        spot_provider=cloud,
        commands=instance_role.agent_commands(cloud, LONG_ROLE, region=LONG_REGION[cloud]))


def _largest_keep_alive(cloud: str) -> first_boot.KeepAlive:
    return first_boot.KeepAlive(
        cloud, LONG_REGION[cloud], "gpudesk-runs-123456789012-" + LONG_REGION[cloud],
        "lab/team/runs/my-long-project-name-20261205-101010-abcdef/", LONG_ROLE, "f" * 64)


def _counted(cloud: str, text: str) -> int:
    """What ``cloud`` counts of the bytes it is sent, computed here on its own."""
    data = sent.encode(cloud, text)
    return len(base64.b64encode(data)) if cloud == "tencent" else len(data)


# --------------------------------------------------------------------------- the sizes

@pytest.mark.parametrize("user", [LONG_USER, "root"])
@pytest.mark.parametrize("cloud", CLOUDS)
def test_the_largest_user_data_has_2_kb_to_spare_as_each_cloud_counts_it(
        cloud: str, user: str) -> None:
    text = first_boot.user_data(_largest_rules(cloud), first_boot.new_host_key(), user=user,
                                cloud=cloud)
    size, limit = first_boot.user_data_size(cloud, text)
    assert (size, limit) == (_counted(cloud, text), LIMITS[cloud])
    assert limit - size >= SPARE, f"{cloud}: {size} of {limit}, {limit - size} to spare"
    assert sent.decode(sent.encode(cloud, text)) == text  # what cloud-init reads
    if cloud == "aliyun":  # ECS's SDK says 32 KB of the base64: that holds too
        assert len(sent.encode_base64(cloud, text)) <= limit - SPARE
    # the guard in it has this cloud's stop alone
    config = yaml.safe_load(text)
    script = config["write_files"][0]["content"]
    blob = script.split("echo '", 1)[1].split("'", 1)[0]
    stop = first_boot.bundle_files(base64.b64decode(blob))["cloud_stop.py"]
    assert f"PROVIDERS = ({cloud!r},)" in stop


@pytest.mark.parametrize("cloud", CLOUDS)
def test_a_keep_alive_groups_user_data_has_2_kb_to_spare(cloud: str) -> None:
    text = first_boot.user_data(_largest_rules(cloud), first_boot.new_host_key(),
                                user=LONG_USER, keep_alive=_largest_keep_alive(cloud))
    size, limit = first_boot.user_data_size(cloud, text)
    assert (size, limit) == (_counted(cloud, text), LIMITS[cloud])
    assert limit - size >= SPARE, f"{cloud}: {size} of {limit}"


def test_over_the_limit_as_the_cloud_counts_it_is_refused_with_the_size() -> None:
    rules = _largest_rules("tencent")
    noise = base64.b64encode(random.Random(29).randbytes(3000)).decode()  # gzip cannot shrink
    rules.commands["warn"] = ("true", noise)
    with pytest.raises(first_boot.FirstBootError) as info:
        first_boot.user_data(rules, first_boot.new_host_key(), cloud="tencent")
    assert "clouds take at most 16384" in info.value.message()


def test_the_bundle_is_one_clouds_stop_the_same_every_time() -> None:
    signing = {"aws": "def aws_sigv4(", "tencent": "def tc3_headers(",
               "aliyun": "def acs3_headers("}
    for cloud in CLOUDS:
        bundle = first_boot.boot_bundle(cloud)
        assert bundle == first_boot.boot_bundle(cloud)  # deterministic: templates compare
        stop = first_boot.bundle_files(bundle)["cloud_stop.py"]
        assert [c for c, sig in signing.items() if sig in stop] == [cloud]
        assert "def expand(" in stop and "def main(" in stop
    every = first_boot.bundle_files(first_boot.boot_bundle())["cloud_stop.py"]
    assert all(sig in every for sig in signing.values())  # no cloud named: every cloud's
    assert sent.encode("tencent", "x") == sent.encode("tencent", "x")  # gzip without a time


# --------------------------------------------------------------------------- the clouds

@dataclass
class Cloud:
    """One cloud with a machine on it launched by gpudesk's provider with ``text``."""

    name: str
    region: str
    cloud_id: str
    endpoint: str  # the cloud's API, as the role's command names it
    user_data: Callable[[], str]  # what the cloud holds, base64, as it answers
    stopped: Callable[[], bool]  # stopped, its compute no longer billing
    issue: Callable[[], dict[str, str]]  # the role's keys, as the metadata hands them out


def _aws(aws: MotoAws, moto_server: str, text: str) -> Cloud:
    region = "us-east-1"
    aws.publish_dlami(region)
    provider = aws.provider()
    group = provider.ensure_security_group(region, "203.0.113.7/32")
    made = provider.run_instance(LaunchRequest("m-size00001", region, "g5.xlarge",
                                               security_group=group, user_data=text))
    provider.describe(region, [made.cloud_id])  # pending → running
    ec2 = aws.client("ec2", region)

    def state() -> str:
        found = ec2.describe_instances(InstanceIds=[made.cloud_id])
        return str(found["Reservations"][0]["Instances"][0]["State"]["Name"])

    return Cloud("aws", region, made.cloud_id, moto_server,
                 lambda: str(ec2.describe_instance_attribute(
                     InstanceId=made.cloud_id, Attribute="userData")["UserData"]["Value"]),
                 lambda: state() == "stopped",  # EC2 bills no compute for a stopped machine
                 _issuer(aws, made.cloud_id))


def _tencent(tencent: TencentStandin, creds: Credentials, text: str) -> Cloud:
    region = "ap-guangzhou"
    provider = TencentProvider(creds, endpoint=tencent.endpoint, protocol="http")
    try:
        group = provider.ensure_security_group(region, "203.0.113.7")
        made = provider.run_instance(LaunchRequest(
            "m-size00002", region, "GN7.2XLARGE32", zone="ap-guangzhou-3",
            security_group=group, user_data=text))
        provider.describe(region, [made.cloud_id])  # PENDING → RUNNING
    finally:
        provider.close()
    tencent.add_secret(TMP_ID, TMP_SECRET)

    def stopped() -> bool:
        answer = cvm_client(tencent).call_json("DescribeInstances",
                                                {"InstanceIds": [made.cloud_id]})
        found = answer["Response"]["InstanceSet"][0]
        return (found["InstanceState"], found["StopChargingMode"]) == ("STOPPED",
                                                                       "STOP_CHARGING")

    return Cloud("tencent", region, made.cloud_id, f"http://{tencent.endpoint}/",
                 lambda: str(tencent.params("RunInstances")[-1]["UserData"]), stopped,
                 _tencent_keys)


def _aliyun(aliyun: AliyunStandin, creds: Credentials, text: str) -> Cloud:
    region = "cn-hangzhou"
    provider = AliyunProvider(creds, endpoint=aliyun.endpoint, protocol="http",
                              sleep=lambda _s: None)
    try:
        group = provider.ensure_security_group(region, "203.0.113.7/32")
        made = provider.run_instance(LaunchRequest(
            "m-size00003", region, "ecs.gn7i-c8g1.2xlarge", zone="cn-hangzhou-h",
            security_group=group, user_data=text))
        wait_for(lambda: provider.describe(region, [made.cloud_id])[0].state == "running",
                 WAIT_S, "the machine to run")
    finally:
        provider.close()
    aliyun.add_secret(ALIYUN_KEY_ID, TMP_SECRET)

    def stopped() -> bool:
        from alibabacloud_ecs20140526 import models

        ecs_client(aliyun).describe_instances(models.DescribeInstancesRequest(
            region_id=region, instance_ids=json.dumps([made.cloud_id])))  # a step on
        raw = aliyun.state.instances[made.cloud_id]
        return (raw["Status"], raw["StoppedMode"]) == ("Stopped", "StopCharging")

    return Cloud("aliyun", region, made.cloud_id, f"http://{aliyun.endpoint}/",
                 lambda: str(aliyun.params("RunInstances")[-1]["UserData"]), stopped,
                 _aliyun_keys)


@dataclass
class Side:
    """The parametrized cloud before any machine: its name, its API's address and how
    gpudesk's provider launches a machine there carrying a user data."""

    name: str
    endpoint: str
    launch: Callable[[str], Cloud]


@pytest.fixture(params=CLOUDS)
def side(request: pytest.FixtureRequest) -> Side:
    name = str(request.param)
    if name == "aws":
        moto: MotoAws = request.getfixturevalue("aws")
        server: str = request.getfixturevalue("moto_server")
        return Side(name, server, lambda text: _aws(moto, server, text))
    if name == "tencent":
        cvm: TencentStandin = request.getfixturevalue("tencent")
        creds: Credentials = request.getfixturevalue("tencent_creds")
        return Side(name, f"http://{cvm.endpoint}/", lambda text: _tencent(cvm, creds, text))
    ecs: AliyunStandin = request.getfixturevalue("aliyun")
    ali: Credentials = request.getfixturevalue("aliyun_creds")
    return Side(name, f"http://{ecs.endpoint}/", lambda text: _aliyun(ecs, ali, text))


def test_what_the_provider_sends_is_what_is_counted_and_the_cloud_takes_it(
        side: Side) -> None:
    cloud = side.name
    text = first_boot.user_data(_largest_rules(cloud), first_boot.new_host_key(),
                                user=LONG_USER, cloud=cloud)
    machine = side.launch(text)  # the stand-ins hold their clouds' limits on what is sent
    held = machine.user_data()
    raw = base64.b64decode(held)
    counted = len(held) if cloud == "tencent" else len(raw)
    assert counted == first_boot.user_data_size(cloud, text)[0] <= LIMITS[cloud] - SPARE
    assert raw[:2] == (b"\x1f\x8b" if cloud in ("aws", "tencent") else b"#c")  # gzip or not
    assert sent.decode_base64(held) == text  # what cloud-init reads is what gpudesk wrote


def test_cvm_refuses_more_than_16_kb_of_base64_user_data(tencent: TencentStandin) -> None:
    """The CVM stand-in holds RunInstances to the limit on what is sent, as AS does."""
    from tencentcloud.common.exception.tencent_cloud_sdk_exception import TencentCloudSDKException

    launch = {"Placement": {"Zone": "ap-guangzhou-3"}, "InstanceType": "GN7.2XLARGE32",
              "ImageId": "img-gpu22cu12", "InstanceChargeType": "POSTPAID_BY_HOUR"}
    for value, code in (("A" * (16 * 1024 + 4), "InvalidParameterValue.UserDataSizeExceeded"),
                        ("not base64!", "InvalidParameterValue.UserDataFormatError")):
        with pytest.raises(TencentCloudSDKException) as refused:
            cvm_client(tencent).call_json("RunInstances", {**launch, "UserData": value})
        assert refused.value.code == code
    made = cvm_client(tencent).call_json("RunInstances", {**launch, "UserData": "A" * 16384})
    assert made["Response"]["InstanceIdSet"]


# --------------------------------------------------------------------------- the stop

def _run_bundled_stop(folder: Path, cloud: str, argv: list[str]) -> subprocess.CompletedProcess:
    """The bundle's files as the first-boot script unpacks them; its cloud_stop.py run."""
    agent = folder / "agent"
    agent.mkdir(parents=True)
    for name, text in first_boot.bundle_files(first_boot.boot_bundle(cloud)).items():
        (agent / name).write_text(text)
    return subprocess.run([PYTHON, str(agent / "cloud_stop.py"), *argv], env=_env(folder),
                          capture_output=True, text=True, timeout=WAIT_S, check=False)


def _env(folder: Path) -> dict[str, str]:
    """No cloud keys, no proxy, and a ``sudo`` that only says it was asked (a refused call on
    AWS powers off from inside: never this machine's)."""
    fake = folder / "bin"
    fake.mkdir(parents=True, exist_ok=True)
    (fake / "sudo").write_text(f'#!/bin/sh\necho "$@" >> "{fake}/sudo.log"\nexit 1\n')
    (fake / "sudo").chmod(0o755)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AWS_", "TENCENTCLOUD_", "ALIBABA_CLOUD_"))
           and k.lower() not in ("http_proxy", "https_proxy", "all_proxy")}
    env["PATH"] = f"{fake}:{env.get('PATH', '/usr/bin:/bin')}"
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    return env


def test_the_bundled_cloud_stop_stops_its_machine_with_what_the_metadata_says(
        side: Side, tmp_path: Path) -> None:
    """The pruned module alone, as the rules run it but without --region or --instance:
    both come from the metadata service."""
    cloud = side.name
    machine = side.launch("#cloud-config\n")
    with MetadataStandin(cloud, instance_role.ROLE_NAME, machine.cloud_id, machine.region,
                         machine.issue) as md:
        done = _run_bundled_stop(tmp_path, cloud, [
            "--provider", cloud, "--role", instance_role.ROLE_NAME, "--action", "stop",
            "--metadata", md.url, "--endpoint", machine.endpoint])
        assert done.returncode == 0, done.stderr
        assert f"StopInstances {machine.cloud_id}" in done.stdout and "accepted" in done.stdout
        assert "GET /latest/meta-data/instance-id" in md.hits
        other = next(c for c in CLOUDS if c != cloud)  # this cloud's module knows no other
        refused = subprocess.run([PYTHON, str(tmp_path / "agent" / "cloud_stop.py"),
                                  "--provider", other, "--role", "r", "--action", "stop"],
                                 capture_output=True, text=True, timeout=WAIT_S, check=False)
        assert refused.returncode == 2 and "invalid choice" in refused.stderr
    wait_for(machine.stopped, WAIT_S, "the cloud to stop the machine")


@dataclass
class Booted:
    home: Path
    fake: Path

    @property
    def data(self) -> Path:
        return self.home / "gpudesk" / "agent" / "data"

    def events(self) -> list[dict[str, Any]]:
        try:
            text = (self.data / "events.jsonl").read_text()
        except OSError:
            return []
        return [json.loads(line) for line in text.splitlines(keepends=True)
                if line.endswith("\n")]  # whole lines: the guard may be writing


@pytest.fixture
def booted(tmp_path: Path) -> Iterator[Callable[[str], Booted]]:
    """``boot(user_data)``: cloud-init's part on a machine, then the guard stopped after."""
    pids: list[int] = []

    def boot(text: str) -> Booted:
        config = yaml.safe_load(text)  # what cloud-init reads
        (script,) = config["write_files"]
        assert config["runcmd"] == [["bash", script["path"]]]
        machine = Booted(tmp_path / "home", tmp_path / "sysbin")
        units = tmp_path / "units"
        for d in (machine.home, machine.fake, units):
            d.mkdir()
        (machine.fake / "systemctl").write_text(FAKE_SYSTEMCTL.format(python=PYTHON))
        (machine.fake / "systemctl").chmod(0o755)
        env = _env(tmp_path) | {
            "GPUDESK_BOOT_HOME": str(machine.home), "GPUDESK_BOOT_UNIT_DIR": str(units),
            "GPUDESK_BOOT_SYSTEMCTL": str(machine.fake / "systemctl"),
            "GPUDESK_BOOT_PYTHON": PYTHON, "GPUDESK_BOOT_STATE_DIR": str(tmp_path / "state")}
        done = subprocess.run(["bash", "-s"], input=script["content"], env=env,
                              capture_output=True, text=True, timeout=WAIT_S, check=False)
        assert done.returncode == 0, done.stderr
        assert (tmp_path / "state" / "guard-status").read_text() == "installed\n"
        pids.append(int(wait_for(lambda: (machine.fake / "unit.pid").exists() and
                                 (machine.fake / "unit.pid").read_text(), WAIT_S,
                                 "the unit to start")))
        return machine

    yield boot
    for pid in pids:
        if not pid_gone(pid):
            os.kill(pid, signal.SIGTERM)
            wait_for(lambda p=pid: pid_gone(p), WAIT_S, "the guard to stop")


def test_the_first_boot_guard_stops_the_bill_through_the_role_at_the_budget(
        side: Side, booted: Callable[[str], Booted], tmp_path: Path) -> None:
    cloud = side.name
    folder = {"aws": "iam", "tencent": "cam", "aliyun": "ram"}[cloud]
    with MetadataStandin(cloud, instance_role.ROLE_NAME, "", "", lambda: {}) as md:
        # the rules gpudesk writes for a machine with its role (the role's stop), with the
        # machine's network on 127.0.0.1: its metadata, the cloud's endpoint
        region = {"aws": "us-east-1", "tencent": "ap-guangzhou", "aliyun": "cn-hangzhou"}[cloud]
        role = instance_role.agent_commands(cloud, region=region)
        rules = AgentRules(  # spent since 1970 at 3.6/h: over its 1.0 at the first tick
            budget=BudgetStop(cap=1.0, price_per_hour=3.6, since=1.0, action="stop"),
            idle=IdleStop(minutes=30.0, below_pct=5.0, action="stop"),
            commands={a: (*argv, "--metadata", md.url, "--endpoint", side.endpoint)
                      for a, argv in role.items()})
        machine = side.launch(first_boot.user_data(rules, first_boot.new_host_key(),
                                                   user=getpass.getuser(), cloud=cloud))
        md.instance_id, md.region, md.issue = machine.cloud_id, region, machine.issue
        # cloud-init reads the user data the cloud holds (gzip on AWS and Tencent Cloud)
        guard = booted(sent.decode_base64(machine.user_data()))
        wait_for(lambda: any(e["kind"] == "action-run" and e.get("rc") == 0
                             for e in guard.events()), WAIT_S, "the role's stop to succeed")
        assert f"GET /latest/meta-data/{folder}/security-credentials/" \
               f"{instance_role.ROLE_NAME}" in md.hits
    fired = [e for e in guard.events() if e["kind"] == "rule-fired"]
    assert [(e["rule"], e["action"]) for e in fired] == [("budget", "stop")]
    log = (guard.data / "actions.log").read_text()
    assert f"StopInstances {machine.cloud_id}" in log and "accepted" in log
    assert not (tmp_path / "bin" / "sudo.log").exists()  # no power-off from inside
    # the command was the bundled cloud_stop, this cloud's alone, run by the guard's python
    bundled = guard.home / "gpudesk" / "agent" / "current" / "agent" / "cloud_stop.py"
    assert f"PROVIDERS = ({cloud!r},)" in bundled.read_text()
    wait_for(machine.stopped, WAIT_S, "the cloud to stop the machine")
