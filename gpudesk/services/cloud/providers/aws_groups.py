"""EC2 security groups of one machine each, zones that offer a type, what is left over.

A mixin of :class:`AwsProvider`, which supplies the calls. A group per machine
(``gpudesk-machine-<ledger id>``, tagged with the ledger id) means nothing is
shared: "allow my new address" touches one machine, a rule the user adds is
never revoked (only gpudesk's own, marked by its description, is), and cleanup
deletes the group with the machine.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from typing import TypeVar

from gpudesk.services.cloud.providers import base
from gpudesk.services.cloud.providers.aws_errors import CallContext

MACHINE_GROUP_PREFIX = base.RESOURCE_PREFIX + "machine-"  # + ledger id: one group per machine
SSH_RULE_DESCRIPTION = "SSH from your address (gpudesk)"  # marks the one rule gpudesk owns
_T = TypeVar("_T")


class MachineGroups:
    """Group, zone and leftover calls; the plumbing below comes from the provider."""

    def _call(self, ctx: CallContext, fn: Callable[[Any], _T]) -> _T:
        raise NotImplementedError

    def _pages(self, ctx: CallContext, key: str, **params: Any) -> list[Any]:
        raise NotImplementedError

    def _ec2(self, action: str, region: str, **ctx: Any) -> CallContext:
        raise NotImplementedError

    def _default_vpc(self, region: str) -> str:
        raise NotImplementedError

    def _only_ssh_from(self, region: str, group_id: str, address: str,
                       permissions: list[dict[str, Any]]) -> None:
        raise NotImplementedError

    def _group_named(self, region: str, name: str, vpc: str) -> dict[str, Any] | None:
        """The security group called ``name`` in the VPC ``vpc``, or None."""
        found = self._call(self._ec2("DescribeSecurityGroups", region, resource=name),
                           lambda c: c.describe_security_groups(Filters=[
                               {"Name": "group-name", "Values": [name]},
                               {"Name": "vpc-id", "Values": [vpc]}])).get("SecurityGroups", [])
        return dict(found[0]) if found else None

    def ensure_machine_group(self, region: str, ledger_id: str, allow_from: str) -> str:
        """A group for one machine (tagged with its ledger id), SSH from ``allow_from``.

        Found again on a retry; nothing else in it is ever revoked, so a rule the
        user adds by hand stays. Deleted by ``cleanup`` once the machine is gone.
        """
        address = base.single_address(allow_from)
        name = MACHINE_GROUP_PREFIX + ledger_id
        vpc = self._default_vpc(region)
        found = self._group_named(region, name, vpc)
        if found is not None:
            group_id = str(found["GroupId"])
        else:
            tags = [{"Key": base.TAG_MANAGED, "Value": "1"},
                    {"Key": base.TAG_LEDGER, "Value": ledger_id}]
            group_id = str(self._call(
                self._ec2("CreateSecurityGroup", region, resource=name),
                lambda c: c.create_security_group(
                    GroupName=name, VpcId=vpc, Description=f"gpudesk: SSH to {ledger_id}",
                    TagSpecifications=[{"ResourceType": "security-group", "Tags": tags}]),
            )["GroupId"])
        self.set_ssh_address(region, group_id, address)
        return group_id

    def set_ssh_address(self, region: str, group_id: str, allow_from: str) -> list[str]:
        """Make gpudesk's SSH rule in the group name ``allow_from`` only; say what it replaced.

        Only rules gpudesk made (its description) are revoked; the rest is the user's.
        """
        address = base.single_address(allow_from)
        groups = self._call(self._ec2("DescribeSecurityGroups", region, resource=group_id),
                            lambda c: c.describe_security_groups(GroupIds=[group_id]))
        perms = (groups.get("SecurityGroups") or [{}])[0].get("IpPermissions", [])
        old: list[str] = []
        revoke: list[dict[str, Any]] = []
        present = False
        for perm in perms:
            if (perm.get("IpProtocol"), perm.get("FromPort"), perm.get("ToPort")) != (
                    "tcp", 22, 22):
                continue
            for kind, key in (("IpRanges", "CidrIp"), ("Ipv6Ranges", "CidrIpv6")):
                for source in perm.get(kind, []):
                    if source.get(key) == address:
                        present = True
                    elif source.get("Description") == SSH_RULE_DESCRIPTION:
                        old.append(str(source.get(key)))
                        revoke.append({"IpProtocol": "tcp", "FromPort": 22, "ToPort": 22,
                                       kind: [{key: source.get(key)}]})
        if not present:
            self._only_ssh_from(region, group_id, address, [])  # adds it, revokes nothing
        if revoke:
            self._call(self._ec2("RevokeSecurityGroupIngress", region, resource=group_id),
                       lambda c: c.revoke_security_group_ingress(GroupId=group_id,
                                                                 IpPermissions=revoke))
        return old

    def ssh_addresses(self, region: str, group_id: str) -> list[str]:
        """The addresses gpudesk's SSH rules in the group name (its description marks them)."""
        groups = self._call(self._ec2("DescribeSecurityGroups", region, resource=group_id),
                            lambda c: c.describe_security_groups(GroupIds=[group_id]))
        perms = (groups.get("SecurityGroups") or [{}])[0].get("IpPermissions", [])
        return [str(s.get(key)) for p in perms if p.get("FromPort") == 22
                for kind, key in (("IpRanges", "CidrIp"), ("Ipv6Ranges", "CidrIpv6"))
                for s in p.get(kind, []) if s.get("Description") == SSH_RULE_DESCRIPTION]

    def zone_choices(self, region: str, instance_type: str,
                     market: base.Market = "on-demand") -> list[base.ZoneChoice]:
        """The zones of ``region`` and whether EC2 offers ``instance_type`` there.

        DescribeInstanceTypeOfferings (location type availability-zone) is EC2's own
        answer; a zone not ``available`` (DescribeAvailabilityZones) is refused too.
        Capacity is only known by asking, so the launcher tries the offering zones in order.
        """
        del market  # EC2 offers a type in a zone for both markets
        zones = self._call(self._ec2("DescribeAvailabilityZones", region),
                           lambda c: c.describe_availability_zones(Filters=[
                               {"Name": "zone-type", "Values": ["availability-zone"]}]))
        states = {str(z["ZoneName"]): str(z.get("State", "")) for z in
                  zones.get("AvailabilityZones", [])}
        offered = {str(o.get("Location")) for o in self._pages(
            self._ec2("DescribeInstanceTypeOfferings", region, instance_type=instance_type),
            "InstanceTypeOfferings", LocationType="availability-zone",
            Filters=[{"Name": "instance-type", "Values": [instance_type]}])}
        sells = [base.ZoneChoice(z, True) for z in sorted(states)
                 if z in offered and states[z] == "available"]
        refused = [base.ZoneChoice(z, False, f"zone {states[z]}") for z in sorted(states)
                   if z in offered and states[z] != "available"]
        refused += [base.ZoneChoice(z, False, f"{instance_type} not offered")
                    for z in sorted(states) if z not in offered]
        return sells + refused

    def leftovers(self, region: str) -> list[str]:
        """Every gpudesk-tagged key pair (name) and security group (id) still in ``region``."""
        managed = [{"Name": "tag-key", "Values": [base.TAG_MANAGED]}]
        keys = self._call(self._ec2("DescribeKeyPairs", region),
                          lambda c: c.describe_key_pairs(Filters=managed)).get("KeyPairs", [])
        groups = self._pages(self._ec2("DescribeSecurityGroups", region), "SecurityGroups",
                             Filters=managed)
        return [str(k["KeyName"]) for k in keys] + [str(g["GroupId"]) for g in groups]
