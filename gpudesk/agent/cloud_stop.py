"""Stop or terminate this machine through its cloud's own API, with no key on the machine.

The ``instance-role`` enforcer: the desktop gave the machine a role that may only stop or
terminate itself (an EC2 instance profile, a CVM CAM role, an ECS RAM role). At the budget
the agent runs this module (rules.json names it as the action's command, see
:data:`COMMAND`); it reads the role's short-lived credentials from the machine's metadata
service and signs the cloud's call itself:

* AWS: IMDSv2 (``PUT /latest/api/token``, then
  ``/latest/meta-data/iam/security-credentials/<role>``), EC2 Query API
  ``StopInstances``/``TerminateInstances`` signed with SigV4 and the session token;
* Tencent Cloud: ``/latest/meta-data/cam/security-credentials/<role>``, CVM
  ``StopInstances`` with ``StoppedMode=STOP_CHARGING`` (the compute stops billing) or
  ``TerminateInstances``, signed TC3-HMAC-SHA256 with ``X-TC-Token``;
* Alibaba Cloud: ``/latest/meta-data/ram/security-credentials/<role>`` (with the
  metadata token where the machine's metadata is hardened), ECS ``StopInstances`` with
  ``StoppedMode=StopCharging`` or ``DeleteInstances`` (``Force``), signed
  ACS3-HMAC-SHA256 with ``x-acs-security-token``.

The credentials live in this process's memory only: never in a file, a log line, argv or
the environment. The instance id and region come from the metadata too unless given.
Exit status 0 means the cloud accepted the call; anything else makes the guard try again
(with backoff). stdlib only: this runs on the rented machine (Python 3.6+).

Run as ``python3 cloud_stop.py --provider aws --role gpudesk-self-stop --action stop``;
``--metadata``/``--endpoint`` point it elsewhere (tests).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import hmac
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from typing import Callable
from typing import Dict
from typing import List
from typing import Mapping
from typing import Optional
from typing import Sequence
from typing import Tuple

PROVIDERS = ("aws", "tencent", "aliyun")
ACTIONS = ("stop", "terminate")
METADATA = {"aws": "http://169.254.169.254", "tencent": "http://metadata.tencentyun.com",
            "aliyun": "http://100.100.100.200"}
# argv[0] of a rules.json command that means "this module, with the agent's own python"
COMMAND = "gpudesk-cloud-stop"
TIMEOUT_S = 10.0
AWS_EC2_VERSION = "2016-11-15"
CVM_VERSION = "2017-03-12"
ECS_VERSION = "2014-05-26"
POWEROFF = ("sudo", "-n", "shutdown", "-h", "now")


class CloudStopError(Exception):
    """The stop could not be asked for; the message says why (never a secret)."""


class Creds:
    """A role's short-lived credentials; ``repr`` never shows the secret or the token."""

    __slots__ = ("key_id", "secret", "token", "expiration")

    def __init__(self, key_id: str, secret: str, token: str, expiration: str = "") -> None:
        self.key_id, self.secret, self.token, self.expiration = key_id, secret, token, expiration

    def __repr__(self) -> str:
        return f"Creds(key_id={self.key_id[:4]}…, expiration={self.expiration!r})"

    __str__ = __repr__


# ------------------------------------------------------------------ metadata service

