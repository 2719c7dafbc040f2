"""Count kopf's watch-stream restarts for ``nemotron_operator_watch_restarts_total``.

kopf restarts a watch after the API server closes it or it goes quiet, and says so only in a
DEBUG line of ``kopf._cogs.clients.watching`` ("Restarting the watch-stream for …", "Watch-stream
for … is inactive, reconnecting."). A filter on that logger counts those lines; unless the
operator runs at DEBUG it then drops them, so enabling the count adds no log output.
"""

from __future__ import annotations

import logging
import re

from nemotron_operator.telemetry.metrics import OperatorMetrics

WATCHING_LOGGER = "kopf._cogs.clients.watching"
_RESTART = re.compile(r"(?:Restarting the watch-stream for|Watch-stream for) (\S+)")
_RECONNECT = "reconnecting"


class WatchRestartCounter(logging.Filter):
    def __init__(self, metrics: OperatorMetrics, *, show_debug: bool) -> None:
        super().__init__()
        self._metrics = metrics
        self._show_debug = show_debug

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        found = _RESTART.match(message)
        if found and (message.startswith("Restarting") or _RECONNECT in message):
            self._metrics.watch_restarted(found.group(1))
        return record.levelno > logging.DEBUG or self._show_debug


def count_watch_restarts(metrics: OperatorMetrics, *, show_debug: bool) -> WatchRestartCounter:
    """Install the counter on kopf's watching logger (idempotent per metrics object)."""
    logger = logging.getLogger(WATCHING_LOGGER)
    for existing in logger.filters:
        if isinstance(existing, WatchRestartCounter):
            logger.removeFilter(existing)
    counter = WatchRestartCounter(metrics, show_debug=show_debug)
    logger.addFilter(counter)
    logger.setLevel(logging.DEBUG)
    return counter
