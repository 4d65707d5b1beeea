"""A kept-alive group's next member boots from new user data (Aliyun ESS stand-in, the real
ESS SDK with ACS3 signatures, machines in the ECS stand-in): ModifyScalingConfiguration
changes the group's active configuration, a reclaim starts a member made from the new data,
the member already running keeps its own, and 32 KB of raw data (the documented limit) is
held on both sides."""
# ruff: noqa: F811 - fixtures imported from fixtures_* arrive as parameters

from __future__ import annotations

import base64

import pytest
from aliyun_ess_standin import AliyunEssStandin
from aliyun_ess_standin import ess_sdk_client
from aliyun_standin import ACCESS_KEY_ID
from aliyun_standin import ACCESS_KEY_SECRET
from aliyun_standin import AliyunStandin
from fixtures_aliyun import aliyun  # noqa: F401
from fixtures_aliyun import aliyun_creds  # noqa: F401
from fixtures_aliyun import aliyun_server  # noqa: F401
from test_keep_alive_aliyun import REGION  # noqa: F401
from test_keep_alive_aliyun import USER_DATA  # noqa: F401
from test_keep_alive_aliyun import _request  # noqa: F401
from test_keep_alive_aliyun import ess  # noqa: F401
from test_keep_alive_aliyun import ess_server  # noqa: F401
from test_keep_alive_aliyun import provider  # noqa: F401

from gpudesk.services.cloud.providers import aliyun_parse as ap
from gpudesk.services.cloud.providers.aliyun import AliyunProvider
from gpudesk.services.cloud.providers.base import ProviderError

NEW = "#cloud-config\nruncmd:\n  - [echo, 'resume run r-7 from oss://b/runs/r-7/']\n"


def test_after_set_user_data_a_replacement_boots_from_the_new_data(
        provider: AliyunProvider, ess: AliyunEssStandin, aliyun: AliyunStandin) -> None:
    state = provider.create_group(_request(provider))
    first = state.members[0].cloud_id
    assert aliyun.state.instances[first]["_user_data"] == USER_DATA

    config_id = provider.set_user_data(REGION, state.group_id, NEW)

    (config,) = ess.configs.values()
    assert config["ScalingConfigurationId"] == config_id
    assert base64.b64decode(config["UserData"]).decode() == NEW
    assert aliyun.state.instances[first]["_user_data"] == USER_DATA
    ess.reclaim(first)
    ess.tick()
    after = provider.describe_group(REGION, state.group_id)
    assert after is not None
    (second,) = [m.cloud_id for m in after.members]
    assert second != first and aliyun.state.instances[second]["_user_data"] == NEW


def test_user_data_over_32_kb_is_refused_by_both_sides(
        provider: AliyunProvider, ess: AliyunEssStandin) -> None:
    from alibabacloud_ess20220222 import models

    state = provider.create_group(_request(provider))
    calls = sum(ess.calls.values())
    with pytest.raises(ProviderError) as info:
        provider.set_user_data(REGION, state.group_id, "x" * (32 * 1024 + 1))
    assert info.value.kind == "invalid" and "32768" in info.value.message()
    assert sum(ess.calls.values()) == calls  # refused before any call
    (config,) = ess.configs.values()
    client = ess_sdk_client(ess, ACCESS_KEY_ID, ACCESS_KEY_SECRET)
    for value in (base64.b64encode(b"x" * (32 * 1024 + 1)).decode(), "not base64!"):
        with pytest.raises(Exception) as refused:
            client.modify_scaling_configuration(models.ModifyScalingConfigurationRequest(
                scaling_configuration_id=config["ScalingConfigurationId"], user_data=value))
        assert ap.code_of(refused.value)[0] == "InvalidParameter"
    assert [a for a, _ in ess.limit_refusals][-2:] == ["ModifyScalingConfiguration"] * 2
    assert base64.b64decode(config["UserData"]).decode() == USER_DATA


PLAIN = "ubuntu_22_04_x64_20G_alibase_20250101.vhd"  # the stand-in's public image, no driver


def test_a_group_on_a_plain_image_installs_the_driver_in_every_member(
        provider: AliyunProvider, ess: AliyunEssStandin, aliyun: AliyunStandin) -> None:
    """A replacement made at 3 a.m. from a plain Ubuntu boots with the driver's install,
    before and after its user data is changed (a single machine gets it the same way)."""
    from gpudesk.services.cloud.providers import aliyun_gpu_driver

    state = provider.create_group(_request(provider, image_id=PLAIN))
    first = state.members[0].cloud_id
    booted = aliyun.state.instances[first]["_user_data"]
    assert aliyun_gpu_driver.SCRIPT.strip() in booted and USER_DATA.strip() in booted

    provider.set_user_data(REGION, state.group_id, NEW)
    (config,) = ess.configs.values()
    held = base64.b64decode(config["UserData"]).decode()
    assert aliyun_gpu_driver.SCRIPT.strip() in held and NEW.strip() in held
    ess.reclaim(first)
    ess.tick()
    after = provider.describe_group(REGION, state.group_id)
    assert after is not None
    (second,) = [m.cloud_id for m in after.members]
    assert aliyun.state.instances[second]["_user_data"] == held

    # an image with the driver is left as it is
    other = provider.create_group(_request(provider, ledger_id="m-0123456780"))
    member = other.members[0].cloud_id
    assert aliyun.state.instances[member]["_user_data"] == USER_DATA