class Metadata:
    """The machine's metadata service (``base`` configurable: tests serve 127.0.0.1)."""

    def __init__(self, provider: str, base: str = "", timeout: float = TIMEOUT_S) -> None:
        if provider not in PROVIDERS:
            raise CloudStopError(f"unknown provider {provider!r}")
        self.provider = provider
        self.base = (base or METADATA[provider]).rstrip("/")
        self.timeout = timeout
        self._token: Optional[str] = None

    def _open(self, req: urllib.request.Request) -> str:
        # the metadata service is link-local: never through a proxy
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(req, timeout=self.timeout) as resp:
            return str(resp.read().decode("utf-8"))

    def _session_token(self) -> Dict[str, str]:
        """IMDSv2 (AWS) or the hardened mode (Aliyun) token header; Tencent needs none."""
        if self.provider == "tencent":
            return {}
        name = {"aws": "X-aws-ec2-metadata-token",
                "aliyun": "X-aliyun-ecs-metadata-token"}[self.provider]
        if self._token is None:
            ttl = {"aws": "X-aws-ec2-metadata-token-ttl-seconds",
                   "aliyun": "X-aliyun-ecs-metadata-token-ttl-seconds"}[self.provider]
            req = urllib.request.Request(self.base + "/latest/api/token", data=b"",
                                         method="PUT", headers={ttl: "300"})
            try:
                self._token = self._open(req).strip()
            except (urllib.error.URLError, OSError):
                if self.provider == "aws":
                    raise CloudStopError("the instance metadata service gave no IMDSv2 "
                                         "token") from None
                self._token = ""  # Aliyun in normal mode: no token needed
        return {name: self._token} if self._token else {}

    def get(self, path: str) -> str:
        req = urllib.request.Request(self.base + "/latest/meta-data/" + path.lstrip("/"),
                                     headers=self._session_token())
        try:
            return self._open(req).strip()
        except urllib.error.HTTPError as exc:
            raise CloudStopError(f"metadata {path}: HTTP {exc.code}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise CloudStopError(f"metadata {path}: {type(exc).__name__}") from None

    def credentials(self, role: str) -> Creds:
        folder = {"aws": "iam", "tencent": "cam", "aliyun": "ram"}[self.provider]
        if not role or "/" in role:
            raise CloudStopError(f"not a role name: {role!r}")
        text = self.get(f"{folder}/security-credentials/{urllib.parse.quote(role)}")
        try:
            data = json.loads(text)
        except ValueError:
            raise CloudStopError(f"the {folder} credentials of {role} are not JSON") from None
        if not isinstance(data, dict) or str(data.get("Code", "Success")) != "Success":
            code = data.get("Code") if isinstance(data, dict) else "?"
            raise CloudStopError(f"the metadata refused the role {role}'s credentials: {code}")
        keys = {"aws": ("AccessKeyId", "SecretAccessKey", "Token"),
                "tencent": ("TmpSecretId", "TmpSecretKey", "Token"),
                "aliyun": ("AccessKeyId", "AccessKeySecret", "SecurityToken")}[self.provider]
        values = [data.get(k) for k in keys]
        if not all(isinstance(v, str) and v for v in values):
            raise CloudStopError(f"the credentials of role {role} lack "
                                 f"{', '.join(keys[i] for i in range(3) if not values[i])}")
        return Creds(str(values[0]), str(values[1]), str(values[2]),
                     str(data.get("Expiration", "")))

    def instance_id(self) -> str:
        return self.get("instance-id")

    def region(self) -> str:
        if self.provider == "aliyun":
            return self.get("region-id")
        return self.get("placement/region")


# ------------------------------------------------------------------ signing

def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _hmac(key: bytes, msg: str) -> bytes:
    return hmac.new(key, msg.encode("utf-8"), hashlib.sha256).digest()


def _host(url: str) -> str:
    return urllib.parse.urlsplit(url).netloc


def aws_sigv4(creds: Creds, region: str, url: str, body: bytes, now: float,
              service: str = "ec2") -> Dict[str, str]:
    """The headers of a SigV4-signed ``POST url`` with a form body (EC2 Query API)."""
    stamp = _dt.datetime.fromtimestamp(now, _dt.timezone.utc)
    amz_date, day = stamp.strftime("%Y%m%dT%H%M%SZ"), stamp.strftime("%Y%m%d")
    headers = {"content-type": "application/x-www-form-urlencoded; charset=utf-8",
               "host": _host(url), "x-amz-date": amz_date}
    if creds.token:
        headers["x-amz-security-token"] = creds.token
    signed = ";".join(sorted(headers))
    path = urllib.parse.urlsplit(url).path or "/"
    canonical = "\n".join(["POST", path, "",
                           "".join(f"{k}:{headers[k].strip()}\n" for k in sorted(headers)),
                           signed, _sha256(body)])
    scope = f"{day}/{region}/{service}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope,
                         _sha256(canonical.encode("utf-8"))])
    key = _hmac(_hmac(_hmac(_hmac(("AWS4" + creds.secret).encode(), day), region), service),
                "aws4_request")
    signature = hmac.new(key, to_sign.encode("utf-8"), hashlib.sha256).hexdigest()
    headers["authorization"] = (f"AWS4-HMAC-SHA256 Credential={creds.key_id}/{scope}, "
                                f"SignedHeaders={signed}, Signature={signature}")
    return headers


def tc3_headers(creds: Creds, action: str, region: str, url: str, body: bytes, now: float,
                service: str = "cvm", version: str = CVM_VERSION) -> Dict[str, str]:
    """The headers of a TC3-HMAC-SHA256-signed Tencent Cloud API call with the role token."""
    timestamp = int(now)
    day = _dt.datetime.fromtimestamp(timestamp, _dt.timezone.utc).strftime("%Y-%m-%d")
    content_type = "application/json; charset=utf-8"
    host = _host(url)
    canonical = "\n".join(["POST", "/", "", f"content-type:{content_type}\nhost:{host}\n",
                           "content-type;host", _sha256(body)])
    scope = f"{day}/{service}/tc3_request"
    to_sign = "\n".join(["TC3-HMAC-SHA256", str(timestamp), scope,
                         _sha256(canonical.encode("utf-8"))])
    key = _hmac(_hmac(_hmac(("TC3" + creds.secret).encode(), day), service), "tc3_request")
    signature = hmac.new(key, to_sign.encode("utf-8"), hashlib.sha256).hexdigest()
    return {"Content-Type": content_type, "Host": host, "X-TC-Action": action,
            "X-TC-Version": version, "X-TC-Timestamp": str(timestamp), "X-TC-Region": region,
            "X-TC-Token": creds.token,
            "Authorization": (f"TC3-HMAC-SHA256 Credential={creds.key_id}/{scope}, "
                              f"SignedHeaders=content-type;host, Signature={signature}")}


