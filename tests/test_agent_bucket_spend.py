"""Issue 23: a keep-alive run's budget holds across replacements (``spend.json`` in the bucket).

Two machines of one run, one after the other, against moto's S3 and Auto Scaling: the
first agent counts its billable time into ``runs/<id>/spend.json`` and writes
``reclaimed`` at its spot notice; the second (a fresh folder, another boot, another
instance id) starts from the first's total and, at the budget, ends the group (moto's
describe shows none) instead of stopping itself, at the moment the *run's* total reaches
the budget while its own spend is still well under it.
"""

from __future__ import annotations

import json
from datetime import UTC
from datetime import datetime
from pathlib import Path
from typing import Any

from fixtures_agent_store import Bucket  # noqa: F401
from fixtures_agent_store import bucket  # noqa: F401
from fixtures_aws import MotoAws  # noqa: F401
from fixtures_aws import aws  # noqa: F401
from fixtures_aws import moto_server  # noqa: F401
from metadata_standin import MetadataStandin

from gpudesk.agent.bucket_spend import BucketSpend
from gpudesk.agent.bucket_spend import Finder
from gpudesk.agent.bucket_spend import GroupGuard
from gpudesk.agent.bucket_spend import KeepAlive
from gpudesk.agent.bucket_spend import RunBudget
from gpudesk.agent.clock import SimClock
from gpudesk.agent.events import EventLog
from gpudesk.agent.events import read_events
from gpudesk.agent.rules import parse_rules
from gpudesk.agent.spot import SPOT_NOTICE_FILE
from gpudesk.agent.store import Store
from gpudesk.agent.store import StoreConfig

R = "us-east-1"
ROLE = "gpudesk-run-machine"
GROUP = "gpudesk-run-m-0042"
AMI = "ami-0abcdef1234567890"
PRICE = 3.6  # USD per hour: 0.001 USD a second
BUDGET = 1.0  # USD: 1000 billable seconds over the whole run
STEP_S = 30.0


def _group(cloud: MotoAws) -> list[str]:  # noqa: F811
    """A real Auto Scaling group of size 1; the ids of its machine(s)."""
    cloud.publish_image(R, AMI, "ubuntu", datetime(2026, 1, 1, tzinfo=UTC))
    cloud.client("ec2").create_launch_template(LaunchTemplateName=GROUP, LaunchTemplateData={
        "ImageId": AMI, "InstanceType": "g5.xlarge"})
    asg = cloud.client("autoscaling")
    asg.create_auto_scaling_group(
        AutoScalingGroupName=GROUP, LaunchTemplate={"LaunchTemplateName": GROUP},
        MinSize=1, MaxSize=1, DesiredCapacity=1, AvailabilityZones=[f"{R}a"])
    return [str(m["InstanceId"]) for m in asg.describe_auto_scaling_groups(
        AutoScalingGroupNames=[GROUP])["AutoScalingGroups"][0]["Instances"]]


def _groups(cloud: MotoAws) -> list[dict[str, Any]]:  # noqa: F811
    found: list[dict[str, Any]] = cloud.client("autoscaling").describe_auto_scaling_groups(
        AutoScalingGroupNames=[GROUP])["AutoScalingGroups"]
    return found


def _issue() -> dict[str, str]:
    return {"Code": "Success", "AccessKeyId": "ASIAROLEMACHINE00001",
            "SecretAccessKey": "role/SeCrEt+0123456789abcdef", "Token": "role-token",
            "Expiration": "2099-01-01T00:00:00Z"}


def _run_json(b: Bucket, run_id: str = "r1") -> None:
    b.s3.put_object(Bucket=b.name, Key=f"runs/{run_id}/run.json", Body=json.dumps({
        "run": run_id, "project": "p", "script": "train.py", "args": [], "nproc": 1,
        "group": {"cloud": "aws", "region": R, "group_id": GROUP},
        "budget": {"amount": BUDGET, "currency": "USD", "price_per_hour": PRICE}}).encode())


def _spend(b: Bucket, run_id: str = "r1") -> dict[str, Any]:
    data: dict[str, Any] = json.loads(b.read(f"runs/{run_id}/spend.json"))
    return data


