"""``gpudesk add-machine NAME ssh://user@host:port`` with its profile, as the window keeps it.

The profile is the key file (its path only), the Python runs use there, gpudesk's folder on
the machine and the bucket its runs keep their data in (issue 30). Like the window's "Add
my own SSH machine", it logs in once to test them and pins the host key; nothing is added,
and no host key stays pinned, unless the login worked. A bucket is checked first (it must
exist and open to the account's keys). Later commands (``run``, ``bootstrap``, ``queue``,
``logs``…) need no ``--identity``, ``--python`` or ``--remote-root`` again.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from urllib.parse import urlsplit

from gpudesk.cli import remote as cli_remote


def _fail(message: str, code: int = 1) -> int:
    print(f"gpudesk: error: {message}", file=sys.stderr)
    return code


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("name")
    p.add_argument("target", help="ssh://user@host:port")
    p.add_argument("--gpus", type=int, default=0,
                   help="GPUs on it (default: as many as nvidia-smi lists at the test login)")
    p.add_argument("--identity", type=Path, metavar="KEY_FILE",
                   help="its private key file (kept as a path; default: your ssh-agent)")
    p.add_argument("--python", default="", metavar="PATH",
                   help=f"the Python runs use there (default {cli_remote.REMOTE_PYTHON})")
    p.add_argument("--remote-root", default="", metavar="DIR",
                   help=f"gpudesk's folder there (default {cli_remote.REMOTE_ROOT})")
    cli_remote.add_store_args(
        p, store_for="the bucket its runs keep checkpoints, logs and outputs in: "
        "s3://bucket/prefix, cos://bucket-appid/prefix or oss://bucket/prefix (checked now; "
        "runs get short-lived keys limited to their folder from the account in the keyring)")
    cli_remote.add_pin_args(p, accept_new_for="pin the host key the test login is offered")
    p.add_argument("--no-test", action="store_true",
                   help="add it without logging in (the host key is pinned at the first "
                        "connection instead)")


def cmd_add_machine(a: argparse.Namespace) -> int:
    from gpudesk.services.cloud.machines import add_own_machine
    from gpudesk.services.money.ledger import Ledger

    url = urlsplit(a.target if "://" in a.target else f"ssh://{a.target}")
    if url.scheme != "ssh" or not url.hostname:
        return _fail("give the machine as ssh://user@host:port", 2)
    if a.identity is not None and not a.identity.expanduser().is_file():
        return _fail(f"--identity: {a.identity} is not a file", 2)
    from gpudesk.services.storage.store_check import checked_store

    host, port, user = url.hostname, url.port or 22, url.username or ""
    from gpudesk.services.cloud.machines import name_taken

    with Ledger() as ledger:  # a name Run and Watch already know: refused before any login
        if name_taken(ledger, a.name or host):
            return _fail(f"a machine named {a.name or host} is already in your list: choose "
                         "another name, or remove that one first", 1)
    store, store_region = checked_store(a.store, a.store_region)  # before any login
    key_file = str(a.identity.expanduser().resolve()) if a.identity is not None else ""
    found = None
    if not a.no_test:
        from gpudesk.services.remote import targets
        from gpudesk.services.remote.host_keys import PinStore

        target = targets.profile_target(a.name, host, port, user, key_file)
        with PinStore().kept_if_ok(target.known_as):
            found = targets.check_login(target, cli_remote.host_key_policy(a),
                                        a.python or cli_remote.REMOTE_PYTHON)
        if not found.python:  # a profile whose Python is not there could run nothing
            return _fail(f"not added: {a.python or cli_remote.REMOTE_PYTHON} was not found on "
                         f"{found.target}: give --python with the machine's python (for "
                         "example /usr/bin/python3 or a venv's bin/python)", 1)
    with Ledger() as ledger:
        m = add_own_machine(ledger, a.name, host, port, user,
                            gpus=a.gpus or (found.gpus if found else 0), key_file=key_file,
                            python=a.python, root=a.remote_root, store=store,
                            store_region=store_region)
    print(f"{m.id} {m.name}: {m.ssh_user}@{m.public_ip}:{m.ssh_port}")
    if found is not None:
        print(f"  logged in; host key {found.fingerprint} pinned")
        python = a.python or cli_remote.REMOTE_PYTHON
        if not found.torch:
            print(f"  Python {found.python} is there, without torch: install it there "
                  f"({python} -m pip install torch) or choose a venv's python")
        else:
            print(f"  Python {found.python}, torch {found.torch}, {found.gpus} GPU(s)")
    if store:
        print(f"  runs keep their data in {store} ({store_region}), with short-lived keys "
              "limited to each run's folder")
    return 0
