"""Spot notices from a local IMDSv2 / Tencent metadata server, delivered to live runs."""

# ruff: noqa: F811 - pytest fixtures imported from fixtures_agent arrive as parameters
from __future__ import annotations

import json
import socket
from datetime import UTC
from datetime import datetime
from pathlib import Path

import pytest
from fixtures_agent import LiveRun  # noqa: F401
from fixtures_agent import MetadataServer  # noqa: F401
from fixtures_agent import metadata_server  # noqa: F401
from fixtures_agent import sim_clock  # noqa: F401
from fixtures_agent import start_run  # noqa: F401
from fixtures_agent import wait_for  # noqa: F401

from gpudesk.agent.clock import SimClock
from gpudesk.agent.events import EventLog
from gpudesk.agent.events import read_events
from gpudesk.agent.rules import SpotConfig
from gpudesk.agent.runs import catches_signal
from gpudesk.agent.runs import process_tree
from gpudesk.agent.spot import AWS_ACTION_PATH
from gpudesk.agent.spot import AWS_TOKEN_PATH
from gpudesk.agent.spot import SPOT_NOTICE_FILE
from gpudesk.agent.spot import SPOT_SIGNAL
from gpudesk.agent.spot import AwsSpot
from gpudesk.agent.spot import SpotUnavailable
from gpudesk.agent.spot import SpotWatcher
from gpudesk.agent.spot import TencentSpot
from gpudesk.agent.spot import make_source
from gpudesk.agent.spot import parse_tencent_time

AWS_NOTICE = {"action": "terminate", "time": "2017-09-18T08:22:00Z"}


def test_aws_token_then_404_then_the_notice(metadata_server: MetadataServer,
                                            sim_clock: SimClock) -> None:
    aws = AwsSpot(metadata_server.url, sim_clock)
    for _ in range(3):
        assert aws.check() is None
    assert metadata_server.count("PUT", AWS_TOKEN_PATH) == 1  # the token is reused
    assert metadata_server.count("GET", AWS_ACTION_PATH) == 3
    assert metadata_server.state.ttl_headers == ["21600"]
    metadata_server.state.aws_action = AWS_NOTICE
    notice = aws.check()
    assert notice is not None
    assert (notice.provider, notice.action, notice.time) == ("aws", "terminate",
                                                             "2017-09-18T08:22:00Z")
    assert notice.deadline == datetime(2017, 9, 18, 8, 22, tzinfo=UTC).timestamp()


def test_aws_refreshes_a_refused_or_expired_token(metadata_server: MetadataServer,
                                                 sim_clock: SimClock) -> None:
    aws = AwsSpot(metadata_server.url, sim_clock)
    assert aws.check() is None
    metadata_server.state.revoked.add("token-1")
    assert aws.check() is None
    assert metadata_server.state.tokens == ["token-1", "token-2"]
    sim_clock.advance(21600)
    assert aws.check() is None
    assert len(metadata_server.state.tokens) == 3


def test_tencent_404_then_termination_time_in_utc8(metadata_server: MetadataServer) -> None:
    tc = TencentSpot(metadata_server.url)
    assert tc.check() is None
    metadata_server.state.tencent_time = "2018-08-18 12:05:33"
    notice = tc.check()
    assert notice is not None and notice.time == "2018-08-18 12:05:33"
    assert notice.deadline == datetime(2018, 8, 18, 4, 5, 33, tzinfo=UTC).timestamp()
    assert parse_tencent_time("soon") is None


def test_no_metadata_service_is_unavailable_not_a_notice(tmp_path: Path,
                                                        sim_clock: SimClock) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
    with pytest.raises(SpotUnavailable):
        AwsSpot(url, sim_clock, timeout=1.0).check()
    watcher = SpotWatcher(TencentSpot(url, timeout=1.0), EventLog(tmp_path, sim_clock),
                          runs_dir=tmp_path / "runs", agent_dir=tmp_path, clock=sim_clock)
    assert watcher.poll() is None and watcher.failures == 1
    assert read_events(tmp_path) == []


