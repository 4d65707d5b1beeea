"""What a machine's role may do, as CAM and RAM judge a call signed with its temporary keys.

The stand-ins (``tencent_standin``, ``aliyun_standin``) hand out a role's temporary keys
(``role_session``, the shape the machine's metadata serves) and judge every call signed with
them against the policies attached to that role, as the clouds document it:

* CAM (https://cloud.tencent.com/document/product/598/10603 and 213/10313): a statement
  ``allow``s an ``action`` (``cvm:X`` or ``name/cvm:X``, ``*`` wildcards) on a six-segment
  ``resource`` (``qcs::cvm:<region>:uin/<uin>:instance/<id>``; an empty segment is any) when
  its ``condition`` holds; ``for_any_value:string_equal`` on ``qcs:resource_tag`` holds when
  one of the resource's tags, written ``key&value``, is listed. A ``deny`` that matches wins.
  A refusal is ``AuthFailure.UnauthorizedOperation``.
* RAM (https://www.alibabacloud.com/help/en/ram/user-guide/policy-elements and ECS's RAM
  authorization page): ``Action`` ``ecs:X`` (case-insensitive, wildcards), ``Resource``
  ``acs:ecs:<region>:<account>:instance/<id>``, ``Condition`` ``StringEquals`` on
  ``ecs:tag/<key>`` (the instance's tag value). A refusal is ``Forbidden.RAM``.

Anything the evaluator does not know (an operator, a condition key) does not hold: a
stand-in never allows more than the cloud would.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from fnmatch import fnmatchcase
from typing import Any


def session_keys(role: str, prefix: str) -> tuple[str, str, str]:
    """(key id, secret, token) of ``role``'s temporary keys: the same for the same role."""
    digest = hashlib.sha256(role.encode()).hexdigest()
    return (prefix + digest[:28], hashlib.sha256(b"s" + role.encode()).hexdigest()[:32],
            "token-" + digest[28:52])


def _listed(value: Any) -> list[str]:
    if value is None:
        return []
    return [str(v) for v in (value if isinstance(value, list) else [value])]


def _segments_match(pattern: str, resource: str) -> bool:
    if pattern == "*":
        return True
    want, have = pattern.split(":", 5), resource.split(":", 5)
    if len(want) != len(have):
        return False
    return all(not w or fnmatchcase(h, w) for w, h in zip(want, have, strict=True))


# ------------------------------------------------------------------ CAM (Tencent Cloud)

def _cam_condition(condition: Any, tags: dict[str, str]) -> bool:
    if not condition:
        return True
    if not isinstance(condition, dict):
        return False
    written = {f"{k}&{v}" for k, v in tags.items()}
    for operator, keys in condition.items():
        if not isinstance(keys, dict):
            return False
        for key, values in keys.items():
            if key != "qcs:resource_tag" or operator not in (
                    "for_any_value:string_equal", "string_equal"):
                return False
            if not written & set(_listed(values)):
                return False
    return True


def cam_allows(documents: Iterable[dict[str, Any]], service: str, action: str,
               resource: str, tags: dict[str, str]) -> bool:
    """Does any attached policy allow ``service:action`` on ``resource`` (none deny it)?"""
    allowed = False
    for doc in documents:
        for st in _listed_statements(doc.get("statement")):
            actions = _listed(st.get("action"))
            if not any(fnmatchcase(f"{service}:{action}", a.removeprefix("name/"))
                       for a in actions):
                continue
            if not any(_segments_match(r, resource) for r in _listed(st.get("resource"))):
                continue
            if not _cam_condition(st.get("condition"), tags):
                continue
            if st.get("effect") == "deny":
                return False
            allowed = allowed or st.get("effect") == "allow"
    return allowed


# ------------------------------------------------------------------ RAM (Alibaba Cloud)

def _ram_condition(condition: Any, tags: dict[str, str]) -> bool:
    if not condition:
        return True
    if not isinstance(condition, dict):
        return False
    for operator, keys in condition.items():
        if operator != "StringEquals" or not isinstance(keys, dict):
            return False
        for key, values in keys.items():
            if not key.lower().startswith("ecs:tag/"):
                return False
            if tags.get(key.split("/", 1)[1]) not in _listed(values):
                return False
    return True


def ram_allows(documents: Iterable[dict[str, Any]], action: str, resource: str,
               tags: dict[str, str]) -> bool:
    """Does any attached policy allow ``ecs:action`` on ``resource`` (none deny it)?"""
    allowed = False
    for doc in documents:
        for st in _listed_statements(doc.get("Statement")):
            if not any(fnmatchcase(f"ecs:{action}".lower(), a.lower())
                       for a in _listed(st.get("Action"))):
                continue
            if not any(_segments_match(r, resource) for r in _listed(st.get("Resource"))):
                continue
            if not _ram_condition(st.get("Condition"), tags):
                continue
            if st.get("Effect") == "Deny":
                return False
            allowed = allowed or st.get("Effect") == "Allow"
    return allowed


def _listed_statements(value: Any) -> list[dict[str, Any]]:
    items = value if isinstance(value, list) else [value] if value else []
    return [s for s in items if isinstance(s, dict)]
