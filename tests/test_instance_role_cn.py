"""Issue 21 on Tencent Cloud and Alibaba Cloud: the agent's cloud_stop, with the role's
temporary credentials from a metadata stand-in, makes calls the CVM and ECS stand-ins
accept by their real signature checks (TC3-HMAC-SHA256 with ``X-TC-Token``;
ACS3-HMAC-SHA256 with ``x-acs-security-token``), stopping in stop-charging mode or
terminating; a wrong secret is refused."""

# ruff: noqa: F811 - pytest fixtures imported from fixtures_* arrive as parameters
from __future__ import annotations

from typing import Any

import pytest
from alibabacloud_ecs20140526 import models
from aliyun_standin import IMAGES
from aliyun_standin import AliyunStandin
from aliyun_standin import sdk_client as ecs_client
from darabonba.runtime import RuntimeOptions
from fixtures_aliyun import aliyun  # noqa: F401
from fixtures_aliyun import aliyun_server  # noqa: F401
from fixtures_tencent import tencent  # noqa: F401
from fixtures_tencent import tencent_server  # noqa: F401
from metadata_standin import MetadataStandin
from tencent_standin import TencentStandin
from tencent_standin import sdk_client as cvm_client

from gpudesk.agent import cloud_stop
from gpudesk.services.cloud import instance_role

ROLE = instance_role.ROLE_NAME
TMP_ID = "AKIDtmpRoleKey000000000000000000001"
TMP_SECRET = "tmpRoleSecret0123456789abcdefgh"
TMP_TOKEN = "tmp-session-token-ABCDEF0123456789"
RUNTIME = RuntimeOptions(autoretry=False, max_attempts=1)


def _headers_seen(server: Any, monkeypatch: pytest.MonkeyPatch) -> list[dict[str, str]]:
    seen: list[dict[str, str]] = []
    real = server.respond

    def respond(method: str, target: str, headers: dict[str, str], body: bytes) -> Any:
        seen.append({k.lower(): v for k, v in headers.items()})
        return real(method, target, headers, body)

    monkeypatch.setattr(server, "respond", respond)
    return seen


def _tencent_creds() -> dict[str, str]:
    return {"TmpSecretId": TMP_ID, "TmpSecretKey": TMP_SECRET, "Token": TMP_TOKEN,
            "ExpiredTime": "1893456000", "Expiration": "2030-01-01T00:00:00Z",
            "Code": "Success"}


def _cvm_machine(tencent: TencentStandin) -> str:
    """A CVM machine launched with the role named in RunInstances (CamRoleName), the role
    made first as gpudesk makes it: CVM refuses a role it does not know."""
    tencent.add_role(ROLE)
    client = cvm_client(tencent)
    ids: list[str] = client.call_json("RunInstances", {
        "Placement": {"Zone": "ap-guangzhou-3"}, "InstanceType": "GN7.2XLARGE32",
        "ImageId": "img-gpu22cu12", "InstanceChargeType": "POSTPAID_BY_HOUR",
        "CamRoleName": ROLE,
        "TagSpecification": [{"ResourceType": "instance",
                              "Tags": [{"Key": "gpudesk", "Value": "1"}]}]})[
        "Response"]["InstanceIdSet"]
    for _ in range(3):
        client.call_json("DescribeInstances", {"InstanceIds": ids})
    return ids[0]


def _cvm_state(tencent: TencentStandin, iid: str) -> dict[str, Any]:
    answer = cvm_client(tencent).call_json("DescribeInstances", {"InstanceIds": [iid]})
    found: dict[str, Any] = answer["Response"]["InstanceSet"][0]
    return found


