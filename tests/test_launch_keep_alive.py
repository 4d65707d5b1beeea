"""``gpudesk launch --spot --keep-alive`` (issue 23) against moto's EC2 and Auto Scaling
over HTTP: the ledger row stands for the group, its end (size 0 at budget ÷ price) is the
one moto holds, a reclaim is followed to the replacement by ``ls``, a stop is refused
(the group would start another) and ``terminate`` ends the group with nothing left."""
# ruff: noqa: F811 - fixtures imported from other modules arrive as parameters

from __future__ import annotations

import json
import time
from dataclasses import replace as replace_settings
from typing import Any

import pytest
from fixtures_aws import MotoAws  # noqa: F401
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from fixtures_keyring import memory_keyring  # noqa: F401
from keep_alive_capacity import no_capacity
from test_launch_store import LAUNCH  # noqa: F401 - the fixture
from test_launch_store import _run  # noqa: F401 - the fixture
from test_launch_store import cloud  # noqa: F401 - the fixture

from gpudesk.services.cloud.keep_alive import group_name
from gpudesk.services.money.ledger import Ledger


def _group(cloud: MotoAws, name: str) -> dict[str, Any] | None:
    found = cloud.client("autoscaling").describe_auto_scaling_groups(
        AutoScalingGroupNames=[name])["AutoScalingGroups"]
    return found[0] if found else None


def _running(cloud: MotoAws) -> list[str]:
    out = []
    for r in cloud.client("ec2").describe_instances()["Reservations"]:
        out += [i["InstanceId"] for i in r["Instances"] if i["State"]["Name"] == "running"]
    return out


