"""A machine the reconciler adopts (found in the cloud, not in the ledger) gets the login
user of its image, read as the launcher reads it: root on Alibaba Cloud and on Tencent's
non-Ubuntu images, ubuntu on Ubuntu ones; where the image cannot be read the user is left
unknown, said in the ledger and the report, never guessed (issue 21, item 10).

Against the Aliyun and Tencent stand-ins and moto, with the real SDKs.
"""
# ruff: noqa: F811 - fixtures imported from fixtures_* arrive as parameters

from __future__ import annotations

from datetime import UTC
from datetime import datetime
from typing import Any

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

from gpudesk.services.cloud import reconcile
from gpudesk.services.cloud.providers.aliyun import AliyunProvider
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.providers.base import LaunchRequest
from gpudesk.services.cloud.providers.tencent import TencentProvider
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.money.ledger import Machine

ADDRESS = "203.0.113.7"


def _adopt(ledger: Ledger, name: str, provider: Any, region: str
           ) -> tuple[reconcile.ReconcileReport, dict[str, Machine]]:
    report = reconcile.ReconcileReport()
    reconcile.reconcile_provider(ledger, name, provider, [region], report)  # type: ignore[arg-type]
    found = {m.cloud_id: m for m in (ledger.get(i) for i in report.adopted) if m is not None}
    return report, found


def _login_events(ledger: Ledger, ledger_id: str) -> list[str]:
    return [e.detail for e in ledger.events(ledger_id) if e.step == "login-user"]


def test_an_adopted_aliyun_machine_logs_in_as_root(
        aliyun: AliyunStandin, aliyun_creds: Credentials) -> None:
    p = AliyunProvider(aliyun_creds, endpoint=aliyun.endpoint, protocol="http",
                       sleep=lambda _s: None)
    try:
        # an Ubuntu image: still root on Alibaba Cloud
        made = p.run_instance(LaunchRequest("m-adopt0001", "cn-hangzhou",
                                            "ecs.gn7i-c8g1.2xlarge", zone="cn-hangzhou-i",
                                            allow_from=ADDRESS))
        with Ledger() as ledger:
            report, found = _adopt(ledger, "aliyun", p, "cn-hangzhou")
            m = found[made.cloud_id]
            assert m.ssh_user == "root" and m.origin == "adopted"
            assert _login_events(ledger, m.id) == ["root"]
            assert report.login_unknown == {}
    finally:
        p.close()


def test_adopted_tencent_machines_get_their_images_user(
        tencent: TencentStandin, tencent_creds: Credentials) -> None:
    p = TencentProvider(tencent_creds, endpoint=tencent.endpoint, protocol="http")
    try:
        group = p.ensure_security_group("ap-guangzhou", ADDRESS)
        tos = p.run_instance(LaunchRequest("m-adopt0002", "ap-guangzhou", "GN7.2XLARGE32",
                                           zone="ap-guangzhou-3", security_group=group,
                                           image_id="img-tos31gpu"))
        ubuntu = p.run_instance(LaunchRequest("m-adopt0003", "ap-guangzhou", "GN7.2XLARGE32",
                                              zone="ap-guangzhou-3", security_group=group,
                                              image_id="img-gpu22cu12"))
        # an image CVM no longer has (a private image deleted since): not known
        gone = p.run_instance(LaunchRequest("m-adopt0004", "ap-guangzhou", "GN7.2XLARGE32",
                                            zone="ap-guangzhou-3", security_group=group,
                                            image_id="img-mygpu001"))
        tencent.images = [i for i in tencent.images if i["ImageId"] != "img-mygpu001"]
        with Ledger() as ledger:
            report, found = _adopt(ledger, "tencent", p, "ap-guangzhou")
            assert found[tos.cloud_id].ssh_user == "root"  # TencentOS
            assert found[ubuntu.cloud_id].ssh_user == "ubuntu"
            lost = found[gone.cloud_id]
            assert lost.ssh_user == ""
            assert list(report.login_unknown) == [lost.id]
            assert "img-mygpu001" in report.login_unknown[lost.id]
            (said,) = _login_events(ledger, lost.id)
            assert said.startswith("unknown: ") and "img-mygpu001" in said
    finally:
        p.close()


def test_an_adopted_aws_machine_whose_image_is_gone_is_not_guessed(
        aws: MotoAws, memory_keyring: Any) -> None:
    aws.publish_dlami("us-east-1")
    mine = "ami-0d1a00000000000aa"
    aws.publish_image("us-east-1", mine, "my training image (Ubuntu 22.04)",
                      datetime(2026, 2, 1, tzinfo=UTC))
    provider = aws.provider()
    group = provider.ensure_security_group("us-east-1", f"{ADDRESS}/32")
    kept = provider.run_instance(LaunchRequest("m-adopt0005", "us-east-1", "g5.xlarge",
                                               security_group=group))
    later = provider.run_instance(LaunchRequest("m-adopt0006", "us-east-1", "g5.xlarge",
                                                security_group=group, image_id=mine))
    aws.client("ec2").deregister_image(ImageId=mine)  # deleted since: no name to read
    with Ledger() as ledger:
        report, found = _adopt(ledger, "aws", provider, "us-east-1")
        assert found[kept.cloud_id].ssh_user == "ubuntu"  # the DLAMI says Ubuntu
        m = found[later.cloud_id]
        assert m.ssh_user == ""
        assert list(report.login_unknown) == [m.id] and mine in report.login_unknown[m.id]
        assert _login_events(ledger, m.id)[0].startswith("unknown: ")