def test_make_source_follows_the_rules(metadata_server: MetadataServer) -> None:
    assert isinstance(make_source(SpotConfig("aws", metadata_server.url)), AwsSpot)
    assert isinstance(make_source(SpotConfig("tencent", metadata_server.url)), TencentSpot)
    assert make_source(SpotConfig("none")) is None


def test_notice_reaches_the_run_by_file_and_signal(
        tmp_path: Path, sim_clock: SimClock, metadata_server: MetadataServer,
        start_run: object) -> None:
    runs = tmp_path / "runs"
    ckpt = tmp_path / "ckpt-dir"  # the run's GPUDESK_RUN_DIR, apart from its run folder
    ckpt.mkdir()
    run: LiveRun = start_run(runs, "run-1", run_dir_env=ckpt)  # type: ignore[operator]
    worker = run.worker_pid()
    assert process_tree(run.launcher.pid) == [run.launcher.pid, worker]
    assert catches_signal(worker, SPOT_SIGNAL) and not catches_signal(run.launcher.pid,
                                                                      SPOT_SIGNAL)
    agent = tmp_path / "agent"
    watcher = SpotWatcher(AwsSpot(metadata_server.url, sim_clock), EventLog(agent, sim_clock),
                          runs_dir=runs, agent_dir=agent, clock=sim_clock)
    assert watcher.poll() is None
    assert not (run.folder / SPOT_NOTICE_FILE).exists()

    metadata_server.state.aws_action = AWS_NOTICE
    event = watcher.poll()
    assert event is not None and event["kind"] == "spot-notice"
    assert event["runs"] == ["run-1"] and event["signalled"] == [worker]
    assert sorted(event["files"]) == sorted(
        [str(run.folder / SPOT_NOTICE_FILE), str(ckpt / SPOT_NOTICE_FILE)])
    for folder in (run.folder, ckpt, agent):
        payload = json.loads((folder / SPOT_NOTICE_FILE).read_text())
        assert payload == {"provider": "aws", "action": "terminate",
                           "time": "2017-09-18T08:22:00Z", "deadline": 1505722920.0,
                           "noticed_at": 1_700_000_000.0}
    wait_for(lambda: run.usr1_pids() == [worker], what="the worker's SIGUSR1 handler")
    assert run.launcher.poll() is None, "the launcher (no handler) must not be signalled"

    # the notice stays up on AWS until the end: it is handled once, also after a restart
    assert watcher.poll() is None
    again = SpotWatcher(AwsSpot(metadata_server.url, sim_clock), EventLog(agent, sim_clock),
                        runs_dir=runs, agent_dir=agent, clock=sim_clock)
    assert again.poll() is None
    assert [e["kind"] for e in read_events(agent)] == ["spot-notice"]
    assert run.usr1_pids() == [worker]


def test_the_training_helper_reads_the_notice_file(tmp_path: Path, sim_clock: SimClock,
                                                   metadata_server: MetadataServer,
                                                   start_run: object) -> None:
    spot_mod = pytest.importorskip("gpudesk.training.spot")
    runs = tmp_path / "runs"
    run: LiveRun = start_run(runs, "run-2")  # type: ignore[operator]
    helper = spot_mod.SpotWatcher(run.folder, watch_file=True, install_signal=False)
    assert helper.poll() is None
    metadata_server.state.tencent_time = "2018-08-18 12:05:33"
    watcher = SpotWatcher(TencentSpot(metadata_server.url), EventLog(tmp_path / "a", sim_clock),
                          runs_dir=runs, agent_dir=tmp_path / "a", clock=sim_clock)
    assert watcher.poll() is not None
    assert helper.poll() == "file"
    assert helper.read_notice()["time"] == "2018-08-18 12:05:33"
    assert spot_mod.SPOT_NOTICE_FILE == SPOT_NOTICE_FILE and spot_mod.SPOT_SIGNAL == SPOT_SIGNAL
