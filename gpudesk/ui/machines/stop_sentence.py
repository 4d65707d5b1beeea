"""One plain sentence for a finished stop: what no longer bills and what still does, the
cloud's own word (STOP_CHARGING, KeepCharging…) at most once, in parentheses (issue 31).

The ledger's "stop-billing" note is the provider's English sentence; only the part it adds
(why Alibaba Cloud kept charging) is taken from it, translated; a note that is none of the
provider's sentences (the cloud's error) is said inside a translated sentence."""

from __future__ import annotations

import re

from PySide6.QtCore import QCoreApplication

from gpudesk.services.cloud import accounts
from gpudesk.services.cloud.providers import aliyun_errors
from gpudesk.services.cloud.providers import tencent_errors
from gpudesk.services.money.ledger import Machine

translate = QCoreApplication.translate  # the name lupdate looks for (literal contexts)


def _fields(template: str, text: str) -> dict[str, str] | None:
    """The values a ``str.format`` template was filled with to give ``text``, or None."""
    pattern = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>.*)", re.escape(template))
    found = re.fullmatch(pattern, text.strip(), flags=re.DOTALL)
    return found.groupdict() if found else None


def _why(note: str) -> str:
    """Why Alibaba Cloud kept charging (from its note), in the user's language; "" if none."""
    said = _fields(aliyun_errors.MSG_STOPPED_KEEP_CHARGING, note)
    if said is None:
        return ""
    why = said["why"]
    typed = _fields(aliyun_errors.WHY_KEEP_TYPE, why)
    if typed is not None:
        return QCoreApplication.translate("ProviderError", aliyun_errors.WHY_KEEP_TYPE).format(
            **typed)
    return QCoreApplication.translate("ProviderError", why)


def _known(note: str) -> bool:
    templates = (tencent_errors.MSG_STOPPED_NO_CHARGE, tencent_errors.MSG_STOPPED_KEEPS_CHARGING,
                 aliyun_errors.MSG_STOPPED_STOP_CHARGING, aliyun_errors.MSG_STOPPED_KEEP_CHARGING)
    return any(_fields(t, note) is not None for t in templates)


def stop_sentence(m: Machine, note: str = "") -> str:
    """What the status line says once the cloud reports ``m`` stopped; ``note`` is the
    ledger's last "stop-billing" detail for it."""
    name, cloud, word = m.name or m.id, accounts.title(m.provider), m.stopped_mode or "?"
    if m.compute_billing:
        why = _why(note) if m.provider == "aliyun" else ""
        text = (translate(
            "InstancesPage", "{name} is stopped, but {cloud} keeps billing it in full "
            "({word}: {why}) until it is terminated.") if why else translate(
            "InstancesPage", "{name} is stopped, but {cloud} keeps billing it in full "
            "({word}) until it is terminated.")).format(name=name, cloud=cloud, word=word,
                                                        why=why)
    elif m.provider == "tencent":
        text = translate(
            "InstancesPage", "{name} is stopped without charge ({word}): CPU, GPU and memory "
            "no longer bill; its cloud disks, bandwidth and image do until it is "
            "terminated.").format(name=name, word=word)
    elif m.provider == "aliyun":
        text = translate(
            "InstancesPage", "{name} is stopped without charge ({word}): CPU, GPU and memory "
            "no longer bill; its system disk does until it is terminated, and its public "
            "address may change when it starts again.").format(name=name, word=word)
    else:
        text = translate(
            "InstancesPage", "{name} is stopped: the machine no longer bills; its disk does "
            "until it is terminated.").format(name=name)
    if note and not _known(note):  # the cloud did not say what still bills: its answer
        text += " " + translate(
            "InstancesPage", "{cloud} did not say what still bills: {answer}").format(
            cloud=cloud, answer=note)
    return text