def test_cvm_stop_charging_and_terminate_with_the_cam_role(
        tencent: TencentStandin, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    iid = _cvm_machine(tencent)
    assert _cvm_state(tencent, iid)["InstanceState"] == "RUNNING"
    tencent.add_secret(TMP_ID, TMP_SECRET)
    seen = _headers_seen(tencent, monkeypatch)
    with MetadataStandin("tencent", ROLE, iid, "ap-guangzhou", _tencent_creds) as md:
        said = cloud_stop.stop_self("tencent", "stop", ROLE, metadata=md.url,
                                    endpoint=f"http://{tencent.endpoint}/")
        assert said == f"CVM StopInstances {iid} (STOP_CHARGING): accepted"
        assert f"GET /latest/meta-data/cam/security-credentials/{ROLE}" in md.hits
        got = _cvm_state(tencent, iid)
        assert got["InstanceState"] in ("STOPPING", "STOPPED")
        assert got["StopChargingMode"] == "STOP_CHARGING"
        call = next(h for h in seen if h.get("x-tc-action") == "StopInstances")
        assert call["x-tc-token"] == TMP_TOKEN and TMP_ID in call["authorization"]
        assert TMP_SECRET not in str(call)
        said = cloud_stop.stop_self("tencent", "terminate", ROLE, metadata=md.url,
                                    endpoint=f"http://{tencent.endpoint}/")
        assert said == f"CVM TerminateInstances {iid}: accepted"
    assert _cvm_state(tencent, iid)["InstanceState"] in ("TERMINATING", "SHUTDOWN")


def test_cvm_refuses_a_wrong_secret(tencent: TencentStandin) -> None:  # noqa: F811
    iid = _cvm_machine(tencent)
    tencent.add_secret(TMP_ID, "a-different-secret")
    with MetadataStandin("tencent", ROLE, iid, "ap-guangzhou", _tencent_creds) as md, \
            pytest.raises(cloud_stop.CloudStopError, match="AuthFailure.SignatureFailure"):
        cloud_stop.stop_self("tencent", "stop", ROLE, metadata=md.url,
                             endpoint=f"http://{tencent.endpoint}/")
    assert _cvm_state(tencent, iid)["InstanceState"] == "RUNNING"


def _aliyun_creds() -> dict[str, str]:
    return {"AccessKeyId": "STS.tmpRoleKey0001", "AccessKeySecret": TMP_SECRET,
            "SecurityToken": TMP_TOKEN, "Expiration": "2030-01-01T00:00:00Z",
            "Code": "Success"}


def _ecs_machine(aliyun: AliyunStandin) -> str:
    """An ECS machine launched with the role named in RunInstances (RamRoleName), the role
    made first as gpudesk makes it: ECS refuses a role it does not know."""
    aliyun.add_role(ROLE)
    vpc_id = aliyun.add_vpc("cn-hangzhou")
    vswitch = aliyun.add_vswitch(vpc_id, "cn-hangzhou-h")
    group = aliyun.add_group(vpc_id)
    answer = ecs_client(aliyun).run_instances_with_options(models.RunInstancesRequest(
        region_id="cn-hangzhou", zone_id="cn-hangzhou-h", amount=1,
        instance_type="ecs.gn7i-c8g1.2xlarge", image_id=IMAGES[0]["ImageId"],
        v_switch_id=vswitch, security_group_id=group, ram_role_name=ROLE,
        instance_charge_type="PostPaid"), RUNTIME)
    iid = str(answer.body.instance_id_sets.instance_id_set[0])
    aliyun.state.instances[iid]["Status"] = "Running"
    return iid


def test_ecs_stop_charging_and_delete_with_the_ram_role(
        aliyun: AliyunStandin, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    iid = _ecs_machine(aliyun)
    aliyun.add_secret("STS.tmpRoleKey0001", TMP_SECRET)
    seen = _headers_seen(aliyun, monkeypatch)
    with MetadataStandin("aliyun", ROLE, iid, "cn-hangzhou", _aliyun_creds) as md:
        said = cloud_stop.stop_self("aliyun", "stop", ROLE, metadata=md.url,
                                    endpoint=f"http://{aliyun.endpoint}/")
        assert said == f"ECS StopInstances {iid} (StopCharging): accepted"
        assert md.hits[0] == "PUT /latest/api/token"  # hardened mode where offered
        raw = aliyun.state.instances[iid]
        assert raw["Status"] in ("Stopping", "Stopped") and raw["StoppedMode"] == "StopCharging"
        call = next(h for h in seen if h.get("x-acs-action") == "StopInstances")
        assert call["x-acs-security-token"] == TMP_TOKEN
        assert "x-acs-security-token" in call["authorization"]
        said = cloud_stop.stop_self("aliyun", "terminate", ROLE, metadata=md.url,
                                    endpoint=f"http://{aliyun.endpoint}/")
        assert said == f"ECS DeleteInstances {iid}: accepted"
    assert iid not in aliyun.state.instances and aliyun.internal_errors == []


def test_ecs_refuses_a_wrong_secret(aliyun: AliyunStandin) -> None:  # noqa: F811
    iid = _ecs_machine(aliyun)
    aliyun.add_secret("STS.tmpRoleKey0001", "a-different-secret")
    with MetadataStandin("aliyun", ROLE, iid, "cn-hangzhou", _aliyun_creds) as md, \
            pytest.raises(cloud_stop.CloudStopError, match="SignatureDoesNotMatch"):
        cloud_stop.stop_self("aliyun", "stop", ROLE, metadata=md.url,
                             endpoint=f"http://{aliyun.endpoint}/")
    assert aliyun.state.instances[iid]["Status"] == "Running"
