"""Outputs have a documented home (issue 30): the run launcher names ``<run folder>/outputs``
as ``GPUDESK_OUTPUT_DIR`` (the folder the agent uploads as the run ends), and the training
helper's ``output_dir()`` gives it, made, to the script; outside gpudesk ``./outputs``."""

from __future__ import annotations

from pathlib import Path

import pytest

import gpudesk.training as training
from gpudesk.services.runs import detached as runs
from gpudesk.training.env import OUTPUT_DIR_ENV


def test_the_launcher_names_the_folder_the_agent_uploads() -> None:
    env = runs.training_env("/r/runs/x", "/r/lib", "/r/projects/p", amp=None,
                            checkpoint_every_min=None, run_id="x", nodes=["h"], node_rank=0)
    assert env[OUTPUT_DIR_ENV] == "/r/runs/x/outputs"
    assert env["GPUDESK_RUN_DIR"] == "/r/runs/x/checkpoints"
    from gpudesk.agent.uploader import Settings

    assert Settings.__dataclass_fields__["outputs"].default == "outputs"  # what it uploads


def test_output_dir_is_the_setting_made_or_outputs_here(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    given = tmp_path / "runs" / "x" / "outputs"
    assert training.output_dir({OUTPUT_DIR_ENV: str(given)}) == given and given.is_dir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(OUTPUT_DIR_ENV, raising=False)
    assert training.output_dir() == Path("outputs") and (tmp_path / "outputs").is_dir()
    assert training.output_dir({}, create=False) == Path("outputs")
