"""The real engine in the loop: containers of the vLLM image run vLLM's CPU build.

With ``python -m sim_cluster --engine vllm --vllm-python PYTHON`` (PYTHON: the interpreter of
the environment ``hack/build-vllm-cpu.sh`` builds) the kubelet runs every container of the vLLM
image (``vllm/vllm-openai``, any tag) as a real process instead of the stand-in: the operator's
rendered command, args and environment unchanged, the image's ``vllm`` executable being that
environment's vLLM (``python -m vllm.entrypoints.cli.main``), the container's volumes at their
``mountPath`` (sim_cluster/container_root.py). Probes, logs, restarts and the crash
back-off are those of every process container (nemotron_sim/kubelet/process_runner.py). Where
the rendered command cannot run on the CPU build, the container fails as it would on a
cluster: the simulator rewrites no flag.
"""

from __future__ import annotations

import sys
from pathlib import Path

ENGINES = ("stand-in", "vllm")
VLLM_IMAGE_REPOSITORY = "vllm/vllm-openai"
_LAUNCHER = (sys.executable, "-m", "sim_cluster.container_root")


def vllm_program(python: Path) -> tuple[str, ...]:
    """What the image's ``vllm`` executable is: the engine environment's vLLM CLI, started
    inside the container's root."""
    return (*_LAUNCHER, str(python), "-m", "vllm.entrypoints.cli.main")


def engine_mappings(
    engine: str, python: Path | None
) -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    """(images, commands) to add to the kubelet's programs for ``--engine``; ValueError naming
    the option when it cannot work."""
    if engine not in ENGINES:
        raise ValueError(f"--engine: {engine!r} is not one of {', '.join(ENGINES)}")
    if engine == "stand-in":
        return {}, {}
    if python is None:
        raise ValueError(
            "--engine vllm needs --vllm-python: the Python of the CPU vLLM environment "
            "(hack/build-vllm-cpu.sh builds it; `hack/build-vllm-cpu.sh --print-dir` names it)"
        )
    if not python.is_file():
        raise ValueError(
            f"--vllm-python: {python} does not exist; run hack/build-vllm-cpu.sh first"
        )
    program = vllm_program(python)
    # The image's entrypoint is `vllm serve`; a container command `vllm ...` is the same binary.
    return {VLLM_IMAGE_REPOSITORY: (*program, "serve")}, {"vllm": program}
