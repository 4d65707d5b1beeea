"""Issue 30: an Alibaba Cloud region whose public images name no GPU driver is no dead end.

ECS's console installs the driver on a public image itself ("auto-install GPU driver": a
documented user-data script run at first boot). Where no public Ubuntu image names a
driver, the launch takes the newest public Ubuntu image and sends that script next to
gpudesk's first-boot cloud-config (cloud-init multipart user data); a region with a GPU
image sends no such script. A region without any Ubuntu image is refused with its images
listed and the way forward (``--image``, the Launch dialog's Image field).
"""

from __future__ import annotations

import asyncio
import base64
import email
from collections.abc import Callable
from pathlib import Path

import pytest
from aliyun_standin import AliyunStandin
from fixtures_aliyun import aliyun  # noqa: F401
from fixtures_aliyun import aliyun_creds  # noqa: F401
from fixtures_aliyun import aliyun_server  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401

from gpudesk.services.cloud import credentials
from gpudesk.services.cloud.accounts import ALIYUN_ENDPOINT_ENV
from gpudesk.services.cloud.launcher import Launcher
from gpudesk.services.cloud.launcher import LaunchPlan
from gpudesk.services.cloud.providers import aliyun_gpu_driver
from gpudesk.services.cloud.providers.aliyun import AliyunProvider
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.providers.base import ProviderError
from gpudesk.services.money.ledger import Ledger

REGION = "cn-hangzhou"
A10 = "ecs.gn7i-c8g1.2xlarge"
PLAN = LaunchPlan(provider="aliyun", instance_type=A10, region=REGION,
                  allow_from="203.0.113.7/32", gpu="A10", gpus=1, price_per_hour=2.0,
                  disk_gb=100, wait_ssh=False)
FIRST_BOOT = "#cloud-config\nruncmd:\n  - [sh, -c, 'echo gpudesk guard']\n"


@pytest.fixture
def providers(aliyun: AliyunStandin, aliyun_creds: Credentials, memory_keyring,  # type: ignore[no-untyped-def]  # noqa: F811
              gpudesk_home: Path, monkeypatch: pytest.MonkeyPatch
              ) -> Callable[[str], AliyunProvider]:
    credentials.save_credentials(aliyun_creds)
    monkeypatch.setenv(ALIYUN_ENDPOINT_ENV, f"http://{aliyun.endpoint}")
    provider = AliyunProvider(aliyun_creds, endpoint=aliyun.endpoint, protocol="http",
                              sleep=lambda _s: None)
    return lambda _name: provider


def _launch(providers: Callable[[str], AliyunProvider]) -> str:
    with Ledger() as ledger:
        launcher = Launcher(ledger, providers, poll_s=0.0,  # type: ignore[arg-type]
                            first_boot=lambda _m: (FIRST_BOOT, ""))
        return asyncio.run(launcher.launch(PLAN)).machine.cloud_id


def _user_data(cloud: AliyunStandin) -> tuple[str, str]:
    (sent,) = cloud.params("RunInstances")
    return sent["ImageId"], base64.b64decode(sent["UserData"]).decode()


def test_a_region_without_gpu_images_installs_the_driver_the_consoles_way(
        aliyun: AliyunStandin, providers: Callable[[str], AliyunProvider]) -> None:  # noqa: F811
    aliyun.driverless_regions[REGION] = ""
    cloud_id = _launch(providers)
    assert cloud_id.startswith("i-")
    image, text = _user_data(aliyun)
    assert image == "ubuntu_22_04_x64_20G_alibase_20250101.vhd"  # the newest public Ubuntu
    parts = {p.get_content_type(): p.get_payload()
             for p in email.message_from_string(text).walk() if not p.is_multipart()}
    assert parts["text/cloud-config"].strip() == FIRST_BOOT.strip()  # the guard, untouched
    script = parts["text/x-shellscript"]
    assert 'auto_install_script="auto_install_v4.0.sh"' in script
    assert '"/opsx/ecs/linux/binary/script/${auto_install_script}"' in script
    assert "100.100.100.200/latest/meta-data/source-address" in script
    assert f'DRIVER_VERSION="{aliyun_gpu_driver.DRIVER_VERSION}"' in script
    assert len(text.encode()) <= 32 * 1024  # ECS's user data limit
    assert aliyun.limit_refusals == [] and aliyun.internal_errors == []


def test_a_region_with_a_gpu_image_sends_no_driver_script(
        aliyun: AliyunStandin, providers: Callable[[str], AliyunProvider]) -> None:  # noqa: F811
    _launch(providers)
    image, text = _user_data(aliyun)
    assert image == "ubuntu_22_04_gpu_cuda12_20240510.vhd"
    assert text == FIRST_BOOT


def test_a_region_without_ubuntu_lists_its_images_and_the_way_forward(
        aliyun: AliyunStandin, providers: Callable[[str], AliyunProvider]) -> None:  # noqa: F811
    aliyun.driverless_regions[REGION] = "no_ubuntu"
    with pytest.raises(ProviderError) as caught:
        providers("aliyun").find_image(REGION, A10)
    said = caught.value.message()
    assert "--image" in said and "Image field" in said and REGION in said
    assert "aliyun_3_x64_gpu_20250201.vhd (Alibaba Cloud Linux 3 GPU)" in said
    assert aliyun.calls["RunInstances"] == 0
