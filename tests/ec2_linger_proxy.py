"""A pass-through HTTP proxy in front of moto that refuses deletes EC2 refuses for a while.

After an instance terminates, EC2 keeps its network interface a little longer, and
until that is released ``DeleteSecurityGroup`` answers ``DependencyViolation``
("resource sg-… has a dependent object"). moto deletes at once, so this proxy sits
between boto3 and moto and answers the first ``linger`` deletes of each group with
EC2's own error document (HTTP 400, ``<Response><Errors><Error>``); every other
request, and every later delete, goes to moto unchanged. The provider under test
sees the wire answer a real EC2 would give; nothing in gpudesk is patched.
"""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import parse_qs

from moto_proxy import MotoProxy

REFUSAL = ('<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error>'
           '<Code>DependencyViolation</Code><Message>resource {group} has a dependent object'
           '</Message></Error></Errors><RequestID>{request}</RequestID></Response>')


class LingerProxy(MotoProxy):
    """``url`` is what ``AWS_ENDPOINT_URL`` takes; ``refused`` counts refusals per group."""

    def __init__(self, upstream: str, linger: int = 2) -> None:
        super().__init__(upstream)
        self.linger = linger
        self.refused: Counter[str] = Counter()
        self._lock = threading.Lock()

    def intercept(self, body: bytes) -> tuple[int, str] | None:
        group = self.refusal_for(body)
        return (400, REFUSAL.format(group=group, request=uuid.uuid4())) if group else None

    def refusal_for(self, body: bytes) -> str:
        """The group a DeleteSecurityGroup body names, when it is still to be refused."""
        form = parse_qs(body.decode("utf-8", "replace"))
        if form.get("Action") != ["DeleteSecurityGroup"]:
            return ""
        group = (form.get("GroupId") or [""])[0]
        with self._lock:
            if not group or self.refused[group] >= self.linger:
                return ""
            self.refused[group] += 1
        return group



@contextmanager
def linger_proxy(upstream: str, linger: int = 2) -> Iterator[LingerProxy]:
    proxy = LingerProxy(upstream, linger).start()
    try:
        yield proxy
    finally:
        proxy.stop()
