#!/usr/bin/env python3
"""The recipe cases through an INSTALLED vLLM release's own configuration and cache code, to
check the stand-ins of hack/vllm-release-reference.py (which executes a few functions extracted
from each wheel). Run it with the Python of a throwaway environment that has the release
installed (never the repository's .venv; the tests run without vLLM):

    <env>/bin/python hack/vllm-installed-reference.py          # prints JSON to stdout
    <env>/bin/python hack/vllm-installed-reference.py --write  # and records the release in
        tests/unit/sizing/vllm_installed_reference.json

What runs is vLLM's own code, unchanged, for each case:

- a config.json written from the operator's catalog (the dimensions, the layer pattern, the MTP
  pattern), read by transformers and vLLM's ``EngineArgs(...).create_engine_config()`` (the
  server's path: ModelConfig, CacheConfig with the prefix-caching -> ``mamba_cache_mode``
  derivation, ParallelConfig, SpeculativeConfig for MTP, VllmConfig);
- ``CudaPlatform.update_block_size_for_backend`` (the backend's preferred block size, then
  ``Platform._align_hybrid_block_size`` reading the model class's
  ``get_mamba_state_shape_from_config``/``get_mamba_state_dtype_from_config`` and the real
  ``FullAttentionSpec``/``MambaSpec``) with ``FlashAttentionBackend``'s own kernel block sizes;
- one ``FullAttentionSpec``/``MambaSpec`` per layer, built with the fields the layers'
  ``get_kv_cache_spec`` give them (Attention: kv heads / head size from ModelConfig, the cache
  dtype; MambaBase: the model class's shapes and dtypes, ``mamba_block_size``, the padded page,
  ``num_speculative_blocks``);
- ``get_kv_cache_configs`` with a fixed 64 GiB of available memory, then
  ``get_max_concurrency_for_kv_cache_config``.

The environment it was run in (vLLM's full dependency set did not resolve from PyPI here:
vLLM 0.34.0 pins flashinfer-python==0.7.3, which the index does not serve): a fresh venv, the
release's wheel from PyPI installed with ``pip install --no-deps vllm==0.3X.0``, and a ``.pth``
file naming the site-packages of an existing vLLM CPU environment (torch 2.13.0+cu130,
transformers 5.19.0; 0.34.0 asks for torch 2.14.0) for the dependencies. The code that runs is
Python configuration code that does not depend on the torch minor version.

In-process stand-ins (this machine has no GPU; the installed package is never edited):
``current_platform`` is set to ``CudaPlatform`` with compute capability 9.0 (H100) and 8
devices; ``_find_non_ssm_backends`` returns ``[FlashAttentionBackend]`` (it walks the model's
instantiated layers, which need the weights' shapes on a device); the Mamba layers'
prefill-checkpoint alignment is therefore read from no layer (vLLM's function returns 1 then,
which leaves the alignment unchanged, as Mamba-2's ``None`` does).
"""

# vLLM is imported inside functions: it exists only in the throwaway environment, and only
# after the platform is installed.
# ruff: noqa: PLC0415

from __future__ import annotations

import argparse
import fcntl
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import json
import os
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "unit" / "sizing" / "vllm_installed_reference.json"
_spec = importlib.util.spec_from_file_location("ref", ROOT / "hack" / "vllm-release-reference.py")
assert _spec is not None
assert _spec.loader is not None
ref = importlib.util.module_from_spec(_spec)
sys.modules["ref"] = ref  # its dataclasses look their module up
_spec.loader.exec_module(ref)

POOL_BYTES: int = ref.POOL_BYTES
COMMAND = (
    "<env>/bin/python hack/vllm-installed-reference.py --write, <env> a throwaway environment "
    "with the release installed (this script's docstring)"
)


def config_json(model: Any) -> dict[str, Any]:
    d = model.dims
    config: dict[str, Any] = {
        "architectures": ["NemotronHForCausalLM"],
        "model_type": "nemotron_h",
        "hybrid_override_pattern": model.layer_pattern,
        "num_hidden_layers": model.num_hidden_layers,
        "vocab_size": d.vocab_size,
        "hidden_size": d.hidden_size,
        "num_attention_heads": d.num_attention_heads,
        "num_key_value_heads": d.num_key_value_heads,
        "head_dim": d.head_dim,
        "intermediate_size": d.intermediate_size or d.moe_intermediate_size or 1,
        "mlp_hidden_act": "relu2",
        "mamba_num_heads": d.mamba_num_heads,
        "mamba_head_dim": d.mamba_head_dim,
        "ssm_state_size": d.ssm_state_size,
        "n_groups": d.mamba_n_groups,
        "conv_kernel": d.conv_kernel,
        "expand": 2,
        "chunk_size": 128,
        "use_conv_bias": True,
        "mamba_hidden_act": "silu",
        "max_position_embeddings": model.max_position_embeddings,
        "torch_dtype": "bfloat16",
        "n_routed_experts": d.n_routed_experts,
        "num_experts_per_tok": d.num_experts_per_tok,
        "n_shared_experts": d.n_shared_experts,
        "moe_intermediate_size": d.moe_intermediate_size or 1,
        "moe_shared_expert_intermediate_size": d.moe_shared_expert_intermediate_size or 1,
        "num_nextn_predict_layers": model.mtp_layers,
        "eos_token_id": 2,
        "bos_token_id": 1,
        "pad_token_id": 0,
    }
    if d.moe_latent_size:
        config["moe_latent_size"] = d.moe_latent_size
    if model.mtp_layers:
        config["mtp_hybrid_override_pattern"] = model.mtp_pattern
    return config