def test_a_kept_alive_run_is_a_group_capped_by_its_own_end_followed_and_ended(
        cloud: MotoAws) -> None:
    before = time.time()
    code, out, err = _run([*LAUNCH, "--spot", "--keep-alive", "--budget", "5", "--json"])
    assert code == 0, err
    data = json.loads(out)
    ledger_id = data["id"]
    with Ledger() as ledger:
        m = ledger.get(ledger_id)
    assert m is not None and m.group_id == group_name(ledger_id) and m.group_state == "live"
    grp = _group(cloud, m.group_id)
    assert grp is not None and grp["DesiredCapacity"] == 1 and grp["MaxSize"] == 1
    (member,) = [i["InstanceId"] for i in grp["Instances"]]
    assert m.cloud_id == member and m.state == "running" and m.market == "spot"
    # the members carry the group's role (run_role), named in the launch template
    role = f"gpudesk-run-{ledger_id}"
    (template,) = cloud.client("ec2").describe_launch_templates()["LaunchTemplates"]
    data = cloud.client("ec2").describe_launch_template_versions(
        LaunchTemplateId=template["LaunchTemplateId"])["LaunchTemplateVersions"][0]
    assert data["LaunchTemplateData"]["IamInstanceProfile"]["Name"] == role
    iam = cloud.client("iam")
    assert iam.get_role(RoleName=role)["Role"]["RoleName"] == role

    # the cap is the group's own scheduled action, as moto holds it: size 0 at 5 USD ÷ the
    # price of the machine and of its disk (which bills while it runs)
    (action,) = cloud.client("autoscaling").describe_scheduled_actions(
        AutoScalingGroupName=m.group_id)["ScheduledUpdateGroupActions"]
    assert (action["MinSize"], action["MaxSize"], action["DesiredCapacity"]) == (0, 0, 0)
    held = action["StartTime"].timestamp()
    assert m.cloud_timer_at == held
    from gpudesk.services.cloud.guard import disk_per_hour

    disk = disk_per_hour("aws", "us-east-1", m.disk_gb, "USD")
    assert disk > 0
    expected = before + 5.0 / (m.price_per_hour + disk) * 3600
    assert expected - 5 <= held <= expected + (time.time() - before) + 1

    code, out, _ = _run(["show", ledger_id, "--json"])
    group = json.loads(out)["group"]
    assert group["id"] == m.group_id and group["state"] == "live"
    assert group["role"] == f"gpudesk-run-{ledger_id}" and group["role_says"] is None
    (says,) = json.loads(out)["guard_says"]
    assert says.startswith("At 5.00 USD the group ends itself") and "0 machines" in says
    assert [x["cloud_id"] for x in group["machines"]] == [member]
    assert group["machines"][0]["to"] is None

    # a reclaim: the group starts another; ls follows the row to it
    cloud.client("autoscaling").terminate_instance_in_auto_scaling_group(
        InstanceId=member, ShouldDecrementDesiredCapacity=False)
    grp = _group(cloud, m.group_id)
    assert grp is not None
    (second,) = [i["InstanceId"] for i in grp["Instances"] if i["InstanceId"] != member]
    code, _, err = _run(["ls", "--json"])
    assert code == 0, err
    with Ledger() as ledger:
        m = ledger.get(ledger_id)
        steps = [e.step for e in ledger.events(ledger_id)]
    assert m is not None and m.cloud_id == second and m.group_live
    assert "reclaimed" in steps and "replaced" in steps
    # no run armed the group yet: the replacement booted from the launch's own user data,
    # so the launch's host key is the one it offers, and the only pin of its SSH name
    from gpudesk.services.remote.host_keys import PinStore
    from gpudesk.services.remote.ssh_config import host_alias

    with Ledger() as ledger:
        (launch_fp,) = [e.detail for e in ledger.events(ledger_id) if e.step == "host-key"]
        armed = [e.detail for e in ledger.events(ledger_id) if e.step == "group-armed"]
    assert armed == [f"- {launch_fp} launch"]
    assert m.host_key_fingerprint == launch_fp
    assert PinStore().fingerprints(host_alias(m)) == [launch_fp]
    code, out, _ = _run(["show", ledger_id, "--json"])
    machines = json.loads(out)["group"]["machines"]
    assert [(x["cloud_id"], x["why"]) for x in machines] == [(member, "reclaimed"), (second, "")]

    # stopping a member would only make the group start another: refused, in words
    code, _, err = _run(["stop", ledger_id, "--yes"])
    assert code != 0 and "kept alive by its group" in err and "Terminate it" in err
    assert _group(cloud, m.group_id) is not None and second in _running(cloud)

    code, _, err = _run(["terminate", ledger_id, "--yes"])
    assert code == 0, err
    assert _group(cloud, m.group_id) is None
    assert _running(cloud) == []
    assert cloud.client("ec2").describe_launch_templates()["LaunchTemplates"] == []
    assert [r["RoleName"] for r in iam.list_roles()["Roles"] if r["RoleName"] == role] == []
    with Ledger() as ledger:
        m = ledger.get(ledger_id)
    assert m is not None and m.state == "terminated" and m.group_state == "ended"
    code, out, _ = _run(["show", ledger_id, "--json"])
    assert json.loads(out)["group"]["machines"][-1]["why"] == "ended"


@pytest.mark.parametrize(("args", "says"), [
    (["--keep-alive", "--budget", "5"], "--keep-alive is for spot machines"),
    # a budget by default (issue 29): only "no budget" on purpose leaves a group uncapped
    (["--spot", "--keep-alive", "--no-budget"], "needs a budget"),
])
def test_a_group_that_could_not_be_capped_is_refused_before_anything(
        cloud: MotoAws, args: list[str], says: str) -> None:
    code, _, err = _run([*LAUNCH, *args])
    assert code != 0 and says in err
    with Ledger() as ledger:
        assert ledger.machines(include_ended=True) == []
    assert cloud.client("autoscaling").describe_auto_scaling_groups()["AutoScalingGroups"] == []
    assert cloud.instance_count() == 0


