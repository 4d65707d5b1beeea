"""A stand-in instance metadata service on 127.0.0.1: the paths the agent's cloud_stop reads.

Per provider, as the clouds document them:

* ``aws``: IMDSv2 only. ``PUT /latest/api/token`` (with
  ``X-aws-ec2-metadata-token-ttl-seconds``) gives a token every GET must carry in
  ``X-aws-ec2-metadata-token`` (401 without); ``/latest/meta-data/instance-id``,
  ``placement/region``, ``iam/security-credentials/`` (the role's name) and
  ``iam/security-credentials/<role>`` → ``{"Code": "Success", "AccessKeyId",
  "SecretAccessKey", "Token", "Expiration", ...}``;
* ``tencent``: ``instance-id``, ``placement/region``,
  ``cam/security-credentials/<role>`` → ``{"TmpSecretId", "TmpSecretKey", "Token",
  "ExpiredTime", "Expiration", "Code": "Success"}``;
* ``aliyun``: ``instance-id``, ``region-id``, ``ram/security-credentials/<role>`` →
  ``{"AccessKeyId", "AccessKeySecret", "SecurityToken", "Expiration", "Code"}``.

The credentials come from ``issue()`` at each request (for AWS: moto's STS AssumeRole of
the machine's role), so they are as short-lived as the test wants. ``hits`` lists paths.
"""

from __future__ import annotations

import json
import secrets
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from http.server import ThreadingHTTPServer
from typing import Any


class MetadataStandin:
    def __init__(self, provider: str, role: str, instance_id: str, region: str,
                 issue: Callable[[], dict[str, str]]) -> None:
        self.provider, self.role, self.instance_id, self.region = (
            provider, role, instance_id, region)
        self.issue = issue
        self.tokens: set[str] = set()
        self.hits: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_PUT(self) -> None:  # noqa: N802 - http.server's name
                outer.hits.append("PUT " + self.path)
                ttl = {"aws": "X-aws-ec2-metadata-token-ttl-seconds",
                       "aliyun": "X-aliyun-ecs-metadata-token-ttl-seconds"}.get(outer.provider)
                if self.path != "/latest/api/token" or not ttl or not self.headers.get(ttl):
                    return self._send(400, "")
                token = secrets.token_urlsafe(24)
                outer.tokens.add(token)
                self._send(200, token)

            def do_GET(self) -> None:  # noqa: N802
                outer.hits.append("GET " + self.path)
                if outer.provider == "aws" and self.headers.get(
                        "X-aws-ec2-metadata-token") not in outer.tokens:
                    return self._send(401, "")
                status, text = outer.answer(self.path)
                self._send(status, text)

            def _send(self, status: int, text: str) -> None:
                data = text.encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/plain")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def answer(self, path: str) -> tuple[int, str]:
        prefix = "/latest/meta-data/"
        if not path.startswith(prefix):
            return 404, ""
        rest = path[len(prefix):]
        folder = {"aws": "iam", "tencent": "cam", "aliyun": "ram"}[self.provider]
        region_path = "region-id" if self.provider == "aliyun" else "placement/region"
        if rest == "instance-id":
            return 200, self.instance_id
        if rest == region_path:
            return 200, self.region
        if rest == f"{folder}/security-credentials/":
            return 200, self.role
        if rest == f"{folder}/security-credentials/{self.role}":
            return 200, json.dumps(self.issue())
        return 404, ""

    def __enter__(self) -> MetadataStandin:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