def _rfc3986(text: str) -> str:
    return urllib.parse.quote(text, safe="~")


def acs3_headers(creds: Creds, action: str, url: str, query: Mapping[str, str], now: float,
                 nonce: str = "", version: str = ECS_VERSION) -> Dict[str, str]:
    """The headers of an ACS3-HMAC-SHA256-signed Alibaba Cloud RPC call (empty body, the
    parameters in ``query``) with the role's security token."""
    headers = {"host": _host(url), "x-acs-action": action, "x-acs-version": version,
               "x-acs-date": _dt.datetime.fromtimestamp(int(now), _dt.timezone.utc)
               .strftime("%Y-%m-%dT%H:%M:%SZ"),
               "x-acs-signature-nonce": nonce or uuid.uuid4().hex,
               "x-acs-content-sha256": _sha256(b""),
               "x-acs-security-token": creds.token}
    signed = sorted(headers)
    canonical = "\n".join([
        "POST", urllib.parse.urlsplit(url).path or "/",
        "&".join(f"{_rfc3986(k)}={_rfc3986(query[k])}" for k in sorted(query)),
        "".join(f"{h}:{headers[h].strip()}\n" for h in signed),
        ";".join(signed), headers["x-acs-content-sha256"]])
    to_sign = "ACS3-HMAC-SHA256\n" + _sha256(canonical.encode("utf-8"))
    signature = hmac.new(creds.secret.encode(), to_sign.encode(), hashlib.sha256).hexdigest()
    headers["authorization"] = (f"ACS3-HMAC-SHA256 Credential={creds.key_id},"
                                f"SignedHeaders={';'.join(signed)},Signature={signature}")
    return headers


# ------------------------------------------------------------------ the calls

def aws_domain(region: str) -> str:
    """AWS's domain in ``region``: its China regions (``cn-…``) answer under ``.com.cn``."""
    return "amazonaws.com.cn" if region.startswith("cn-") else "amazonaws.com"


def endpoint_of(provider: str, region: str) -> str:
    if provider == "aws":
        return f"https://ec2.{region}.{aws_domain(region)}/"
    if provider == "tencent":
        return "https://cvm.tencentcloudapi.com/"
    return f"https://ecs.{region}.aliyuncs.com/"


def _post(url: str, body: bytes, headers: Mapping[str, str], timeout: float) -> Tuple[int, str]:
    req = urllib.request.Request(url, data=body, method="POST", headers=dict(headers))
    opener = urllib.request.build_opener()  # proxies from the environment, as the SDKs do
    try:
        with opener.open(req, timeout=timeout) as resp:
            return int(resp.status), resp.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError) as exc:
        raise CloudStopError(f"cannot reach {_host(url)}: {type(exc).__name__}") from None


_AWS_CODE = re.compile(r"<Code>([^<]+)</Code>(?:\s*<Message>([^<]*)</Message>)?")


def _aws(creds: Creds, action: str, region: str, instance_id: str, url: str, now: float,
         timeout: float) -> str:
    name = "StopInstances" if action == "stop" else "TerminateInstances"
    body = urllib.parse.urlencode({"Action": name, "Version": AWS_EC2_VERSION,
                                   "InstanceId.1": instance_id}).encode()
    status, text = _post(url, body, aws_sigv4(creds, region, url, body, now), timeout)
    if status != 200:
        found = _AWS_CODE.search(text)
        raise CloudStopError(f"EC2 {name} refused: HTTP {status} "
                             f"{found.group(1) if found else ''} "
                             f"{(found.group(2) or '') if found else ''}".strip())
    return f"EC2 {name} {instance_id}: accepted"


def _tencent(creds: Creds, action: str, region: str, instance_id: str, url: str, now: float,
             timeout: float) -> str:
    params: Dict[str, object] = {"InstanceIds": [instance_id]}
    name = "TerminateInstances"
    if action == "stop":
        name = "StopInstances"
        params.update(StoppedMode="STOP_CHARGING", StopType="SOFT_FIRST")
    body = json.dumps(params).encode()
    status, text = _post(url, body, tc3_headers(creds, name, region, url, body, now), timeout)
    try:
        answer = json.loads(text).get("Response", {})
    except (ValueError, AttributeError):
        raise CloudStopError(f"CVM {name}: HTTP {status}, not JSON") from None
    error = answer.get("Error") if isinstance(answer, dict) else None
    if status != 200 or error:
        code = (error or {}).get("Code", "") if isinstance(error, dict) else ""
        message = (error or {}).get("Message", "") if isinstance(error, dict) else ""
        raise CloudStopError(f"CVM {name} refused: {code} {message}".strip())
    mode = " (STOP_CHARGING)" if action == "stop" else ""
    return f"CVM {name} {instance_id}{mode}: accepted"


