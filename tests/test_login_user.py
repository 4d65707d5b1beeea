"""Who logs in is the image's business: root on Alibaba Cloud, ubuntu on Ubuntu images.

The launcher asks the provider for the login user of the image it will launch, stores it in
the ledger's machine profile (``ssh_user``) before the first-boot script is made, and the
script installs the guard for that user. Against the Alibaba Cloud and Tencent Cloud
stand-ins and moto, with the real SDKs.
"""
# ruff: noqa: F811 - fixtures imported from fixtures_* arrive as parameters

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC
from datetime import datetime
from typing import Any

import pytest
import yaml
from aliyun_standin import AliyunStandin
from fixtures_aliyun import aliyun  # noqa: F401
from fixtures_aliyun import aliyun_creds  # noqa: F401
from fixtures_aliyun import aliyun_server  # noqa: F401
from fixtures_aws import MotoAws  # noqa: F401
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401
from fixtures_tencent import tencent  # noqa: F401
from fixtures_tencent import tencent_creds  # noqa: F401
from fixtures_tencent import tencent_server  # noqa: F401
from tencent_standin import TencentStandin

from gpudesk.services.cloud import credentials
from gpudesk.services.cloud.launcher import Launcher
from gpudesk.services.cloud.launcher import LaunchPlan
from gpudesk.services.cloud.providers.aliyun import AliyunProvider
from gpudesk.services.cloud.providers.aws import image_login_user
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.providers.tencent import TencentProvider
from gpudesk.services.cloud.providers.user_data import decode_base64
from gpudesk.services.core.settings import Settings
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine
from gpudesk.services.remote import first_boot
from gpudesk.services.remote.host_key_rotation import machine_target

ADDRESS = "203.0.113.7/32"


def _script_user(user_data_b64: str) -> str:
    """The user the first-boot script in the user data installs the guard for."""
    config = yaml.safe_load(decode_base64(user_data_b64))
    text = config["write_files"][0]["content"]
    line = next(ln for ln in text.splitlines() if ln.startswith('U="${GPUDESK_BOOT_USER:-'))
    return line[len('U="${GPUDESK_BOOT_USER:-'):-len('}"')]


def _launch(ledger: Ledger, providers: Callable[[str], Any], plan: LaunchPlan) -> Machine:
    launcher = Launcher(ledger, providers, poll_s=0.0,  # type: ignore[arg-type]
                        first_boot=first_boot.for_launch(lambda: Settings(), ledger))
    return asyncio.run(launcher.launch(plan)).machine


def test_an_aliyun_launch_logs_in_as_root_and_installs_the_guard_for_root(
        aliyun: AliyunStandin, aliyun_creds: Credentials, memory_keyring: Any) -> None:
    provider = AliyunProvider(aliyun_creds, endpoint=aliyun.endpoint, protocol="http",
                              sleep=lambda _s: None)
    plan = LaunchPlan(provider="aliyun", instance_type="ecs.gn7i-c8g1.2xlarge",
                      region="cn-hangzhou", allow_from=ADDRESS, price_per_hour=2.0,
                      wait_ssh=False)
    with Ledger() as ledger:
        m = _launch(ledger, lambda _n: provider, plan)
        row = ledger.get(m.id)
        assert row is not None
        steps = [(e.step, e.detail) for e in ledger.events(m.id)]
    assert m.ssh_user == row.ssh_user == "root"
    assert ("login-user", "root") in steps
    (sent,) = aliyun.params("RunInstances")
    assert _script_user(sent["UserData"]) == "root"  # the guard's unit runs as root there
    # SSH reads the profile: the first login (and so the host key rotation) goes in as root
    assert machine_target(row).user == "root"


def test_tencent_ubuntu_images_log_in_as_ubuntu_and_others_as_root(
        tencent: TencentStandin, tencent_creds: Credentials, memory_keyring: Any) -> None:
    provider = TencentProvider(tencent_creds, endpoint=tencent.endpoint, protocol="http")
    assert provider.login_user("ap-guangzhou", "") == "ubuntu"  # find_image picks Ubuntu
    assert provider.login_user("ap-guangzhou", "img-gpu22cu12") == "ubuntu"
    assert provider.login_user("ap-guangzhou", "img-tos31gpu") == "root"  # TencentOS
    plan = LaunchPlan(provider="tencent", instance_type="GN7.2XLARGE32", region="ap-guangzhou",
                      zone="ap-guangzhou-3", allow_from=ADDRESS, price_per_hour=1.2,
                      image_id="img-tos31gpu", wait_ssh=False)
    with Ledger() as ledger:
        m = _launch(ledger, lambda _n: provider, plan)
    assert m.ssh_user == "root"
    (sent,) = tencent.params("RunInstances")
    assert sent["ImageId"] == "img-tos31gpu" and _script_user(sent["UserData"]) == "root"


def test_aws_dlami_logs_in_as_ubuntu_and_amazon_linux_as_ec2_user(
        aws: MotoAws, memory_keyring: Any) -> None:
    credentials.save_credentials(aws.credentials)
    aws.publish_dlami("us-east-1")
    al2023 = aws.publish_image("us-east-1", "ami-0a1b2c3d4e5f60718",
                               "Deep Learning OSS Nvidia Driver AMI GPU PyTorch 2.9 "
                               "(Amazon Linux 2023) 20260301", datetime(2026, 3, 1, tzinfo=UTC))
    provider = aws.provider()
    assert provider.login_user("us-east-1", "") == "ubuntu"
    assert provider.login_user("us-east-1", provider.find_image("us-east-1", "g5.xlarge")) \
        == "ubuntu"
    assert provider.login_user("us-east-1", al2023) == "ec2-user"
    assert image_login_user("debian-12-amd64-20260101") == "admin"
    plan = LaunchPlan(provider="aws", instance_type="g5.xlarge", region="us-east-1",
                      allow_from=ADDRESS, price_per_hour=1.006, wait_ssh=False)
    with Ledger() as ledger:
        dlami = _launch(ledger, lambda _n: provider, plan)
        amazon = _launch(ledger, lambda _n: provider,
                         LaunchPlan(**{**plan.__dict__, "image_id": al2023}))
        chosen = _launch(ledger, lambda _n: provider,  # the user said who: that one
                         LaunchPlan(**{**plan.__dict__, "ssh_user": "researcher"}))
    assert (dlami.ssh_user, amazon.ssh_user, chosen.ssh_user) == \
        ("ubuntu", "ec2-user", "researcher")
    ec2 = aws.client("ec2")
    user_data = ec2.describe_instance_attribute(InstanceId=amazon.cloud_id,
                                                Attribute="userData")["UserData"]["Value"]
    assert _script_user(user_data) == "ec2-user"


@pytest.mark.parametrize("provider", ["aliyun"])
def test_no_image_lookup_is_needed_on_aliyun(provider: str, aliyun: AliyunStandin,
                                            aliyun_creds: Credentials) -> None:
    """Alibaba Cloud: root on every public Linux image, asked of nobody."""
    p = AliyunProvider(aliyun_creds, endpoint=aliyun.endpoint, protocol="http")
    assert p.login_user("cn-hangzhou", "aliyun_3_x64_gpu_20250201.vhd") == "root"
    assert p.login_user("cn-hangzhou") == "root"
    assert not aliyun.params("DescribeImages")
