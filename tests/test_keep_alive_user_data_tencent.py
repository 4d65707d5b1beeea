"""A kept-alive group's next member boots from new user data (Tencent AS stand-in, the real
SDK's CommonClient with TC3 signatures): ModifyLaunchConfigurationAttributes changes the
group's configuration, a reclaim starts a member made from the new data, the member already
running keeps its own, and the documented limit (base64, 16 KB) is held on both sides."""

from __future__ import annotations

import base64
import random

import pytest
from tencent_as_standin import TencentAsStandin
from tencent_as_standin import as_client
from tencentcloud.common.exception.tencent_cloud_sdk_exception import TencentCloudSDKException
from test_keep_alive_tencent import REGION  # noqa: F401 - fixtures
from test_keep_alive_tencent import USER_DATA  # noqa: F401 - fixtures
from test_keep_alive_tencent import _request  # noqa: F401 - fixtures
from test_keep_alive_tencent import as_server  # noqa: F401 - fixtures
from test_keep_alive_tencent import cloud  # noqa: F401 - fixtures
from test_keep_alive_tencent import provider  # noqa: F401 - fixtures
from test_keep_alive_tencent import sleeps  # noqa: F401 - fixtures

from gpudesk.services.cloud.providers.base import ProviderError
from gpudesk.services.cloud.providers.tencent import TencentProvider
from gpudesk.services.cloud.providers.user_data import decode_base64
from gpudesk.services.cloud.providers.user_data import encode_base64

NEW = "#cloud-config\nruncmd:\n  - [echo, 'resume run r-7 from cos://b/runs/r-7/']\n"


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _sent(text: str) -> str:
    """What gpudesk sends AS as UserData: base64 of the gzip (providers/user_data.py)."""
    return encode_base64("tencent", text)


# gzip gains little on it: 12,300 random bytes as text are some 16,600 once sent
INCOMPRESSIBLE = base64.b64encode(random.Random(29).randbytes(12_300)).decode()


def test_after_set_user_data_a_replacement_boots_from_the_new_data(
        provider: TencentProvider, cloud: TencentAsStandin) -> None:  # noqa: F811
    state = provider.create_group(_request(provider))
    (first,) = state.members
    assert cloud.state.instances[first.cloud_id]["_user_data"] == _sent(USER_DATA)

    config_id = provider.set_user_data(REGION, state.group_id, NEW)

    (config,) = cloud.configs.values()
    assert config["LaunchConfigurationId"] == config_id
    assert config["UserData"] == _sent(NEW)
    assert cloud.state.instances[first.cloud_id]["_user_data"] == _sent(USER_DATA)
    cloud.reclaim(first.cloud_id)
    (second,) = cloud.tick()
    assert second != first.cloud_id
    assert decode_base64(cloud.state.instances[second]["_user_data"]) == NEW


def test_user_data_over_16_kb_is_refused_by_both_sides(
        provider: TencentProvider, cloud: TencentAsStandin) -> None:  # noqa: F811
    state = provider.create_group(_request(provider))
    calls = len(cloud.requests)
    with pytest.raises(ProviderError) as info:
        provider.set_user_data(REGION, state.group_id, INCOMPRESSIBLE)
    assert info.value.kind == "invalid" and "16384" in info.value.message()
    assert len(cloud.requests) == calls  # refused before any call
    (config,) = cloud.configs.values()
    client = as_client(cloud, REGION)
    for value, code in ((_b64("x" * 12_300), "InvalidParameterValue.UserDataSizeExceeded"),
                        ("not base64!", "InvalidParameterValue.UserDataFormatError")):
        with pytest.raises(TencentCloudSDKException) as refused:
            client.call_json("ModifyLaunchConfigurationAttributes", {
                "LaunchConfigurationId": config["LaunchConfigurationId"], "UserData": value})
        assert refused.value.code == code
    assert config["UserData"] == _sent(USER_DATA)
