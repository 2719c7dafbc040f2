"""A stand-in for the vLLM OpenAI server (v0.31.0), for tests and the demo: a simulation.

It serves `/health`, `/v1/models`, `/version`, `/metrics`, `/v1/chat/completions` and
`/v1/completions` with deterministic text and vLLM's metric names, from the same
`vllm serve MODEL ...` command line the operator renders, and refuses flags the pinned vLLM
would refuse. No GPU and no model are involved.
"""

from nemotron_sim.vllm.args import ServeConfig, StubVllmArgumentError, parse_serve_argv
from nemotron_sim.vllm.engine import Timing
from nemotron_sim.vllm.server import StubVllm

__all__ = ["ServeConfig", "StubVllm", "StubVllmArgumentError", "Timing", "parse_serve_argv"]
