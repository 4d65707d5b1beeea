"""A cloud machine whose login user neither the ledger nor its image says (issue 21, item
10): ``gpudesk ls`` (which reconciles) and ``show`` say "login user unknown" and how to set
it, connecting refuses with those words instead of trying root, and ``gpudesk login-user``
sets it. An own machine keeps the user it was given.

Against the Tencent stand-in (real SDK, TC3 signatures checked), through the CLI in this
process with the keys in the keyring.
"""
# ruff: noqa: F811 - fixtures imported from fixtures_* arrive as parameters

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
from fixtures_keyring import memory_keyring  # noqa: F401
from fixtures_tencent import tencent  # noqa: F401
from fixtures_tencent import tencent_creds  # noqa: F401
from fixtures_tencent import tencent_server  # noqa: F401
from tencent_standin import TencentStandin

from gpudesk.cli.entry import main
from gpudesk.services.cloud import credentials
from gpudesk.services.cloud.accounts import TENCENT_ENDPOINT_ENV
from gpudesk.services.cloud.providers.base import Credentials
from gpudesk.services.cloud.providers.base import LaunchRequest
from gpudesk.services.cloud.providers.tencent import TencentProvider
from gpudesk.services.money.ledger import Ledger
from gpudesk.services.remote import targets
from gpudesk.services.remote.ssh import SshError

ADDRESS = "203.0.113.7"
HOW = "Set it with: gpudesk login-user {m} USER (root on Alibaba Cloud and most Tencent " \
      "Cloud images, ubuntu on Ubuntu images, ec2-user on Amazon Linux)."


def _run(args: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    return code, out.getvalue(), err.getvalue()


@pytest.fixture
def lost_image_machine(tencent: TencentStandin, tencent_creds: Credentials,
                       memory_keyring: Any, monkeypatch: pytest.MonkeyPatch) -> str:
    """A gpudesk-tagged CVM machine the ledger does not know, made from a private image that
    has been deleted since: nobody can say who logs in. Returns its cloud id."""
    monkeypatch.setenv(TENCENT_ENDPOINT_ENV, f"http://{tencent.endpoint}")
    credentials.save_credentials(tencent_creds)
    p = TencentProvider(tencent_creds, endpoint=tencent.endpoint, protocol="http")
    try:
        group = p.ensure_security_group("ap-guangzhou", ADDRESS)
        made = p.run_instance(LaunchRequest("m-lost00001", "ap-guangzhou", "GN7.2XLARGE32",
                                            zone="ap-guangzhou-3", security_group=group,
                                            image_id="img-mygpu001"))
    finally:
        p.close()
    tencent.images = [i for i in tencent.images if i["ImageId"] != "img-mygpu001"]
    return made.cloud_id


def test_unknown_login_user_is_said_refused_and_can_be_set(lost_image_machine: str) -> None:
    code, out, err = _run(["ls", "--json"])
    assert code == 0, err
    (row,) = [r for r in json.loads(out) if r["cloud_id"] == lost_image_machine]
    ledger_id = row["id"]
    (warning,) = [line for line in err.splitlines() if "login user unknown" in line]
    assert warning.startswith(f"gpudesk: warning: {ledger_id}: login user unknown (")
    assert "img-mygpu001" in warning and warning.endswith(HOW.format(m=ledger_id))

    code, out, _ = _run(["show", ledger_id])
    assert code == 0
    (line,) = [x.strip() for x in out.splitlines() if "login user" in x]
    assert line.startswith("login user unknown (") and "img-mygpu001" in line
    assert line.endswith(HOW.format(m=ledger_id))
    code, out, _ = _run(["show", ledger_id, "--json"])
    assert json.loads(out)["login_user"] is None

    # connecting never tries root: it refuses, saying how to set the user
    with pytest.raises(SshError) as refused:
        targets.resolve(ledger_id)
    text = refused.value.message()
    assert text.startswith(f"gpudesk does not know who logs in on {ledger_id}")
    assert f"gpudesk login-user {ledger_id} USER" in text
    assert refused.value.template == targets.MSG_NO_LOGIN_USER

    # nor do the first login and ~/.ssh/config: no guessed user anywhere
    from gpudesk.services.remote import host_key_rotation
    from gpudesk.services.remote import ssh_config

    with Ledger() as ledger:
        unknown = ledger.get(ledger_id)
    assert unknown is not None
    with pytest.raises(SshError) as first:
        host_key_rotation.machine_target(unknown)
    assert first.value.template == targets.MSG_NO_LOGIN_USER
    (block,) = ssh_config.blocks_for([unknown])
    assert block.user == "" and f"gpudesk login-user {ledger_id} USER" in block.note
    text = ssh_config.render([block], Path("/kh"))
    assert "    User " not in text and "# login user unknown" in text

    code, _, err = _run(["login-user", ledger_id, "Bad User"])
    assert code == 2 and "'Bad User' is not a login name" in err
    code, out, err = _run(["login-user", lost_image_machine, "ubuntu"])  # by cloud id too
    assert code == 0, err
    with Ledger() as ledger:
        m = ledger.get(ledger_id)
        assert m is not None and m.ssh_user == "ubuntu"
        assert [e.detail for e in ledger.events(ledger_id) if e.step == "login-user"][-1] == \
            "ubuntu (given)"
    target = targets.resolve(ledger_id)
    assert target.user == "ubuntu" and target.host == m.public_ip
    assert host_key_rotation.machine_target(m).user == "ubuntu"
    assert "    User ubuntu" in ssh_config.render(ssh_config.blocks_for([m]), Path("/kh"))
    code, out, _ = _run(["show", ledger_id])
    assert "login user ubuntu" in out and "login user unknown" not in out
    code, _, err = _run(["ls"])
    assert "login user unknown" not in err  # known now: no warning on the next reconcile


def test_an_own_machine_keeps_its_given_user(memory_keyring: Any) -> None:
    assert _run(["add-machine", "lab", "ssh://alice@127.0.0.1:2222", "--no-test"])[0] == 0
    assert _run(["add-machine", "box", "ssh://127.0.0.1:2223", "--no-test"])[0] == 0
    assert targets.resolve("lab").user == "alice"
    assert targets.resolve("box").user == "root"  # added without a user, as before
    code, out, _ = _run(["show", "lab"])
    assert code == 0 and "login user alice" in out and "unknown" not in out
