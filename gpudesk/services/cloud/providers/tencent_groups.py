"""Tencent security groups of one machine each: made, re-pointed ("allow my new address"),
listed for cleanup. A mixin of :class:`TencentProvider`, which supplies the calls.

A group per machine (``gpudesk-machine-<ledger id>``, tagged with the ledger id)
means nothing is shared: changing one machine's address touches no other, a
rule the user adds is never revoked (only gpudesk's own rule, marked by its
description, is), and cleanup can delete it with the machine.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gpudesk.services.cloud.providers import base
from gpudesk.services.cloud.providers import tencent_parse as tp

PAGE = 100
_MACHINE_GROUP_PREFIX = base.RESOURCE_PREFIX + "machine-"  # + ledger id: one group per machine


class MachineGroups:
    """The group calls; ``_vpc``, ``_check_region`` and ``_pages`` come from the provider."""

    def _vpc(self, region: str, action: str, params: dict[str, Any],
             **ctx: Any) -> dict[str, Any]:
        raise NotImplementedError

    def _check_region(self, region: str) -> None:
        raise NotImplementedError

    def _pages(self, region: str, action: str, params: dict[str, Any], items: str, *,
               as_text: bool = False) -> Iterator[dict[str, Any]]:
        raise NotImplementedError

    def ensure_machine_group(self, region: str, ledger_id: str, allow_from: str) -> str:
        """A group for one machine (tagged with its ledger id), SSH from ``allow_from``.

        Found again on a retry; nothing but gpudesk's own SSH rule is ever revoked in it,
        so rules the user adds stay. ``cleanup`` deletes it once the machine is gone.
        """
        cidr = base.single_address(allow_from)
        self._check_region(region)
        group_id = self._named_group(region, _MACHINE_GROUP_PREFIX + ledger_id,
                                     f"gpudesk: SSH to {ledger_id}",
                                     {base.TAG_MANAGED: "1", base.TAG_LEDGER: ledger_id})
        self.set_ssh_address(region, group_id, cidr)
        return group_id

    def _named_group(self, region: str, name: str, description: str,
                     tags: dict[str, str]) -> str:
        """The id of the security group ``name``: found (a retry, a reused group) or made
        with ``description`` and ``tags``; its rules are the caller's to set."""
        answer = self._vpc(region, "DescribeSecurityGroups", {
            "Filters": [{"Name": "security-group-name", "Values": [name]}],
            "Offset": "0", "Limit": str(PAGE)})
        found = [g for g in answer.get("SecurityGroupSet") or []
                 if g.get("SecurityGroupName") == name]
        if found:
            return str(found[0]["SecurityGroupId"])
        created = self._vpc(region, "CreateSecurityGroup", {
            "GroupName": name, "ProjectId": "0", "GroupDescription": description,
            "Tags": tp.tag_list(tags)})
        return str(created["SecurityGroup"]["SecurityGroupId"])

    def set_ssh_address(self, region: str, group_id: str, allow_from: str) -> list[str]:
        """Make gpudesk's SSH rule name ``allow_from`` only; return the addresses it replaced.

        Only rules carrying gpudesk's description are revoked; egress is kept open
        (an empty egress set denies everything).
        """
        cidr = base.single_address(allow_from)
        self._check_region(region)
        wanted = tp.ssh_rule(cidr)
        policies = self._vpc(region, "DescribeSecurityGroupPolicies",
                             {"SecurityGroupId": group_id}, resource=group_id)
        rules = policies.get("SecurityGroupPolicySet") or {}
        ingress, egress = rules.get("Ingress") or [], rules.get("Egress") or []
        if not any(tp.same_rule(r, wanted) for r in ingress):
            self._vpc(region, "CreateSecurityGroupPolicies", {
                "SecurityGroupId": group_id,
                "SecurityGroupPolicySet": {"Ingress": [wanted]}}, resource=group_id)
        stale = [r for r in ingress if tp.is_gpudesk_rule(r) and not tp.same_rule(r, wanted)]
        if stale:
            # Indexes shift after the insertion above: delete by the rules themselves.
            self._vpc(region, "DeleteSecurityGroupPolicies", {
                "SecurityGroupId": group_id, "SecurityGroupPolicySet": {
                    "Ingress": [tp.rule_fields(r) for r in stale]}}, resource=group_id)
        if not egress:
            self._vpc(region, "CreateSecurityGroupPolicies", {
                "SecurityGroupId": group_id,
                "SecurityGroupPolicySet": {"Egress": list(tp.EGRESS_RULES)}}, resource=group_id)
        return [str(r.get("CidrBlock") or r.get("Ipv6CidrBlock") or "") for r in stale]

    def ssh_addresses(self, region: str, group_id: str) -> list[str]:
        """The addresses gpudesk's SSH rules in the group name (its description marks them)."""
        self._check_region(region)
        policies = self._vpc(region, "DescribeSecurityGroupPolicies",
                             {"SecurityGroupId": group_id}, resource=group_id)
        ingress = (policies.get("SecurityGroupPolicySet") or {}).get("Ingress") or []
        return [str(r.get("CidrBlock") or r.get("Ipv6CidrBlock") or "") for r in ingress
                if tp.is_gpudesk_rule(r)]

    def leftovers(self, region: str) -> list[str]:
        """Every gpudesk-tagged key pair (KeyId) and security group (id) still in ``region``."""
        self._check_region(region)
        tagged = [{"Name": "tag-key", "Values": [base.TAG_MANAGED]}]
        keys = [str(k.get("KeyId", "")) for k in
                self._pages(region, "DescribeKeyPairs", {"Filters": tagged}, "KeyPairSet")]
        groups = [str(g.get("SecurityGroupId", "")) for g in
                  self._pages(region, "DescribeSecurityGroups", {"Filters": tagged},
                              "SecurityGroupSet", as_text=True)]
        return keys + groups
