#!/usr/bin/env python3
"""Record what vLLM's CPU build answers, as the contract the stand-in vLLM is tested against
(tests/integration/vllm_stub/test_contract.py, tests/unit/sim_vllm/test_recorded_facts.py).

    hack/record-vllm-contract.py [--parser-only] [OUTDIR]
                                 (default OUTDIR: tests/contract/vllm-<release>-cpu)

Builds the engine if needed (hack/build-vllm-cpu.sh), writes a scripted tiny Nemotron-H with MTP
(sim_cluster.checkpoints) into a temporary directory, starts `vllm serve` on 127.0.0.1 with the
flags in SERVE_ARGS (the ones the operator renders for it), sends the requests in REQUESTS and
writes each answer (status and body; a stream as its lines), /metrics, /v1/models and the
long options of `vllm serve`'s parser (serve-flags.txt) and each option's action, type, choices
and default with vLLM's environment variables (serve-parser.json) to OUTDIR, then stops the
engine. Takes 1-5 minutes on 2 cores; `--parser-only` records the two parser files alone (about
15 seconds, no engine started). Nothing leaves the machine.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PORT = 18931
MODEL = "tiny"
SERVE_ARGS = [
    "--served-model-name", MODEL, "--max-model-len", "2048", "--enforce-eager",
    "--kv-cache-memory-bytes", str(128 << 20), "--no-enable-prefix-caching",
    "--speculative-config", '{"method":"mtp","num_speculative_tokens":1}',
    "--reasoning-parser", "nemotron_v3", "--tool-call-parser", "qwen3_coder",
    "--enable-auto-tool-choice", "--host", "127.0.0.1", "--port", str(PORT),
]  # fmt: skip
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
SCHEMA = {
    "type": "object",
    "properties": {"status": {"type": "string", "enum": ["ready"]}, "ok": {"type": "boolean"}},
    "required": ["status", "ok"],
    "additionalProperties": False,
}
OFF = {"chat_template_kwargs": {"enable_thinking": False}}
ON = {"chat_template_kwargs": {"enable_thinking": True}}


def chat(prompt: str, max_tokens: int = 64, **extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "temperature": 0, "max_tokens": max_tokens,
            "messages": [{"role": "user", "content": prompt}], **extra}  # fmt: skip


# name → (method, path, body); a body with "stream": true is recorded line by line
REQUESTS: dict[str, tuple[str, str, dict[str, Any] | None]] = {
    "models": ("GET", "/v1/models", None),
    "chat-plain": ("POST", "/v1/chat/completions", chat("Reply with the word: ready", **OFF)),
    "chat-reasoning-on": ("POST", "/v1/chat/completions", chat("What is 2 + 3?", 256, **ON)),
    "chat-reasoning-off": ("POST", "/v1/chat/completions", chat("What is 2 + 3?", 256, **OFF)),
    "chat-tools": ("POST", "/v1/chat/completions",
                   chat("Weather in Paris?", 256, tools=[WEATHER], tool_choice="auto", **OFF)),
    "chat-json-schema": ("POST", "/v1/chat/completions", chat("JSON please", 128, **OFF,
        response_format={"type": "json_schema",
                         "json_schema": {"name": "status", "schema": SCHEMA}})),
    "chat-stream": ("POST", "/v1/chat/completions",
                    chat("Say hi", 32, stream=True, stream_options={"include_usage": True}, **ON)),
    "error-unknown-model": ("POST", "/v1/chat/completions", {**chat("hi"), "model": "nope"}),
    "error-bad-max-tokens": ("POST", "/v1/chat/completions", chat("hi", -1)),
    "error-too-long": ("POST", "/v1/chat/completions", chat("word " * 3000, 16)),
    "metrics": ("GET", "/metrics", None),  # last: counters after the chats
}  # fmt: skip


# Every option `vllm serve` accepts, from vLLM's own parser: the long names (serve-flags.txt) and
# each option's action, value type (with the type a wrapper such as optional_type wraps), nargs,
# choices and default (serve-parser.json, what the stand-in's flag data is derived from), the
# environment variables vLLM reads (vllm/envs.py) and the reasoning and tool-call parsers it has
# built in (what `vllm serve` checks --reasoning-parser and --tool-call-parser against).
PARSER_SCRIPT = """
import json
import vllm.envs
from vllm.utils.argparse_utils import FlexibleArgumentParser
from vllm.entrypoints.launchers.cli_args import make_arg_parser
parser = make_arg_parser(FlexibleArgumentParser())

