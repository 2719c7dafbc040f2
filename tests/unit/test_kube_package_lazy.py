"""Importing the transport (what the simulator uses) does not load the operator's client."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

OPERATOR = Path(__file__).resolve().parents[2] / "operator"


def test_the_transport_alone_loads_neither_the_client_nor_the_connection() -> None:
    probe = (
        "import sys; import nemotron_operator.kube.transport; "
        "print(sorted(m for m in sys.modules if m.startswith('nemotron_operator.kube.')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        env={"PYTHONPATH": str(OPERATOR)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "nemotron_operator.kube.transport" in out
    assert "nemotron_operator.kube.client" not in out
    assert "nemotron_operator.kube.config" not in out


def test_the_package_still_offers_its_names() -> None:
    from nemotron_operator import kube
    from nemotron_operator.kube.client import KubeClient

    assert kube.KubeClient is KubeClient
    assert kube.Action.RETRY_LATER is not None
    with pytest.raises(AttributeError, match="NotAName"):
        kube.NotAName  # noqa: B018