def test_a_group_that_finds_no_capacity_for_the_wait_is_ended_and_said(
        cloud: MotoAws) -> None:
    from gpudesk.services.cloud.reconcile import ReconcileReport
    from gpudesk.services.cloud.reconcile import reconcile_provider
    from gpudesk.services.core.settings import load_settings
    from gpudesk.services.core.settings import save_settings

    save_settings(replace_settings(load_settings(), keep_alive_wait_min=30))
    code, out, err = _run([*LAUNCH, "--spot", "--keep-alive", "--budget", "5", "--json"])
    assert code == 0, err
    ledger_id = json.loads(out)["id"]
    with Ledger() as ledger:
        m = ledger.get(ledger_id)
    assert m is not None
    # capacity gone: the member is reclaimed and the group, still wanting one, gets none
    no_capacity(m.group_id)
    cloud.client("autoscaling").terminate_instance_in_auto_scaling_group(
        InstanceId=m.cloud_id, ShouldDecrementDesiredCapacity=False)

    provider = cloud.provider()
    t0 = time.time()
    with Ledger() as ledger:
        first = ReconcileReport()
        reconcile_provider(ledger, "aws", provider, ["us-east-1"], first, now=t0)
        assert first.reclaimed == [ledger_id] and first.gave_up == []
        row = ledger.get(ledger_id)
        assert row is not None and row.state == "terminated" and row.group_live
        early = ReconcileReport()  # 29 minutes: still waiting for capacity
        reconcile_provider(ledger, "aws", provider, ["us-east-1"], early, now=t0 + 29 * 60)
        assert early.gave_up == [] and _group(cloud, m.group_id) is not None
        late = ReconcileReport()
        reconcile_provider(ledger, "aws", provider, ["us-east-1"], late, now=t0 + 31 * 60)
        assert late.gave_up == [ledger_id]
        row = ledger.get(ledger_id)
        assert row is not None and row.group_state == "ended"
        assert [e.step for e in ledger.events(ledger_id)][-4:] == [
            "no-capacity", "group-end-requested", "group-ended", "group-role-deleted"]
    assert _group(cloud, m.group_id) is None


def test_the_desktop_ends_the_group_when_it_sees_the_run_end(cloud: MotoAws) -> None:
    """What the Run page and ``gpudesk run`` do when the followed run exits on the machine:
    the group is ended as its agent would, so the cloud starts nothing again; a lost
    machine (a reclaim) is no end."""
    from gpudesk.services.runs.detached import NodeRun
    from gpudesk.services.runs.detached import RunRecord
    from gpudesk.services.runs.detached import RunStatus
    from gpudesk.services.runs.keep_alive_run import MSG_GROUP_ENDED
    from gpudesk.services.runs.keep_alive_run import run_ended

    code, out, err = _run([*LAUNCH, "--spot", "--keep-alive", "--budget", "5", "--json"])
    assert code == 0, err
    ledger_id = json.loads(out)["id"]
    record = RunRecord(id="mnist-20261205-100000-ab12", project="/p", remote_project="/r/p",
                       script="train.py", args=[], nproc=1,
                       nodes=[NodeRun(ledger_id, None, "/r/runs/x")])
    said: list[str] = []
    with Ledger() as ledger:
        m = ledger.get(ledger_id)
    assert m is not None
    assert not run_ended(record, RunStatus("lost"), said.append)
    assert said == [] and _group(cloud, m.group_id) is not None
    assert run_ended(record, RunStatus("exited", code=0), said.append)
    (line,) = said
    assert line.template == MSG_GROUP_ENDED and line.values["group"] == m.group_id
    assert _group(cloud, m.group_id) is None and _running(cloud) == []
    with Ledger() as ledger:
        ended = ledger.get(ledger_id)
        assert ended is not None and ended.group_state == "ended"
        assert [e.step for e in ledger.events(ledger_id)].count("run-ended") == 1
    assert not run_ended(record, RunStatus("exited", code=0), said.append)  # once


def test_a_group_found_at_zero_is_deleted_at_once(cloud: MotoAws) -> None:
    """Its agent (or its own scheduled end) set it to 0 and could not delete it (Tencent AS
    refuses while a member still runs): the next look deletes it; nothing more waits."""
    code, out, err = _run([*LAUNCH, "--spot", "--keep-alive", "--budget", "5", "--json"])
    assert code == 0, err
    ledger_id = json.loads(out)["id"]
    with Ledger() as ledger:
        m = ledger.get(ledger_id)
    assert m is not None
    cloud.client("autoscaling").update_auto_scaling_group(
        AutoScalingGroupName=m.group_id, MinSize=0, MaxSize=0, DesiredCapacity=0)
    assert _group(cloud, m.group_id) is not None
    code, _, err = _run(["ls", "--json"])
    assert code == 0, err
    assert _group(cloud, m.group_id) is None and _running(cloud) == []
    with Ledger() as ledger:
        row = ledger.get(ledger_id)
        steps = [e.step for e in ledger.events(ledger_id)]
    assert row is not None and row.group_state == "ended" and "group-at-zero" in steps
