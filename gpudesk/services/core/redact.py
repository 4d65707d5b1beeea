"""Remove anything that looks like a secret from text we show or hand out (crash reports).

Qt-free and conservative: it would rather blank a harmless string than leak a
key. Covered: AWS access key ids (``AKIA…``, ``ASIA…`` and the other IAM
prefixes), AWS (40-character), Tencent Cloud (32) and Alibaba Cloud (30) secret
keys when they look random, Tencent Cloud ``AKID…`` and Alibaba ``LTAI…`` ids,
``password=``/``token=``/``secret=``-style values (``=`` or ``:``, quoted or
not), ``Authorization: Bearer …`` headers and PEM private-key blocks.
"""

from __future__ import annotations

import re

REDACTED = "[REDACTED]"

_PEM = re.compile(
    r"-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY-----.*?(?:-----END \1PRIVATE KEY-----|\Z)",
    re.S)
_AWS_KEY_ID = re.compile(r"\b(?:AKIA|ASIA|AIDA|AROA|AGPA|ANPA|ANVA|AIPA|ABIA|ACCA)"
                         r"[A-Z0-9]{16}\b")
_TENCENT_ID = re.compile(r"\bAKID[A-Za-z0-9]{13,60}\b")
_ALIYUN_ID = re.compile(r"\bLTAI[A-Za-z0-9]{12,30}\b")
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}")
_KEY_WORDS = (r"pass(?:word|wd|phrase)?|pwd|token|secret|api[_-]?key|access[_-]?key"
              r"|private[_-]?key|credentials?|auth(?:orization)?")
_ASSIGNMENT = re.compile(
    r"""(?ix)
    (                                   # 1: the name and the separator, kept
      ["']?[\w.-]*(?:""" + _KEY_WORDS + r""")[\w.-]*["']?
      \s*[=:]\s*
    )
    (?:"[^"\n]*"|'[^'\n]*'|[^\s,;&)\]}]+)  # the value, blanked
    """)
# Secret keys: AWS 40 characters, Tencent SecretKey 32, Aliyun AccessKey secret 30.
_SECRET_KEY = re.compile(r"(?<![A-Za-z0-9/+=])(?:[A-Za-z0-9/+=]{40}|[A-Za-z0-9]{30}|"
                         r"[A-Za-z0-9]{32})(?![A-Za-z0-9/+=])")


def _looks_random(word: str) -> bool:
    """Mixed case and a digit or ``/``/``+``: a secret key, not a path or a hex hash."""
    return (any(c.islower() for c in word) and any(c.isupper() for c in word)
            and any(c.isdigit() or c in "/+" for c in word))


def redact(text: str) -> str:
    """``text`` with every secret-looking part replaced by ``[REDACTED]``."""
    text = _PEM.sub("[REDACTED PRIVATE KEY]", text)
    text = _AWS_KEY_ID.sub(REDACTED, text)
    text = _TENCENT_ID.sub(REDACTED, text)
    text = _ALIYUN_ID.sub(REDACTED, text)
    text = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    text = _ASSIGNMENT.sub(lambda m: m.group(1) + REDACTED, text)
    return _SECRET_KEY.sub(lambda m: REDACTED if _looks_random(m.group(0)) else m.group(0), text)