def name(kind):
    return None if kind is None else getattr(kind, "__name__", type(kind).__name__)

def wrapped(kind):
    cells = getattr(kind, "__closure__", None) or ()
    inner = [c.cell_contents for c in cells if callable(c.cell_contents)]
    return [w for k in inner for w in (name(k), *wrapped(k))]

def plain(value):
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return repr(value)

actions = [
    {"options": list(a.option_strings), "action": type(a).__name__,
     "nargs": a.nargs, "type": name(a.type), "wraps": wrapped(a.type),
     "choices": None if a.choices is None else [plain(c) for c in a.choices],
     "default": plain(a.default)}
    for a in parser._actions if any(o.startswith("--") for o in a.option_strings)
]
names = sorted({o for a in parser._actions for o in a.option_strings if o.startswith("--")})
from vllm.reasoning import ReasoningParserManager
try:
    from vllm.tool_parsers import ToolParserManager
except ImportError:
    from vllm.entrypoints.openai.tool_parsers import ToolParserManager
import contextlib, io, re, sys
cases = []
for case in json.loads(sys.argv[1]):
    said = io.StringIO()
    try:
        with contextlib.redirect_stderr(said):
            make_arg_parser(FlexibleArgumentParser()).parse_args(["model", *case])
        cases.append({"args": case, "error": None})
    except SystemExit:
        error = said.getvalue().strip().splitlines()[-1].split(": error: ", 1)[1]
        cases.append({"args": case, "error": re.sub(" at 0x[0-9a-f]+", "", error)})
print(json.dumps({"names": names, "actions": actions,
                  "environmentVariables": sorted(vllm.envs.environment_variables),
                  "reasoningParsers": list(ReasoningParserManager.list_registered()),
                  "toolCallParsers": list(ToolParserManager.list_registered()),
                  "cases": cases}))
"""
# Argument lists (after `vllm serve MODEL`) the parser is run on: its verdict and error for each
# are recorded (serve-parser.json "cases"; tests/unit/sim_vllm/test_recorded_facts.py gives the
# stand-in's parser the same lists). Spellings, value kinds, and the places the operator's flag
# table and this parser disagree (docs/compatibility.md).
PARSER_CASES = [
    ["--max-model", "4"], ["--max_num_seqs=3"], ["--max-model-len", "1.5k"],
    ["--max-model-len", "-1"], ["--max-model-len", "auto"], ["--max-model-len", "1K"],
    ["--hf-token"], ["--hf-overrides", "abc"], ["--no-enable-prefix-caching"], ["-tp", "2"],
    ["--speculative-config.method", "mtp", "--speculative-config.num_speculative_tokens", "2"],
    ["--device-memory-utilization", "0.8"], ["--served-model-name", "a", "b"],
    ["--middleware", "x", "--middleware", "y"], ["--max-cpu-loras", "None"],
    ["--moe-backend", "triton"], ["--kv-cache-memory-bytes", "1G"], ["-dpa", "10.0.0.1"],
    ["--enable-lora", "--max-lora-rank", "64"], ["--lora-modules", "a=/p", "b=/q"],
    ["--swap-space", "16"], ["--kv-cache-dtype", "fp7"], ["--speculative-config", "{method: mtp"],
    ["--limit-mm-per-prompt", "image=8"], ["-tp", "four"], ["--max-num-seqs"],
    ["--enforce-eager=true"], ["--headless=1"], ["--max-lora-rank", "24"],
    ["--served-model-name"], ["--max-model-len", "12q"], ["--gpu-memory-utilization", "x"],
    ["--max-num-batched-tokens", "auto"], ["--max-model-len", "1.5K"], ["--max", "4"],
    ["--bogus", "--max-num-seqs", "3", "--also-bogus", "x"], ["--lora-modules", "no-path"],
    ["--no-disable-log-stats"], ["--kv-cache-dtype", "int8"], ["--mamba-cache-mode", "all"],
    ["--all2all-backend", "nope"], ["--spec-method", "nope"], ["--kv-cache-memory-bytes", "auto"],
    ["--max-cpu-loras", "x"], ["--compilation-config.mode", "3"],
]  # fmt: skip


def record_parser(python: Path, release: str, out: Path, env: dict[str, str], cwd: str) -> None:
    """serve-flags.txt and serve-parser.json from the engine's own parser (seconds, no model)."""
    answer = subprocess.run([str(python), "-c", PARSER_SCRIPT, json.dumps(PARSER_CASES)],
                            capture_output=True, text=True, check=True, env=env,
                            cwd=cwd).stdout  # fmt: skip
    parser = json.loads(answer)
    out.mkdir(parents=True, exist_ok=True)
    (out / "serve-flags.txt").write_text("\n".join(parser.pop("names")) + "\n")
    parser = {
        "release": release,
        "recorded": "hack/record-vllm-contract.py: make_arg_parser("
        "FlexibleArgumentParser())._actions and its answer to each of PARSER_CASES, "
        "vllm.envs.environment_variables and the reasoning and tool parser managers' "
        "list_registered()",
        **parser,
    }
    (out / "serve-parser.json").write_text(json.dumps(parser, indent=1, sort_keys=True) + "\n")


