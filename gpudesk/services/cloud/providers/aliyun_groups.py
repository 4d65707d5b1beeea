"""Alibaba Cloud security groups of one machine each, gpudesk's SSH rule in them, and what
gpudesk left tagged: a mixin of :class:`AliyunProvider`, which supplies the calls.

As on the other clouds, a group per machine (``gpudesk-machine-<ledger id>``, tagged with
the ledger id, in gpudesk's VPC) means nothing is shared: changing one machine's address
touches no other, a rule the user adds is never revoked (only gpudesk's own, marked by its
description, is), and cleanup deletes it once no machine still alive uses it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gpudesk.services.cloud.providers import aliyun_parse as ap
from gpudesk.services.cloud.providers import base

MACHINE_GROUP_PREFIX = base.RESOURCE_PREFIX + "machine-"  # + ledger id: one group per machine


class MachineGroups:
    """The group calls; ``_ecs``, ``_pages``, ``_check_region`` and ``ensure_network`` come
    from the provider."""

    def _ecs(self, region: str, action: str, params: dict[str, Any],
             **ctx: Any) -> dict[str, Any]:
        raise NotImplementedError

    def _check_region(self, region: str) -> None:
        raise NotImplementedError

    def _pages(self, region: str, action: str, params: dict[str, Any],
               path: tuple[str, str], product: str = "ecs") -> Iterator[dict[str, Any]]:
        raise NotImplementedError

    def ensure_network(self, region: str, zone: str) -> tuple[str, str]:
        raise NotImplementedError

    def ensure_machine_group(self, region: str, ledger_id: str, allow_from: str) -> str:
        """A group for one machine (tagged with its ledger id), SSH from ``allow_from`` only.

        As on the other clouds: found again on a retry (by name, in gpudesk's VPC), nothing
        but gpudesk's own SSH rule is ever revoked in it, and :meth:`cleanup` deletes it once
        no machine still alive uses it.
        """
        cidr = base.single_address(allow_from)  # refuses 0.0.0.0/0 & co. before any call
        self._check_region(region)
        vpc_id, _ = self.ensure_network(region, "")
        name = MACHINE_GROUP_PREFIX + ledger_id
        found = [g for g in self._pages(region, "DescribeSecurityGroups", {
            "VpcId": vpc_id, "SecurityGroupName": name}, ("SecurityGroups", "SecurityGroup"))
            if g.get("SecurityGroupName") == name]
        if found:
            group_id = str(found[0]["SecurityGroupId"])
        else:
            group_id = str(self._ecs(region, "CreateSecurityGroup", {
                "SecurityGroupName": name, "VpcId": vpc_id,
                "Description": f"gpudesk: SSH to {ledger_id}",
                "Tag": ap.tag_list({base.TAG_MANAGED: "1", base.TAG_LEDGER: ledger_id}),
                "ClientToken": f"{name}-{vpc_id}"[:64]}, resource=name)["SecurityGroupId"])
        self.set_ssh_address(region, group_id, cidr)
        return group_id

    def _converge_rules(self, region: str, group_id: str, wanted: dict[str, str]) -> None:
        """Ingress: exactly ``wanted`` (a new basic group denies all other inbound)."""
        ingress = self._ingress(region, group_id)
        extra = [r for r in ingress if not ap.same_rule(r, wanted)]
        if extra:
            self._ecs(region, "RevokeSecurityGroup", {
                "SecurityGroupId": group_id,
                "SecurityGroupRuleId": [str(r["SecurityGroupRuleId"]) for r in extra]},
                resource=group_id)
        if not any(ap.same_rule(r, wanted) for r in ingress):
            self._ecs(region, "AuthorizeSecurityGroup", {
                "SecurityGroupId": group_id, "Permissions": [wanted]}, resource=group_id)

    def _ingress(self, region: str, group_id: str) -> list[dict[str, Any]]:
        answer = self._ecs(region, "DescribeSecurityGroupAttribute", {
            "SecurityGroupId": group_id, "Direction": "ingress"}, resource=group_id)
        rules = (answer.get("Permissions") or {}).get("Permission") or []
        return [r for r in rules if str(r.get("Direction", "ingress")) == "ingress"]

    def set_ssh_address(self, region: str, group_id: str, allow_from: str) -> list[str]:
        """Make gpudesk's SSH rule name ``allow_from`` only; return the addresses it replaced.

        Only rules carrying gpudesk's description are revoked.
        """
        cidr = base.single_address(allow_from)
        self._check_region(region)
        wanted = ap.ssh_permission(cidr)
        ingress = self._ingress(region, group_id)
        if not any(ap.same_rule(r, wanted) for r in ingress):
            self._ecs(region, "AuthorizeSecurityGroup", {
                "SecurityGroupId": group_id, "Permissions": [wanted]}, resource=group_id)
        old = [r for r in ingress if ap.is_gpudesk_rule(r) and not ap.same_rule(r, wanted)]
        if old:
            self._ecs(region, "RevokeSecurityGroup", {
                "SecurityGroupId": group_id,
                "SecurityGroupRuleId": [str(r["SecurityGroupRuleId"]) for r in old]},
                resource=group_id)
        return [ap.source_of(r) for r in old]

    def ssh_addresses(self, region: str, group_id: str) -> list[str]:
        """The addresses gpudesk's SSH rules in the group name (its description marks them)."""
        self._check_region(region)
        return [ap.source_of(r) for r in self._ingress(region, group_id)
                if ap.is_gpudesk_rule(r)]

    def leftovers(self, region: str) -> list[str]:
        """Every gpudesk-tagged key pair (name) and security group (id) still in ``region``."""
        self._check_region(region)
        tagged = [{"Key": base.TAG_MANAGED, "Value": "1"}]
        keys = [str(k.get("KeyPairName", "")) for k in self._pages(
            region, "DescribeKeyPairs", {"Tag": tagged}, ("KeyPairs", "KeyPair"))]
        groups = [str(g.get("SecurityGroupId", "")) for g in self._pages(
            region, "DescribeSecurityGroups", {"Tag": tagged},
            ("SecurityGroups", "SecurityGroup"))]
        return keys + groups
