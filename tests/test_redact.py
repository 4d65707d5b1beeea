from __future__ import annotations

import pytest

from gpudesk.services.core.redact import REDACTED
from gpudesk.services.core.redact import redact

AWS_ID = "AKIAIOSFODNN7EXAMPLE"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
TENCENT_ID = "AKIDz8krbsJ5yKBZQpn74WFkmLPx3EXAMPLE"


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        (f"KeyError: bad key {AWS_ID}", AWS_ID),
        ("session ASIAY34FZKBOKMUTVV7A expired", "ASIAY34FZKBOKMUTVV7A"),
        (f"aws_secret_access_key {AWS_SECRET}", AWS_SECRET),
        (f"SecretId={TENCENT_ID}", TENCENT_ID),
        (f"id {TENCENT_ID} rejected", TENCENT_ID),
        ("connect(password=hunter2, host=x)", "hunter2"),
        ("url?token=abc123def&x=1", "abc123def"),
        ('{"secret": "s3cr3t value"}', "s3cr3t value"),
        ("SecretKey: 'Gu5t9xGARNpq86cd98joQYCN3EXAMPLE'", "Gu5t9xGARNpq86cd98joQYCN3EXAMPLE"),
        ("API_KEY=sk-live-0123456789", "sk-live-0123456789"),
        # bare keys with no name beside them (a pasted line, an SDK's repr)
        ("Gu5t9xGARNpq86cd98joQYCN3EXAMPLE failed", "Gu5t9xGARNpq86cd98joQYCN3EXAMPLE"),
        ("AccessKey LTAI5tQ7ZbTmVwXyZaBcDeFg ok", "LTAI5tQ7ZbTmVwXyZaBcDeFg"),
        ("('x', 'kR3mN8pQ2sT5vW7yZ1aC4eG6iK9oMu')", "kR3mN8pQ2sT5vW7yZ1aC4eG6iK9oMu"),
        ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.abc", "eyJhbGciOiJIUzI1NiJ9"),
    ],
)
def test_secrets_are_removed(text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out
    assert REDACTED in out


def test_pem_private_key_removed_whole() -> None:
    pem = ("before\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\nabcDEF123+/==\n"
           "-----END RSA PRIVATE KEY-----\nafter")
    out = redact(pem)
    assert "MIIEowIBAAKCAQEA7" not in out and "abcDEF123" not in out
    assert out.startswith("before\n") and out.endswith("\nafter")
    assert "PRIVATE KEY]" in out


def test_unterminated_pem_is_removed_to_the_end() -> None:
    out = redact("x -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA")
    assert "b3BlbnNzaC1rZXktdjEAAAA" not in out


def test_hashes_and_paths_of_secret_lengths_are_kept() -> None:
    md5 = "d41d8cd98f00b204e9800998ecf8427e"  # 32 characters, one case: not a key
    path = "/home/alice/projects/longmodel_name_v2_finetuned"
    assert redact(f"{md5} {path}") == f"{md5} {path}"


def test_ordinary_traceback_text_is_kept() -> None:
    text = ('Traceback (most recent call last):\n'
            '  File "/home/user/.venv/lib/python3.12/site-packages/gpudesk/ui/plan/plan_page.py",'
            ' line 10, in refresh\n'
            "ValueError: batch must be positive\n"
            "commit 0123456789abcdef0123456789abcdef01234567\n"
            "gpudesk 0.1.0 on Linux-6.1-x86_64, Python 3.12.3, Qt 6.11.3")
    assert redact(text) == text


def test_key_name_is_kept_so_the_report_stays_readable() -> None:
    assert redact("password=hunter2") == f"password={REDACTED}"