def _aliyun(creds: Creds, action: str, region: str, instance_id: str, url: str, now: float,
            timeout: float) -> str:
    query = {"RegionId": region, "InstanceId.1": instance_id}
    if action == "stop":
        name = "StopInstances"
        query.update(StoppedMode="StopCharging", ForceStop="false")
    else:
        name = "DeleteInstances"
        query["Force"] = "true"
    full = url.rstrip("/") + "/?" + "&".join(f"{_rfc3986(k)}={_rfc3986(v)}"
                                             for k, v in sorted(query.items()))
    status, text = _post(full, b"", acs3_headers(creds, name, url, query, now), timeout)
    if status != 200:
        try:
            answer = json.loads(text)
        except ValueError:
            answer = {}
        raise CloudStopError(f"ECS {name} refused: HTTP {status} "
                             f"{answer.get('Code', '')} {answer.get('Message', '')}".strip())
    mode = " (StopCharging)" if action == "stop" else ""
    return f"ECS {name} {instance_id}{mode}: accepted"


_CALLS: Dict[str, Callable[[Creds, str, str, str, str, float, float], str]] = {
    "aws": _aws, "tencent": _tencent, "aliyun": _aliyun}


def stop_self(provider: str, action: str, role: str, *, region: str = "",
              instance_id: str = "", metadata: str = "", endpoint: str = "",
              timeout: float = TIMEOUT_S, now: Callable[[], float] = time.time) -> str:
    """Ask the cloud to stop or terminate this machine with the role's credentials.

    Returns what the cloud accepted, in words; raises :class:`CloudStopError`.
    """
    if provider not in PROVIDERS:
        raise CloudStopError(f"provider must be one of {', '.join(PROVIDERS)}")
    if action not in ACTIONS:
        raise CloudStopError(f"action must be one of {', '.join(ACTIONS)}")
    md = Metadata(provider, metadata, timeout)
    instance_id = instance_id or md.instance_id()
    region = region or md.region()
    creds = md.credentials(role)
    url = endpoint or endpoint_of(provider, region)
    return _CALLS[provider](creds, action, region, instance_id, url, now(), timeout)


def expand(argv: Sequence[str], python: str = "") -> List[str]:
    """A rules.json command naming :data:`COMMAND` as this file run by the agent's python."""
    if not argv or argv[0] != COMMAND:
        return list(argv)
    return [python or sys.executable, os.path.abspath(__file__), *argv[1:]]


def main(argv: Optional[Sequence[str]] = None) -> int:
    # the first-boot bundle carries this file without docstrings: no description there
    p = argparse.ArgumentParser(prog=COMMAND, description=(__doc__ or "").split("\n")[0])
    p.add_argument("--provider", choices=PROVIDERS, required=True)
    p.add_argument("--action", choices=ACTIONS, default=os.environ.get("GPUDESK_ACTION"))
    p.add_argument("--role", required=True)
    p.add_argument("--region", default="")
    p.add_argument("--instance", default="")
    p.add_argument("--metadata", default="")
    p.add_argument("--endpoint", default="")
    p.add_argument("--timeout", type=float, default=TIMEOUT_S)
    p.add_argument("--or-poweroff", action="store_true",
                   help="when the cloud refuses, power off from inside (EC2: the instance's "
                        "shutdown behaviour applies)")
    args = p.parse_args(argv)
    if args.action not in ACTIONS:
        print(f"{COMMAND}: --action must be one of {', '.join(ACTIONS)}", file=sys.stderr)
        return 2
    try:
        print(stop_self(args.provider, args.action, args.role, region=args.region,
                        instance_id=args.instance, metadata=args.metadata,
                        endpoint=args.endpoint, timeout=args.timeout), flush=True)
        return 0
    except CloudStopError as exc:
        print(f"{COMMAND}: {exc}", file=sys.stderr, flush=True)
        if not args.or_poweroff:
            return 1
    print(f"{COMMAND}: powering off from inside instead", file=sys.stderr, flush=True)
    try:
        return subprocess.run(list(POWEROFF), stdin=subprocess.DEVNULL, check=False,
                              timeout=120).returncode
    except (OSError, subprocess.SubprocessError) as exc:
        print(f"{COMMAND}: {type(exc).__name__}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
