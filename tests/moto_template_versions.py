"""moto 5.2's CreateLaunchTemplateVersion keeps ``UserData`` as plain text, where its
CreateLaunchTemplate wraps it (``parse_user_data``); an Auto Scaling group launching from
such a version then fails inside moto (an assertion, answered as HTTP 500). EC2 itself
takes both alike. ``fix(monkeypatch)`` makes the new version's data what moto's own
CreateLaunchTemplate makes; nothing else of moto changes (the server runs in this process:
``fixtures_aws.moto_server`` is a ThreadedMotoServer)."""

from __future__ import annotations

from typing import Any

import pytest


def fix(monkeypatch: pytest.MonkeyPatch) -> None:
    from moto.ec2.responses.launch_templates import LaunchTemplates
    from moto.ec2.utils import parse_user_data

    original = LaunchTemplates.create_launch_template_version

    def create_launch_template_version(self: Any) -> Any:
        raw = self._get_param("LaunchTemplateData.UserData")
        if raw is None:
            return original(self)
        plain = self._get_param

        def get_param(name: str, default: Any = None) -> Any:
            value = plain(name, default)
            if name == "LaunchTemplateData" and isinstance(value, dict):
                value["UserData"] = parse_user_data(raw)
            return value

        self._get_param = get_param
        return original(self)

    monkeypatch.setattr(LaunchTemplates, "create_launch_template_version",
                        create_launch_template_version)
