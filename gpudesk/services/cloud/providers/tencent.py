"""Tencent Cloud CVM through tencentcloud-sdk-python (CVM and VPC 2017-03-12).

Every request goes through :meth:`TencentProvider._call`: one place that signs
(the SDK, TC3-HMAC-SHA256), retries ``RequestLimitExceeded`` with exponential
backoff and turns every SDK exception into a typed :class:`ProviderError`, so
no ``TencentCloudSDKException`` ever leaves this module.

Choices worth knowing:

* ``verify`` calls DescribeRegions (signed, cheap). CVM does not say which
  account a key belongs to, so ``Identity.account`` is empty and
  ``principal`` is the masked SecretId. ``can_launch`` comes from a complete
  RunInstances ``DryRun`` (a zone and type the region sells, a public image of
  the region): DryRunOperation means the key may launch, UnauthorizedOperation
  that it may not; any other answer is "could not check" (``launch_check``).
* A launch without a zone tries the zones that DescribeZoneInstanceConfigInfos
  says sell the type, cheapest first, and says why each refused.
* ``max_price`` is CNY/hour. A spot request without one bids the zone's
  on-demand price (Tencent never charges spot above it).
* ``stop`` keeps billing the machine by default (``KEEP_CHARGING``): a GPU
  released with ``STOP_CHARGING`` may not be there to start again. Each machine's
  ``StopChargingMode`` is read back (``CloudInstance.stopped_mode``): the ledger
  counts a stopped machine that keeps charging at its full price. ``stop_warning``
  says before a stop when it cannot end the bill (spot, prepaid, local disks);
  ``stop_note`` says after it what still bills.
* Key pairs are returned by KeyId (``skey-…``), which RunInstances needs.
"""

from __future__ import annotations

import base64
import hashlib
import math
import time
from collections.abc import Iterator
from datetime import UTC
from datetime import datetime
from typing import Any

from tencentcloud.common import credential
from tencentcloud.common.profile.client_profile import ClientProfile
from tencentcloud.common.profile.http_profile import HttpProfile
from tencentcloud.cvm.v20170312.cvm_client import CvmClient
from tencentcloud.vpc.v20170312.vpc_client import VpcClient

from gpudesk.services.cloud.providers import base
from gpudesk.services.cloud.providers import tencent_parse as tp
from gpudesk.services.cloud.providers.sdk_provider import SdkProvider
from gpudesk.services.cloud.providers.sdk_provider import ssh_group_name
from gpudesk.services.cloud.providers.tencent_errors import MSG_ALREADY_STOPPED_CHARGING
from gpudesk.services.cloud.providers.tencent_errors import MSG_NEED_GROUP
from gpudesk.services.cloud.providers.tencent_errors import MSG_NEED_SPOT_PRICE
from gpudesk.services.cloud.providers.tencent_errors import MSG_STOP_CANNOT_STOP_CHARGING
from gpudesk.services.cloud.providers.tencent_errors import MSG_STOPPED_KEEPS_CHARGING
from gpudesk.services.cloud.providers.tencent_errors import MSG_STOPPED_NO_CHARGE
from gpudesk.services.cloud.providers.tencent_errors import PROVIDER_LABEL
from gpudesk.services.cloud.providers.tencent_errors import CallContext
from gpudesk.services.cloud.providers.tencent_errors import error
from gpudesk.services.cloud.providers.tencent_errors import is_throttle
from gpudesk.services.cloud.providers.tencent_errors import map_error
from gpudesk.services.cloud.providers.tencent_errors import sdk_answer
from gpudesk.services.cloud.providers.tencent_groups import MachineGroups
from gpudesk.services.cloud.providers.tencent_keep_alive import TencentKeepAlive

REQ_TIMEOUT_S = 30
PAGE = 100  # the most DescribeInstances & co. return per call
BANDWIDTH_OUT_MBPS = 100
STOP_KEEP_CHARGING = "KEEP_CHARGING"
STOP_CHARGING = "STOP_CHARGING"  # releases CPU/GPU while stopped; restart may find none free
_IMAGE_PLATFORM = "Ubuntu"


