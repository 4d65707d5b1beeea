"""No spot capacity for a moto Auto Scaling group: the group still wants its machine, and
EC2 would answer InsufficientInstanceCapacity to each of its attempts, so none starts.

moto replaces a group's member at once and has no notion of capacity, so the group's own
replacement is switched off in moto's backend (the server runs in this process), as
tests/guard_matrix_cases.py does for its no-capacity rows."""

from __future__ import annotations

from ec2_bill import _asg_backend


def no_capacity(group_name: str, region: str = "us-east-1") -> None:
    group = _asg_backend(region).autoscaling_groups[group_name]  # type: ignore[attr-defined]
    group.replace_autoscaling_group_instances = lambda *_a, **_k: None