def call(method: str, path: str, body: dict[str, Any] | None) -> tuple[int, bytes]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{PORT}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=300) as response:  # noqa: S310 (loopback)
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def record(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, (method, path, body) in REQUESTS.items():
        status, raw = call(method, path, body)
        if name == "metrics":
            (out / "metrics.txt").write_bytes(raw)
            continue
        if body is not None and body.get("stream"):
            lines = [line for line in raw.decode().splitlines() if line.strip()]
            answer: Any = {"status": status, "lines": lines}
        else:
            answer = {"status": status, "body": json.loads(raw)}
        answer["request"] = {"method": method, "path": path, "body": body}
        (out / f"{name}.json").write_text(json.dumps(answer, indent=2, sort_keys=True) + "\n")
        sys.stderr.write(f"record-vllm-contract: {name}: HTTP {status}\n")


def main() -> int:
    build = ROOT / "hack" / "build-vllm-cpu.sh"
    subprocess.run([str(build)], check=True)
    venv = subprocess.run([str(build), "--print-dir"], capture_output=True, text=True, check=True)
    python = Path(venv.stdout.strip()) / "bin" / "python"
    release = subprocess.run([str(python), "-c", "import vllm; print(vllm.__version__)"],
                             capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    args = [a for a in sys.argv[1:] if a != "--parser-only"]
    out = Path(args[0]) if args else (
        ROOT / "tests" / "contract" / f"vllm-{release.split('+')[0]}-cpu")  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k != "VLLM_CPU_KVCACHE_SPACE"}
    path = os.pathsep.join([str(ROOT / "operator"), str(ROOT / "hack")])  # sim_cluster.checkpoints
    env.update(PYTHONPATH=path, VLLM_HOST_IP="127.0.0.1",
               VLLM_NO_USAGE_STATS="1", HF_HUB_OFFLINE="1")  # fmt: skip
    if "--parser-only" in sys.argv[1:]:
        with tempfile.TemporaryDirectory(prefix="vllm-contract-") as tmp:
            record_parser(python, release.split("+")[0], out, env, tmp)
        sys.stderr.write(f"record-vllm-contract: wrote the parser's files into {out}\n")
        return 0
    with tempfile.TemporaryDirectory(prefix="vllm-contract-") as tmp:
        model = Path(tmp) / "model"
        subprocess.run([str(python), "-m", "sim_cluster.checkpoints", str(model), "--mtp"],
                       check=True, env=env, stdout=subprocess.DEVNULL)  # fmt: skip
        log = (Path(tmp) / "serve.log").open("wb")
        serve = [str(python), "-m", "vllm.entrypoints.cli.main", "serve", str(model), *SERVE_ARGS]
        server = subprocess.Popen(serve, env=env, cwd=tmp, stdout=log, stderr=subprocess.STDOUT,
                                  start_new_session=True)  # fmt: skip
        record_parser(python, release.split("+")[0], out, env, tmp)
        try:
            deadline = time.monotonic() + 900
            while not _up():
                if server.poll() is not None or time.monotonic() > deadline:
                    sys.stderr.write((Path(tmp) / "serve.log").read_text()[-4000:])
                    return 1
                time.sleep(2)
            record(out)
            (out / "COMMAND").write_text(
                "hack/record-vllm-contract.py  # recorded from vLLM " + release + " with:\n"
                "vllm serve <tiny scripted Nemotron-H with MTP> " + " ".join(SERVE_ARGS) + "\n"
            )
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=60)
    sys.stderr.write(f"record-vllm-contract: wrote {out}\n")
    return 0


def _up() -> bool:
    try:
        return call("GET", "/health", None)[0] == 200
    except OSError:
        return False


if __name__ == "__main__":
    sys.exit(main())