class TencentProvider(SdkProvider[CallContext], MachineGroups, TencentKeepAlive):
    """Tencent Cloud CVM behind gpudesk's Provider interface. Blocking; call off the GUI thread.

    Takes :class:`SdkProvider`'s options; ``stopped_mode`` defaults to KEEP_CHARGING.
    """

    name: base.ProviderName = "tencent"
    label = PROVIDER_LABEL
    default_stopped_mode = STOP_KEEP_CHARGING
    home_region = "ap-guangzhou"
    need_group_message = MSG_NEED_GROUP
    _is_throttle = staticmethod(is_throttle)
    _map_error = staticmethod(map_error)

    # ------------------------------------------------------------------ plumbing

    def _client(self, service: str, region: str) -> Any:
        with self._lock:
            client = self._clients.get((service, region))
            if client is None:
                http = HttpProfile(protocol=self._protocol, reqTimeout=REQ_TIMEOUT_S,
                                   endpoint=self._endpoint or f"{service}.tencentcloudapi.com")
                # No region breaker: it would fail over to ap-guangzhou's domain, and with
                # a local endpoint it swallows transport errors (returns None).
                profile = ClientProfile(httpProfile=http, language="en-US",
                                        disable_region_breaker=True)
                cred = credential.Credential(self._credentials.key_id, self._credentials.secret,
                                             self._credentials.session_token or None)
                cls = CvmClient if service == "cvm" else VpcClient
                client = cls(cred, region, profile)
                self._clients[(service, region)] = client
            return client

    def close(self) -> None:
        """Close the SDK's HTTP sessions (idempotent)."""
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            session = getattr(getattr(client.request, "conn", None), "_session", None)
            if session is not None:
                session.close()

    def _call(self, ctx: CallContext, params: dict[str, Any],
              ok_codes: frozenset[str] = frozenset()) -> dict[str, Any]:
        """One API call: signed by the SDK, throttling retried, errors typed.

        A code in ``ok_codes`` (DryRunOperation, "already stopped") is an answer,
        returned as ``{"Code": code}``.
        """
        return self._retrying(ctx, lambda: sdk_answer(
            lambda: self._client(ctx.service, ctx.region).call_json(ctx.action, params)),
            ok_codes)

    def _cvm(self, region: str, action: str, params: dict[str, Any], **ctx: Any) -> dict[str, Any]:
        return self._call(CallContext("cvm", action, region, **ctx), params)

    def _vpc(self, region: str, action: str, params: dict[str, Any], **ctx: Any) -> dict[str, Any]:
        return self._call(CallContext("vpc", action, region, **ctx), params)

    def _pages(self, region: str, action: str, params: dict[str, Any], items: str, *,
               as_text: bool = False) -> Iterator[dict[str, Any]]:
        """Every item of a paged Describe call (VPC wants Offset/Limit as strings)."""
        offset = 0
        while True:
            page = dict(params, Offset=str(offset) if as_text else offset,
                        Limit=str(PAGE) if as_text else PAGE)
            call = self._vpc if action == "DescribeSecurityGroups" else self._cvm
            answer = call(region, action, page)
            batch = answer.get(items) or []
            yield from batch
            offset += len(batch)
            if not batch or offset >= int(answer.get("TotalCount") or 0):
                return

    # ------------------------------------------------------------------ Provider

    def _signed_ping(self, region: str) -> None:
        self._cvm(region, "DescribeRegions", {})

    def _launch_check(self, region: str) -> tuple[base.LaunchCheck, str]:
        """A complete RunInstances DryRun: a zone and type the region sells, a real image.

        DryRun checks parameters, rules and stock as well as CAM, so only its two
        documented answers decide: DryRunOperation (or a plain answer) means allowed,
        UnauthorizedOperation denied. Anything else, or a dry run that could not be
        put together, is "unknown" with the cloud's words.
        """
        try:
            selling = [o for o in self._offers(region, sorted(self._known_types),
                                               [tp.CHARGE_ON_DEMAND]) if o.available]
            if not selling:
                return "unknown", f"no GPU type gpudesk knows is on sale in {region}"
            pick = min(selling, key=lambda o: (o.price_per_hour, o.zone, o.instance_type))
            image = self.find_image(region, pick.instance_type)
        except base.ProviderError as err:  # the dry run could not be put together
            if err.kind in ("auth", "clock", "network", "throttled"):
                raise
            return "unknown", err.detail or err.message()
        try:
            self._call(CallContext("cvm", "RunInstances", region, zone=pick.zone,
                                   instance_type=pick.instance_type), {
                "DryRun": True, "InstanceChargeType": tp.CHARGE_ON_DEMAND,
                "InstanceType": pick.instance_type, "ImageId": image,
                "Placement": {"Zone": pick.zone, "ProjectId": 0},
                "SystemDisk": {"DiskType": "CLOUD_PREMIUM", "DiskSize": 100},
                "InternetAccessible": {"PublicIpAssigned": True,
                                       "InternetChargeType": "TRAFFIC_POSTPAID_BY_HOUR",
                                       "InternetMaxBandwidthOut": BANDWIDTH_OUT_MBPS},
                "InstanceCount": 1}, ok_codes=frozenset({"DryRunOperation"}))
        except base.ProviderError as err:
            if err.kind in ("auth", "clock", "network", "throttled"):
                raise
            if err.detail.startswith(("[UnauthorizedOperation", "[AuthFailure.Unauthorized")):
                return "denied", err.detail
            return "unknown", err.detail or err.message()
        return "allowed", ""

    def ensure_key_pair(self, region: str, name: str, public_key: str) -> str:
        self._check_region(region)
        legal = tp.key_name(name)
        existing = self._key_pair(region, legal)
        if existing and not tp.same_public_key(str(existing.get("PublicKey") or public_key),
                                               public_key):
            # Same name, another key: never hand out a key the user cannot log in with.
            legal = tp.key_name(f"{name}-{tp.key_digest(public_key)}")
            existing = self._key_pair(region, legal)
        if existing:
            return str(existing["KeyId"])
        params = {"KeyName": legal, "ProjectId": 0, "PublicKey": public_key.strip(),
                  "TagSpecification": [{"ResourceType": "keypair",
                                        "Tags": tp.tag_list({base.TAG_MANAGED: "1"})}]}
        try:
            return str(self._cvm(region, "ImportKeyPair", params, resource=legal)["KeyId"])
        except base.ProviderError:
            raced = self._key_pair(region, legal)  # another gpudesk imported it meanwhile
            if raced:
                return str(raced["KeyId"])
            raise

    def _key_pair(self, region: str, legal: str) -> dict[str, Any] | None:
        answer = self._cvm(region, "DescribeKeyPairs", {
            "Filters": [{"Name": "key-name", "Values": [legal]}], "Limit": PAGE})
        return next((k for k in answer.get("KeyPairSet") or [] if k.get("KeyName") == legal),
                    None)

    def ensure_security_group(self, region: str, allow_from: str) -> str:
        cidr = base.single_address(allow_from)  # refuses 0.0.0.0/0 & co. before any call
        self._check_region(region)
        group_id = self._named_group(region, ssh_group_name(cidr),
                                     f"gpudesk: SSH from {cidr} only", {base.TAG_MANAGED: "1"})
        self._converge_rules(region, group_id, tp.ssh_rule(cidr))
        return group_id

    def _converge_rules(self, region: str, group_id: str, wanted: dict[str, str]) -> None:
        """Ingress: exactly ``wanted``; egress: at least ALL/ACCEPT (an empty set denies all)."""
        policies = self._vpc(region, "DescribeSecurityGroupPolicies",
                             {"SecurityGroupId": group_id}, resource=group_id)
        rules = policies.get("SecurityGroupPolicySet") or {}
        ingress, egress = rules.get("Ingress") or [], rules.get("Egress") or []
        extra = [r for r in ingress if not tp.same_rule(r, wanted)]
        if extra:
            self._vpc(region, "DeleteSecurityGroupPolicies", {
                "SecurityGroupId": group_id, "SecurityGroupPolicySet": {
                    "Ingress": [{"PolicyIndex": r["PolicyIndex"]} for r in extra]}},
                resource=group_id)
        if not any(tp.same_rule(r, wanted) for r in ingress):
            self._vpc(region, "CreateSecurityGroupPolicies", {
                "SecurityGroupId": group_id,
                "SecurityGroupPolicySet": {"Ingress": [wanted]}}, resource=group_id)
        missing = [r for r in tp.EGRESS_RULES if not any(tp.same_rule(e, r) for e in egress)]
        if missing:
            self._vpc(region, "CreateSecurityGroupPolicies", {
                "SecurityGroupId": group_id,
                "SecurityGroupPolicySet": {"Egress": list(missing)}}, resource=group_id)

    def find_image(self, region: str, instance_type: str) -> str:
        self._check_region(region)
        answer = self._cvm(region, "DescribeImages", {
            "Filters": [{"Name": "image-type", "Values": ["PUBLIC_IMAGE"]},
                        {"Name": "platform", "Values": [_IMAGE_PLATFORM]}],
            "InstanceType": instance_type, "Limit": PAGE}, instance_type=instance_type)
        return self._gpu_image(tp.newest_gpu_image(answer.get("ImageSet") or []), region)

    def login_user(self, region: str, image_id: str = "") -> str:
        """Who logs in on ``image_id`` ("": the Ubuntu image :meth:`find_image` picks): CVM's
        Ubuntu images log in as ``ubuntu``, its other Linux images as ``root``; "" for an
        image CVM no longer describes (not known, so not guessed)."""
        if not image_id:
            return "ubuntu"
        self._check_region(region)
        found = self._cvm(region, "DescribeImages", {"ImageIds": [image_id]},
                          resource=image_id).get("ImageSet") or []
        if not found:
            return ""
        text = " ".join(str(i.get(k) or "") for i in found for k in ("Platform", "OsName"))
        return "ubuntu" if "ubuntu" in text.lower() else "root"

    def zone_choices(self, region: str, instance_type: str,
                     market: base.Market = "on-demand") -> list[base.ZoneChoice]:
        """Every zone of ``region`` and whether it sells ``instance_type`` now, in CVM's words.

        Zones that sell it come first, cheapest first; a zone not AVAILABLE (DescribeZones)
        or whose item is SOLD_OUT (DescribeZoneInstanceConfigInfos) carries the reason.
        """
        self._check_region(region)
        states = {str(z.get("Zone")): str(z.get("ZoneState", ""))
                  for z in self._cvm(region, "DescribeZones", {}).get("ZoneSet") or []}
        charge = tp.CHARGE_SPOT if market == "spot" else tp.CHARGE_ON_DEMAND
        offers = [o for o in self._offers(region, [instance_type], [charge])
                  if o.instance_type == instance_type]
        selling: list[tuple[float, str]] = []
        refused: list[base.ZoneChoice] = []
        for offer in offers:
            state = states.get(offer.zone, "AVAILABLE")
            if state != "AVAILABLE":
                refused.append(base.ZoneChoice(offer.zone, False, f"zone {state}"))
            elif offer.available:
                selling.append((offer.price_per_hour, offer.zone))
            else:
                refused.append(base.ZoneChoice(offer.zone, False, offer.reason or "SOLD_OUT"))
        listed = {o.zone for o in offers}
        refused += [base.ZoneChoice(z, False, f"{instance_type} not offered")
                    for z in sorted(states) if z not in listed]
        return [base.ZoneChoice(z, True) for _, z in sorted(selling)] + refused

    def first_available_zone(self, region: str, instance_type: str = "",
                             market: base.Market = "on-demand") -> str:
        """The first zone that sells ``instance_type`` (any AVAILABLE zone without one)."""
        if instance_type:
            return super().first_available_zone(region, instance_type, market)
        self._check_region(region)
        zones = self._cvm(region, "DescribeZones", {}).get("ZoneSet") or []
        for zone in zones:
            if zone.get("ZoneState") == "AVAILABLE":
                return str(zone["Zone"])
        raise base.ProviderError("capacity", base.MSG_CAPACITY, provider=PROVIDER_LABEL,
                                 instance_type="machine", where=region)

    def run_instance(self, request: base.LaunchRequest) -> base.CloudInstance:
        region = request.region
        group, zone = self._launch_place(request)
        ctx: dict[str, Any] = {"zone": zone, "instance_type": request.instance_type,
                               "max_price": request.max_price}
        params: dict[str, Any] = {
            "InstanceChargeType": tp.CHARGE_ON_DEMAND,
            "Placement": {"Zone": zone, "ProjectId": 0},
            "InstanceType": request.instance_type,
            "ImageId": request.image_id or self.find_image(region, request.instance_type),
            "SystemDisk": {"DiskType": "CLOUD_PREMIUM", "DiskSize": request.disk_gb},
            "InternetAccessible": {"PublicIpAssigned": True,
                                   "InternetChargeType": "TRAFFIC_POSTPAID_BY_HOUR",
                                   "InternetMaxBandwidthOut": BANDWIDTH_OUT_MBPS},
            "InstanceCount": 1,
            "InstanceName": f"{base.RESOURCE_PREFIX}{request.ledger_id}"[:128],
            "SecurityGroupIds": [group],
            "ClientToken": client_token(request),
            "TagSpecification": [{"ResourceType": "instance",
                                  "Tags": tp.tag_list(request.tags())}],
        }
        if request.key_name:
            params["LoginSettings"] = {"KeyIds": [request.key_name]}
        if request.cloud_timer_at is not None:  # the cap CVM enforces itself (issue 12)
            params["ActionTimer"] = action_timer(request.cloud_timer_at)
        if request.user_data:
            from gpudesk.services.cloud.providers.user_data import encode  # gzip: 16 KB base64
            params["UserData"] = base64.b64encode(encode("tencent", request.user_data)).decode()
        if request.instance_role:  # RunInstances CamRoleName: bound at creation
            params["CamRoleName"] = request.instance_role
        if request.market == "spot":
            bid = request.max_price
            if bid is None:
                bid = self._on_demand_price(region, zone, request.instance_type)
            params["InstanceChargeType"] = tp.CHARGE_SPOT
            params["InstanceMarketOptions"] = {
                "MarketType": "spot",
                "SpotOptions": {"MaxPrice": f"{bid:.4f}".rstrip("0").rstrip("."),
                                "SpotInstanceType": "one-time"}}
        answer = self._cvm(region, "RunInstances", params, **ctx)
        return self._launched(request, zone, [str(i) for i in answer.get("InstanceIdSet") or []])

    def _on_demand_price(self, region: str, zone: str, instance_type: str) -> float:
        for offer in self._offers(region, [instance_type], [tp.CHARGE_ON_DEMAND], zone):
            if offer.price_per_hour > 0:
                return offer.price_per_hour
        raise base.ProviderError("invalid", MSG_NEED_SPOT_PRICE, instance_type=instance_type,
                                 where=zone)

    def describe(self, region: str, cloud_ids: list[str]) -> list[base.CloudInstance]:
        self._check_region(region)
        wanted = [i for i in dict.fromkeys(cloud_ids) if tp.INSTANCE_ID_RE.match(i)]
        found: list[base.CloudInstance] = []
        for start in range(0, len(wanted), PAGE):
            chunk = wanted[start:start + PAGE]
            answer = self._cvm(region, "DescribeInstances",
                               {"InstanceIds": chunk, "Limit": PAGE})
            found += [tp.parse_instance(raw, region) for raw in answer.get("InstanceSet") or []]
        return found

    def _managed_raw(self, region: str) -> list[dict[str, Any]]:
        return list(self._pages(region, "DescribeInstances", {
            "Filters": [{"Name": "tag-key", "Values": [base.TAG_MANAGED]}]}, "InstanceSet"))

    def list_managed(self, region: str) -> list[base.CloudInstance]:
        self._check_region(region)
        return [tp.parse_instance(raw, region) for raw in self._managed_raw(region)]

    def action_timers(self, region: str, cloud_id: str) -> list[dict[str, Any]]:
        """The machine's pending (UNDO) action timers, as CVM describes them."""
        self._check_region(region)
        answer = self._cvm(region, "DescribeInstancesActionTimer", {
            "InstanceIds": [cloud_id], "StatusList": ["UNDO"]}, resource=cloud_id)
        return [t for t in answer.get("ActionTimers") or [] if isinstance(t, dict)]

    def guard_at(self, region: str, cloud_id: str) -> float | None:
        """The moment CVM itself will terminate the machine (its earliest pending
        TerminateInstances ActionTimer, DescribeInstancesActionTimer), None when none: what
        the ledger records after each change, never what was only asked for."""
        times = [tp.parse_time(str(t.get("ActionTime") or ""))
                 for t in self.action_timers(region, cloud_id)
                 if t.get("TimerAction", "TerminateInstances") == "TerminateInstances"]
        found = [t for t in times if t is not None]
        return min(found) if found else None

    def set_guard(self, region: str, cloud_id: str, action: str, market: str,
                  timer_at: float | None = None) -> None:
        """Keep the cloud-side cap current: drop the pending timers, import the new one.

        CVM refuses a second timer (FailedOperation.MutActionTimerExist), so the old one
        goes first; if the import then fails the machine may have no timer at all, which
        is why guard.apply reads the cloud's timers back (:meth:`guard_at`) after any
        change, failed or not, and records only those."""
        del action, market  # CVM's timer only terminates; guard.plan decided whether to set it
        old = [str(t.get("ActionTimerId")) for t in self.action_timers(region, cloud_id)
               if t.get("ActionTimerId")]
        if old:
            self._cvm(region, "DeleteInstancesActionTimer", {"ActionTimerIds": old},
                      resource=cloud_id)
        if timer_at is not None:
            self._cvm(region, "ImportInstancesActionTimer", {
                "InstanceIds": [cloud_id], "ActionTimer": action_timer(timer_at)},
                resource=cloud_id)

    def stop(self, region: str, cloud_id: str, *, stopped_mode: str | None = None) -> None:
        """Stop; ``stopped_mode=STOP_CHARGING`` stops the bill too but may lose the GPU.

        "Already stopped" (or stopping) is done only when the machine's own
        StopChargingMode is what was asked: a machine shut down from inside keeps
        charging, and answering that stop with success would hide the bill.
        """
        self._check_region(region)
        mode = stopped_mode or self._stopped_mode
        answer = self._call(CallContext("cvm", "StopInstances", region, resource=cloud_id), {
            "InstanceIds": [cloud_id], "StopType": "SOFT_FIRST", "StoppedMode": mode},
            ok_codes=frozenset({"UnsupportedOperation.InstanceStateStopped",
                                "UnsupportedOperation.InstanceStateStopping"}))
        code = str(answer.get("Code") or "")
        if not code or mode != STOP_CHARGING:
            return
        word = str(self._raw(region, cloud_id).get("StopChargingMode") or "")
        if word != STOP_CHARGING:
            raise base.ProviderError("invalid", MSG_ALREADY_STOPPED_CHARGING,
                                     f"[{code}] StopChargingMode={word or '?'}",
                                     name=cloud_id, mode=word or "?")

    def _raw(self, region: str, cloud_id: str) -> dict[str, Any]:
        """The machine as DescribeInstances lists it ({} when CVM no longer has it)."""
        answer = self._cvm(region, "DescribeInstances", {"InstanceIds": [cloud_id],
                                                          "Limit": PAGE}, resource=cloud_id)
        return next(iter(answer.get("InstanceSet") or []), {})

    def stop_warning(self, region: str, cloud_id: str) -> str:
        """Before a stop: why it cannot end the compute bill, in words ("" when it can)."""
        self._check_region(region)
        if self._stopped_mode != STOP_CHARGING:
            why = f"StoppedMode {self._stopped_mode}"
        else:
            why = tp.stop_charging_refusal(self._raw(region, cloud_id))
        if not why:
            return ""
        return MSG_STOP_CANNOT_STOP_CHARGING.format(name=cloud_id, why=why)

    def stop_note(self, region: str, cloud_id: str) -> str:
        """After a stop: what still bills, from the machine's own StopChargingMode."""
        self._check_region(region)
        word = str(self._raw(region, cloud_id).get("StopChargingMode") or "")
        if word == STOP_CHARGING:
            return MSG_STOPPED_NO_CHARGE
        return MSG_STOPPED_KEEPS_CHARGING.format(mode=word or STOP_KEEP_CHARGING)

    def start(self, region: str, cloud_id: str) -> None:
        self._instance_action(region, cloud_id, "StartInstances", {}, ("Running", "Starting"))

    def terminate(self, region: str, cloud_id: str) -> None:
        self._instance_action(region, cloud_id, "TerminateInstances", {},
                              ("Terminating", "Terminated"))

    def _instance_action(self, region: str, cloud_id: str, action: str,
                         extra: dict[str, Any], done_states: tuple[str, ...]) -> None:
        """Already in the wanted state counts as done: retries and double clicks are safe."""
        self._check_region(region)
        ok = frozenset(f"UnsupportedOperation.InstanceState{s}" for s in done_states)
        self._call(CallContext("cvm", action, region, resource=cloud_id),
                   {"InstanceIds": [cloud_id], **extra}, ok_codes=ok)

    def cleanup(self, region: str) -> list[str]:
        """Delete gpudesk-tagged key pairs and groups that no machine still alive refers to."""
        self._check_region(region)
        alive = [raw for raw in self._managed_raw(region)
                 if tp.state_of(str(raw.get("InstanceState", ""))) != base.STATE_TERMINATED]
        used_keys = {k for raw in alive for k in (raw.get("LoginSettings") or {}).get("KeyIds")
                     or []}
        used_groups = {g for raw in alive for g in raw.get("SecurityGroupIds") or []}
        alive_ids = {str(raw.get("InstanceId", "")) for raw in alive}
        tagged = [{"Name": "tag-key", "Values": [base.TAG_MANAGED]}]
        deleted: list[str] = []
        for key in list(self._pages(region, "DescribeKeyPairs", {"Filters": tagged},
                                    "KeyPairSet")):
            key_id = str(key.get("KeyId", ""))
            # A key still naming a machine that is going or gone is asked anyway: the
            # cloud's ResourceInUse, not a stale association, says when it must wait.
            if key_id in used_keys or alive_ids & set(key.get("AssociatedInstanceIds") or []):
                continue
            if self._try_delete(CallContext("cvm", "DeleteKeyPairs", region, resource=key_id),
                                {"KeyIds": [key_id]}):
                deleted.append(key_id)
        for group in list(self._pages(region, "DescribeSecurityGroups", {"Filters": tagged},
                                      "SecurityGroupSet", as_text=True)):
            group_id = str(group.get("SecurityGroupId", ""))
            if group_id in used_groups:
                continue
            if self._try_delete(CallContext("vpc", "DeleteSecurityGroup", region,
                                            resource=group_id), {"SecurityGroupId": group_id}):
                deleted.append(group_id)
        return deleted

    def live_offers(self, region: str) -> list[base.LiveOffer]:
        self._check_region(region)
        return self._offers(region, sorted(self._known_types),
                            [tp.CHARGE_ON_DEMAND, tp.CHARGE_SPOT])

    def spot_price_history(self, region: str, zone: str, instance_type: str,
                           since: float) -> list[base.PricePoint]:
        """CVM publishes no spot price history: the spot price quoted now, stamped now."""
        self._check_region(region)
        now = time.time()
        return [base.PricePoint(now, o.price_per_hour, o.currency) for o in
                self._offers(region, [instance_type], [tp.CHARGE_SPOT], zone)
                if o.instance_type == instance_type and o.market == "spot"][:1]

    def _offers(self, region: str, types: list[str], charges: list[str],
                zone: str = "") -> list[base.LiveOffer]:
        filters = [{"Name": "instance-type", "Values": types},
                   {"Name": "instance-charge-type", "Values": charges}]
        if zone:
            filters.append({"Name": "zone", "Values": [zone]})
        answer = self._cvm(region, "DescribeZoneInstanceConfigInfos", {"Filters": filters},
                           zone=zone)
        offers = (tp.parse_offer(item, region) for item in answer.get("InstanceTypeQuotaSet")
                  or [])
        return [o for o in offers if o is not None]

    def inquiry_price(self, request: base.LaunchRequest) -> float:
        """CNY/hour Tencent quotes for ``request`` (InquiryPriceRunInstances), instance only."""
        base.validate_request("tencent", request, self._regions, self._known_types)
        zone = request.zone or self.first_available_zone(request.region, request.instance_type,
                                                          request.market)
        params: dict[str, Any] = {
            "Placement": {"Zone": zone}, "InstanceType": request.instance_type,
            "ImageId": request.image_id or self.find_image(request.region,
                                                           request.instance_type),
            "InstanceChargeType": tp.CHARGE_SPOT if request.market == "spot"
            else tp.CHARGE_ON_DEMAND,
            "SystemDisk": {"DiskType": "CLOUD_PREMIUM", "DiskSize": request.disk_gb}}
        answer = self._cvm(request.region, "InquiryPriceRunInstances", params, zone=zone,
                           instance_type=request.instance_type)
        price = tp.price_of({"Price": (answer.get("Price") or {}).get("InstancePrice") or {}})
        if price is None:
            raise error("other", base.MSG_OTHER, "InquiryPriceRunInstances quoted no price",
                        provider=PROVIDER_LABEL)
        return price


def action_timer(at: float) -> dict[str, str]:
    """CVM's ActionTimer: terminate at ``at`` (UTC, ISO 8601, whole seconds)."""
    when = datetime.fromtimestamp(math.floor(at), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"TimerAction": "TerminateInstances", "ActionTime": when}


def client_token(request: base.LaunchRequest) -> str:
    """At most 64 ASCII characters; the same request always sends the same token."""
    token = request.client_token or f"{base.RESOURCE_PREFIX}{request.ledger_id}"
    if token.isascii() and len(token) <= 64:
        return token
    return base.RESOURCE_PREFIX + hashlib.sha256(token.encode()).hexdigest()[:56]