class Machine:
    """One machine of the group: its agent folder, guard (SimClock: a boot of its own),
    the run folder the first boot made, and the keep-alive finder the agent's loop ticks."""

    def __init__(self, b: Bucket, name: str, md: MetadataStandin, moto: str,
                 flag: Path) -> None:
        self.clock = SimClock()
        self.dir = b.root / name
        self.runs = self.dir / "runs"
        folder = b.run("r1", role=ROLE, metadata=md.url, group_endpoint=moto)
        self.run = self.runs / "r1"
        self.run.parent.mkdir(parents=True, exist_ok=True)
        folder.rename(self.run)
        self.events = EventLog(self.dir, self.clock)
        rules = parse_rules({
            "budget": {"cap": BUDGET, "currency": "USD", "price_per_hour": PRICE,
                       "since": self.clock.time(), "action": "stop"},
            # what a plain machine would do at the budget; a keep-alive one must not
            "commands": {"stop": ["touch", str(flag)], "terminate": ["touch", str(flag)]}})
        self.guard = GroupGuard(rules, self.events, runs_dir=self.runs, log_dir=self.dir,
                           clock=self.clock, boot=f"boot-{name}", since_boot=lambda: 0.0)
        self.finder = Finder(self.runs, self.events, self.clock)

    def step(self) -> list[dict[str, Any]]:
        """One pass of the agent's loop, then ``STEP_S`` seconds pass."""
        self.finder.tick(self.guard)
        out = self.guard.tick()
        self.clock.advance(STEP_S)
        return out


def test_spend_accumulates_over_two_machines_and_the_second_ends_the_group_at_the_budget(
        bucket: Bucket, aws: MotoAws, moto_server: str,  # noqa: F811
        tmp_path: Path) -> None:
    first_id = _group(aws)[0]
    _run_json(bucket)
    flag = tmp_path / "powered-off"

    # machine 1: 600 billable seconds, then a spot notice
    with MetadataStandin("aws", ROLE, first_id, R, _issue) as md:
        one = Machine(bucket, "m1", md, moto_server, flag)
        for _ in range(20):
            assert not [e for e in one.step() if e["kind"] == "rule-fired"]
        assert isinstance(one.finder.found, KeepAlive)
        (one.run / SPOT_NOTICE_FILE).write_text("{}")
        one.finder.tick(one.guard)
        one.finder.close()
    spend = _spend(bucket)
    assert [m["cloud_id"] for m in spend["machines"]] == [first_id]
    m1 = spend["machines"][0]
    assert m1["why"] == "reclaimed" and m1["to"] is not None
    assert 570.0 <= m1["seconds"] <= 630.0
    assert abs(m1["spent"] - m1["seconds"] * PRICE / 3600.0) < 1e-6
    assert spend["total"] == m1["spent"] and spend["currency"] == "USD"
    assert m1["price_per_hour"] == PRICE
    first_spent = m1["spent"]

    # the group replaces it: machine 2 starts from the run's total
    second_id = "i-0replacement00002"
    with MetadataStandin("aws", ROLE, second_id, R, _issue) as md:
        two = Machine(bucket, "m2", md, moto_server, flag)
        fired: list[dict[str, Any]] = []
        for _ in range(40):
            fired += [e for e in two.step() if e["kind"] == "rule-fired"]
            if fired:
                break
        ka = two.finder.found
        assert ka is not None and ka.spend.others == first_spent
    assert fired, "the second machine's guard never acted"
    own_s = two.guard.meter.state["billable_s"]
    own_spend = own_s * PRICE / 3600.0
    # it acted when the RUN's total reached the budget, its own spend far under it
    assert first_spent + own_spend >= BUDGET
    assert own_spend < BUDGET - first_spent + STEP_S * PRICE / 3600.0 + 1e-9
    assert own_spend < 0.5 * BUDGET
    assert fired[0]["spend"] >= BUDGET and fired[0]["spend"] < BUDGET + 0.05

    # it ended the group (moto: none left), and did not stop or terminate itself
    assert _groups(aws) == []
    assert not flag.exists()
    ran = [e for e in read_events(two.dir) if e["kind"] == "action-run"]
    assert ran and ran[0]["rc"] == 0 and ran[0]["action"] == "stop" and ran[0]["group"]
    ends = [e for e in read_events(two.dir) if e["kind"] == "group-end"]
    assert ends and ends[0]["gone"] is True and ends[0]["why"] == "budget"

    spend = _spend(bucket)
    assert [m["cloud_id"] for m in spend["machines"]] == [first_id, second_id]
    m1_again, m2 = spend["machines"]
    assert m1_again == m1  # the second machine changed only its own entry
    assert m2["why"] == "budget" and m2["to"] is not None
    assert abs(spend["total"] - (m1["spent"] + m2["spent"])) < 1e-6
    assert spend["total"] >= BUDGET - 1e-6