def _kernel(*args: Any, **kwargs: Any) -> None:
    raise RuntimeError("a GPU kernel: not run here")


class _KernelModule(types.ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return _kernel


class _KernelFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Modules under a prefix (Triton kernels) become modules of placeholders."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def find_spec(self, name: str, path: Any, target: Any = None) -> Any:
        if name.startswith(self.prefix):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec: Any) -> types.ModuleType:
        module = _KernelModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        return None


def install_platform() -> tuple[Any, str]:
    """current_platform := CudaPlatform (H100, 8 devices), in this process only."""
    import vllm
    from vllm import platforms

    # Kernels need a driver (libcuda, the FlashAttention extensions, Triton's GPU backend): they
    # are left out in this process's sys.modules, the config and cache code is not (the package
    # is not edited).
    sys.modules.setdefault("vllm._C_stable_libtorch", ref._module("vllm._C_stable_libtorch"))
    sys.modules["vllm.vllm_flash_attn"] = ref._module(
        "vllm.vllm_flash_attn", FA2_AVAILABLE=False, FA3_AVAILABLE=False,
        **dict.fromkeys((
            "compile_flash_attn_varlen_func_from_specs", "flash_attn_varlen_func",
            "get_scheduler_metadata", "fa_version_unsupported_reason",
            "is_fa_version_supported"), _kernel),
    )  # fmt: skip
    sys.meta_path.insert(0, _KernelFinder("vllm.model_executor.layers.mamba.ops."))
    from vllm.platforms.cuda import CudaPlatform
    from vllm.platforms.interface import DeviceCapability

    # Before anything imports ``current_platform`` (modules bind it at import).
    CudaPlatform.get_device_capability = classmethod(
        lambda cls, device_id=0: DeviceCapability(9, 0)
    )
    CudaPlatform.device_count = classmethod(lambda cls: 8)
    platforms._current_platform = CudaPlatform()
    import vllm._custom_ops as ops

    ops.cutlass_scaled_mm_supports_block_fp8 = lambda _capability: False
    ops.cutlass_scaled_mm_supports_fp8 = lambda _capability: False
    # The model class is inspected in a fresh interpreter (one per case, without the above):
    # inspect it in this one.
    registry = importlib.import_module("vllm.model_executor.models.registry")
    registry._run_in_subprocess = lambda fn: fn()
    from vllm.v1.attention.backends.flash_attn import FlashAttentionBackend

    CudaPlatform._find_non_ssm_backends = classmethod(lambda cls, _c: [FlashAttentionBackend])
    assert type(platforms.current_platform) is CudaPlatform
    return CudaPlatform, str(vllm.__version__)


