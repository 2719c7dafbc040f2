"""Watch restarts are counted from kopf's DEBUG lines, without printing them at INFO."""

from __future__ import annotations

import logging

import pytest
from prometheus_client import generate_latest

from nemotron_operator.telemetry import OperatorMetrics
from nemotron_operator.telemetry.watches import WATCHING_LOGGER, count_watch_restarts


def test_restarts_are_counted_and_debug_lines_stay_quiet(caplog: pytest.LogCaptureFixture) -> None:
    metrics = OperatorMetrics()
    count_watch_restarts(metrics, show_debug=False)
    logger = logging.getLogger(WATCHING_LOGGER)
    resource = "nemotrondeployments.v1alpha1.serving.nemotron.io"
    with caplog.at_level(logging.DEBUG):
        logger.debug(f"Starting the watch-stream for {resource} cluster-wide.")
        logger.debug(f"Restarting the watch-stream for {resource} cluster-wide.")
        logger.debug("Watch-stream for pods.v1 cluster-wide is inactive, reconnecting.")
        logger.warning("Ignoring an unsupported event type: {}")
    text = generate_latest(metrics.registry).decode()
    assert f'nemotron_operator_watch_restarts_total{{resource="{resource}"}} 1.0' in text
    assert 'nemotron_operator_watch_restarts_total{resource="pods.v1"} 1.0' in text
    assert [r.levelno for r in caplog.records] == [logging.WARNING]