def test_conditional_writes_keep_both_machines_entries(
        bucket: Bucket, aws: MotoAws) -> None:  # noqa: F811
    store = Store(StoreConfig.from_dict({
        "cloud": "aws", "region": R, "bucket": bucket.name, "endpoint": aws.endpoint,
        "addressing": "path", "credentials_file": str(
            bucket.run("r2").parent.parent / "sts-r2.json")}))
    budget = RunBudget(10.0, "USD", PRICE)
    clock = SimClock()
    a = BucketSpend(store, "runs/r2/", "r2", "i-a", budget, clock=clock)
    b = BucketSpend(store, "runs/r2/", "r2", "i-b", budget, clock=clock)
    a.seconds, b.seconds = 100.0, 200.0
    assert a.sync()
    data, etag = a._read()  # a read ...
    assert b.sync()  # ... b wrote in between ...
    a.seconds = 150.0
    assert a._write(json.dumps(a._merge(data)).encode(), etag) is False  # ... refused (412)
    assert a.sync()  # read again, only its own entry changed
    spend = _spend(bucket, "r2")
    got = {m["cloud_id"]: m["seconds"] for m in spend["machines"]}
    assert got == {"i-a": 150.0, "i-b": 200.0}
    assert abs(spend["total"] - 350.0 * PRICE / 3600.0) < 1e-6
    assert a.others == b.own and abs(a.total() - spend["total"]) < 1e-6


def test_a_run_without_a_group_is_left_to_the_plain_guard(
        bucket: Bucket, aws: MotoAws, tmp_path: Path) -> None:  # noqa: F811
    bucket.s3.put_object(Bucket=bucket.name, Key="runs/r1/run.json", Body=json.dumps({
        "run": "r1", "group": None, "budget": None}).encode())
    folder = bucket.run("r1")
    events = EventLog(tmp_path / "agent", SimClock())
    assert KeepAlive.for_run(folder, events) is None


def test_the_run_ending_for_good_ends_the_group_but_a_reclaim_does_not(
        bucket: Bucket, aws: MotoAws, moto_server: str,  # noqa: F811
        tmp_path: Path) -> None:
    machine_id = _group(aws)[0]
    _run_json(bucket)
    with MetadataStandin("aws", ROLE, machine_id, R, _issue) as md:
        one = Machine(bucket, "m1", md, moto_server, tmp_path / "flag")
        one.step()
        # reclaimed: the run's process was killed, a spot notice is there: the group stays
        (one.run / SPOT_NOTICE_FILE).write_text("{}")
        (one.run / "exit_status").write_text("143\n")
        for _ in range(6):
            one.step()
        assert _groups(aws) and _groups(aws)[0]["DesiredCapacity"] == 1
        assert _spend(bucket)["machines"][0]["why"] == "reclaimed"

        # the run ended for good here (no notice) and its last uploads are done
        (one.run / SPOT_NOTICE_FILE).unlink()
        (one.run / "exit_status").write_text("0\n")
        (one.run / "store.json").write_text(json.dumps({"finished": True}))
        one.step()
        assert _groups(aws), "ended at once: a restart of the attempt gets a grace"
        for _ in range(3):  # END_GRACE_S is 60 s
            one.step()
    assert _groups(aws) == []
    ends = [e for e in read_events(one.dir) if e["kind"] == "group-end"]
    assert len(ends) == 1 and ends[0]["why"] == "ended" and ends[0]["gone"] is True
    assert not (tmp_path / "flag").exists()
    (entry,) = _spend(bucket)["machines"]
    assert entry["cloud_id"] == machine_id and entry["why"] == "ended"  # the last word