def compute(case: Any, platform: Any, workdir: Path) -> dict[str, Any]:
    import vllm.config.vllm as config_module

    bound = getattr(config_module, "current_platform", None)  # 0.34 binds it at import
    assert bound is None or type(bound) is platform, "current_platform was bound too early"
    import torch
    from vllm.engine.arg_utils import EngineArgs
    from vllm.model_executor.models import ModelRegistry
    from vllm.v1.core.kv_cache_utils import get_max_concurrency_for_kv_cache_config
    from vllm.v1.kv_cache_interface import FullAttentionSpec, MambaSpec

    try:
        from vllm.v1.core.kv_cache_planning import get_kv_cache_configs
    except ImportError:
        from vllm.v1.core.kv_cache_utils import get_kv_cache_configs

    model = ref.lookup_model(case.model)
    path = workdir / case.model.split("/")[-1]
    path.mkdir(exist_ok=True)
    (path / "config.json").write_text(json.dumps(config_json(model)), encoding="utf-8")
    args = EngineArgs(
        model=str(path),
        skip_tokenizer_init=True,
        load_format="dummy",
        tensor_parallel_size=case.tp,
        kv_cache_dtype=case.kv_dtype,
        mamba_ssm_cache_dtype=case.ssm_dtype,
        enable_prefix_caching=case.prefix_caching,
        max_model_len=case.max_model_len,
        speculative_config=(
            {"method": "mtp", "num_speculative_tokens": case.spec_tokens}
            if case.spec_tokens
            else None
        ),
    )
    config = args.create_engine_config()
    platform.update_block_size_for_backend(config)
    cache, model_config = config.cache_config, config.model_config
    model_cls, _ = ModelRegistry.resolve_model_cls(
        model_config.architecture, model_config=model_config
    )
    shapes = tuple(tuple(s) for s in model_cls.get_mamba_state_shape_from_config(config))
    dtypes = tuple(model_cls.get_mamba_state_dtype_from_config(config))
    kv_dtype = (
        model_config.dtype
        if cache.cache_dtype == "auto"
        else {"fp8": torch.float8_e4m3fn, "fp8_e4m3": torch.float8_e4m3fn}[cache.cache_dtype]
    )
    attn = FullAttentionSpec(
        block_size=cache.block_size,
        num_kv_heads=model_config.get_num_kv_heads(config.parallel_config),
        head_size=model_config.get_head_size(),
        dtype=kv_dtype,
    )
    mamba = MambaSpec(
        shapes=shapes,
        dtypes=dtypes,
        block_size=cache.mamba_block_size,
        page_size_padded=cache.mamba_page_size_padded,
        mamba_type="mamba2",
        mamba_cache_mode=cache.mamba_cache_mode,
        num_speculative_blocks=config.num_speculative_tokens,
    )
    pattern = model.layer_pattern
    specs: dict[str, Any] = {}
    for i, kind in enumerate(pattern):
        if kind == "*":
            specs[f"model.layers.{i}.mixer.attn"] = attn
        elif kind == "M":
            specs[f"model.layers.{i}.mixer"] = mamba
    if config.num_speculative_tokens and model.mtp_layers:
        for i in range(model.mtp_attention_layers):
            specs[f"mtp.layers.{len(pattern) + i}.mixer.attn"] = attn
    backends_utils = importlib.import_module("vllm.v1.attention.backends.utils")
    if hasattr(backends_utils, "resolve_kv_cache_layout"):  # as EngineCore does (0.34)
        worker_base = importlib.import_module("vllm.v1.worker.worker_base")
        backend = platform._find_non_ssm_backends(config)
        layouts = [layout.name for layout in worker_base.get_supported_kv_cache_layouts(backend)]
        backends_utils.resolve_kv_cache_layout(config, [layouts], list(specs.values()))
    if "global_kv_cache_groups" in inspect.signature(get_kv_cache_configs).parameters:
        from vllm.v1.core.kv_cache_planning import get_global_kv_cache_groups

        global_groups = get_global_kv_cache_groups(config, [specs])  # as EngineCore does
        (kv_config,) = get_kv_cache_configs(config, [specs], [POOL_BYTES], global_groups)
    else:
        (kv_config,) = get_kv_cache_configs(config, [specs], [POOL_BYTES])
    groups = kv_config.kv_cache_groups
    concurrency = get_max_concurrency_for_kv_cache_config(config, kv_config)
    one_token = attn.page_size_bytes // attn.block_size
    attention_layers = sum(isinstance(s, FullAttentionSpec) for s in specs.values())
    return {
        "blockSize": cache.block_size,
        "attentionPagePerToken": one_token,
        "kvBytesPerToken": one_token * attention_layers,
        "pageBytes": attn.page_size_bytes,
        "mambaPageBytes": MambaSpec(shapes=shapes, dtypes=dtypes, block_size=-1).page_size_bytes,
        "groups": len(groups),
        "layersPerGroup": max(len(g.layer_names) for g in groups),
        "blocksPerRequest": sum(  # what get_max_concurrency_for_kv_cache_config divides by
            -(-g.kv_cache_spec.max_memory_usage_bytes(config) // g.kv_cache_spec.page_size_bytes)
            for g in groups
        ),
        "blocksFor64GiB": kv_config.num_blocks,
        "concurrencyFor64GiB": concurrency,
        "mambaCacheMode": cache.mamba_cache_mode,
        "mambaDtypes": [str(t).removeprefix("torch.") for t in dtypes],
    }


def main() -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the config is local; nothing to download
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help=f"record in {OUT.name}")
    parser.add_argument("--case", help="only cases whose name contains this")
    options = parser.parse_args()
    platform, version = install_platform()
    rows: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as workdir:
        for case in ref.CASES:
            if options.case and options.case not in case.name:
                continue
            rows[case.name] = compute(case, platform, Path(workdir))
            print(case.name, rows[case.name], file=sys.stderr)
    release = version.split("+")[0]
    result = {"release": release, "installedVersion": version, "cases": rows}
    print(json.dumps(result, indent=1, sort_keys=True))
    if options.write:  # under a lock: releases may be run side by side
        with OUT.with_suffix(".lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            recorded = json.loads(OUT.read_text(encoding="utf-8")) if OUT.exists() else {}
            recorded.setdefault("poolBytes", POOL_BYTES)
            recorded["command"] = COMMAND
            recorded.setdefault("releases", {})[release] = result
            text = json.dumps(recorded, indent=1, sort_keys=True) + "\n"
            OUT.write_text(text, encoding="utf-8")
        OUT.with_suffix(".lock").unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
