#!/usr/bin/env python3
"""Reference numbers for the recipe cases, computed by each vLLM release's OWN functions,
extracted from its wheel and executed in isolation (vLLM itself cannot be imported here: it needs
torch and a GPU platform). Writes tests/unit/sizing/vllm_release_reference.json, which
tests/unit/sizing/test_release_reference.py compares with the planner.

Executed from each release's source, unchanged (``ast`` extracts the function, ``exec`` runs it):

- ``MambaStateShapeCalculator.mamba2_state_shape`` / ``extra_groups_for_head_shards`` /
  ``_orient_conv_shape`` (model_executor/layers/mamba/mamba_utils.py): the Mamba state shapes;
- ``Platform._align_hybrid_block_size`` (platforms/interface.py): the hybrid block size and the
  padded Mamba page, starting from the release's ``CacheConfig.DEFAULT_BLOCK_SIZE``;
- ``_get_kv_cache_groups_uniform_page_size`` (v1/core/kv_cache_utils.py, or
  kv_cache_planning.py from 0.33): the KV cache groups;
- ``FullAttentionSpec.max_memory_usage_bytes`` and ``MambaSpec.max_memory_usage_bytes``
  (v1/kv_cache_interface.py): bytes one full-length request holds per group;
- ``get_max_concurrency_for_kv_cache_config`` (v1/core/kv_cache_utils.py): the concurrency.

Stand-ins (the inputs those functions read, not arithmetic under test): the model's dimensions
(the operator's catalog, itself checked against the checkpoints' configs elsewhere), the dtype
sizes (bfloat16 2, float32 4, fp8 1), the attention page of one token ``2 × kv_heads × head_size
× dtype`` (``AttentionSpec`` for an unquantized cache), the state page ``Σ prod(shape) × dtype``
(``MambaSpec.page_size_bytes``), the attention backend's kernel block sizes ``[MultipleOf(16)]``
(FlashAttention/Triton in 0.31-0.34), Mamba-2's prefill-checkpoint alignment ``None`` (it declares
none), CUDA's indexer alignment ``None`` (NemotronH configs have no ``index_kpool``),
``num_blocks = pool // (page × layers per group)`` for a fixed 64 GiB pool (the pool itself
needs a GPU to measure).

Usage: hack/vllm-release-reference.py   (needs the wheels: hack/gen-vllm-releases.py fetches them)
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import json
import math
import sys
import types
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "operator"))
_spec = importlib.util.spec_from_file_location("gen", ROOT / "hack" / "gen-vllm-releases.py")
assert _spec is not None
assert _spec.loader is not None
gen = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gen)

from nemotron_operator.catalog import lookup_model  # noqa: E402

OUT = ROOT / "tests" / "unit" / "sizing" / "vllm_release_reference.json"
POOL_BYTES = 64 * 2**30
DTYPE_BYTES = {"bfloat16": 2, "float32": 4, "float16": 2, "fp8": 1, "auto": 2}

SUPER_VL = "nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16"
SUPER_NVFP4 = "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-NVFP4"
NANO = "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"
ULTRA = "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16"


@dataclass(frozen=True)
class Case:
    model: str
    tp: int
    spec_tokens: int = 0
    kv_dtype: str = "auto"
    ssm_dtype: str = "float32"
    prefix_caching: bool = True
    max_model_len: int = 262_144

    @property
    def name(self) -> str:
        short = self.model.split("/")[-1]
        return (
            f"{short} TP{self.tp} MTP{self.spec_tokens} kv={self.kv_dtype} "
            f"ssm={self.ssm_dtype} prefix={'on' if self.prefix_caching else 'off'} "
            f"len={self.max_model_len}"
        )


CASES = [
    *(Case(SUPER_VL, tp, s) for tp in (1, 2, 4, 8) for s in (0, 1, 3)),
    Case(SUPER_VL, 4, 1, kv_dtype="fp8"),
    Case(SUPER_VL, 1, 0, kv_dtype="fp8"),
    Case(SUPER_VL, 4, 1, prefix_caching=False),
    Case(SUPER_VL, 1, 0, ssm_dtype="float16"),
    Case(SUPER_NVFP4, 1, 1),
    Case(SUPER_NVFP4, 1, 3, kv_dtype="fp8", max_model_len=131_072),
    *(Case(NANO, tp, 0) for tp in (1, 2, 4, 8)),
    Case(NANO, 1, 0, prefix_caching=False),
    Case(NANO, 1, 0, kv_dtype="fp8", max_model_len=131_072),
    Case(ULTRA, 8, 0),
    Case(ULTRA, 8, 3),
    Case(ULTRA, 8, 0, kv_dtype="fp8"),
]


# --- extraction ----------------------------------------------------------------------------------


def _function(source: str, name: str, owner: str | None = None) -> str:
    tree = ast.parse(source)
    nodes: list[ast.AST] = list(tree.body)
    if owner is not None:
        cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == owner)
        nodes = list(cls.body)
    for node in nodes:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            node.decorator_list = []
            text = ast.get_source_segment(source, node)
            assert text is not None
            lines = text.splitlines()
            indent = len(lines[0]) - len(lines[0].lstrip())
            body = "\n".join(line[indent:] if line.strip() else line for line in lines)
            # ast.get_source_segment drops the decorators but keeps the original indentation
            # of the first line only: re-parse to normalise.
            return ast.unparse(ast.parse(_dedent(text, indent) if indent else body))
    raise SystemExit(f"{owner + '.' if owner else ''}{name} not found")


def _dedent(text: str, indent: int) -> str:
    first, *rest = text.splitlines()
    return "\n".join([first.lstrip(), *(line[indent:] for line in rest)])


def _load(namespace: dict[str, Any], source: str) -> Any:
    exec(compile(source, "<vllm>", "exec"), namespace)  # noqa: S102 - vLLM's own function
    name = ast.parse(source).body[0].name  # type: ignore[attr-defined]
    return namespace[name]


# --- stand-ins for what the functions read -------------------------------------------------------


@dataclass(frozen=True)
class MultipleOf:
    base: int


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


class _Logger:
    def info(self, *args: object, **kwargs: object) -> None: ...
    def warning(self, *args: object, **kwargs: object) -> None: ...
    def debug(self, *args: object, **kwargs: object) -> None: ...
    def info_once(self, *args: object, **kwargs: object) -> None: ...
    def warning_once(self, *args: object, **kwargs: object) -> None: ...


def _module(name: str, **attrs: Any) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__dict__.update(attrs)
    return module


@dataclass(frozen=True)
class AttnSpec:
    """A full-attention layer's KVCacheSpec: the fields the executed functions read."""

    block_size: int
    page_per_token: int
    dcp_sharded: bool = True

    @property
    def page_size_bytes(self) -> int:
        return self.block_size * self.page_per_token

    @classmethod
    def merge(cls, specs: list[Any]) -> Any:
        if not all(s == specs[0] for s in specs):
            raise AssertionError("not mergeable")
        return specs[0]


@dataclass(frozen=True)
class MambaStub:
    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[str, ...]
    block_size: int = -1
    page_size_padded: int | None = None
    num_speculative_blocks: int = 0
    num_prefill_checkpoint_blocks: int = 0
    state_alignment: int = 1

    @property
    def page_size_bytes(self) -> int:
        content = sum(
            math.prod(shape) * DTYPE_BYTES[dtype]
            for shape, dtype in zip(self.shapes, self.dtypes, strict=True)
        )
        return self.page_size_padded if self.page_size_padded is not None else content

    @classmethod
    def merge(cls, specs: list[Any]) -> Any:
        if not all(s == specs[0] for s in specs):
            raise AssertionError("not mergeable")
        return specs[0]


@dataclass
class Group:
    layer_names: list[str]
    kv_cache_spec: Any
    host_resident: bool = False


@dataclass
class KvConfig:
    num_blocks: int
    kv_cache_groups: list[Group]
    hisparse_host_num_blocks: int | None = None


@dataclass
class Cache:
    block_size: int
    cache_dtype: str
    mamba_cache_mode: str
    mamba_ssm_cache_dtype: str
    user_specified_block_size: bool = False
    user_specified_mamba_block_size: bool = False
    mamba_block_size: int | None = None
    mamba_page_size_padded: int | None = None
    prefix_match_unit: int | None = None
    kv_cache_dtype_skip_layers: list[str] = field(default_factory=list)


class Release:
    """One release's functions, extracted from its wheel."""

    def __init__(self, release: str) -> None:
        self.release = release
        wheel = gen.Wheel(gen.wheel(release))
        self.default_block_size = int(
            gen.class_constant(
                wheel.tree("vllm/config/cache.py"), "CacheConfig", "DEFAULT_BLOCK_SIZE"
            )
        )
        mamba_utils = wheel.source("vllm/model_executor/layers/mamba/mamba_utils.py")
        shapes: dict[str, Any] = {"divide": _divide, "is_conv_state_dim_first": lambda: False}
        methods: dict[str, Any] = {}
        for name in ("extra_groups_for_head_shards", "_orient_conv_shape", "mamba2_state_shape"):
            fn = _load(shapes, _function(mamba_utils, name, "MambaStateShapeCalculator"))
            first = fn.__code__.co_varnames[:1]
            methods[name] = classmethod(fn) if first == ("cls",) else staticmethod(fn)
        self._calc = type("MambaStateShapeCalculator", (), methods)
        interface = wheel.source("vllm/platforms/interface.py")
        self.align = _load(
            {"logger": _Logger()}, _function(interface, "_align_hybrid_block_size", "Platform")
        )
        planning = next(
            p for p in ("vllm/v1/core/kv_cache_planning.py", "vllm/v1/core/kv_cache_utils.py")
            if p in wheel.names and "def _get_kv_cache_groups_uniform_page_size" in wheel.source(p)
        )  # fmt: skip
        self.grouping_file = planning
        self.group = _load(
            {"defaultdict": defaultdict, "cdiv": cdiv, "logger": _Logger(),
             "create_kv_cache_group_specs": lambda specs, grouped: [
                 Group(list(names), specs[names[0]]) for names in grouped]},
            _function(wheel.source(planning), "_get_kv_cache_groups_uniform_page_size"),
        )  # fmt: skip
        utils = wheel.source("vllm/v1/core/kv_cache_utils.py")
        self.concurrency = _load(
            {"cdiv": cdiv}, _function(utils, "get_max_concurrency_for_kv_cache_config")
        )
        interface_src = wheel.source("vllm/v1/kv_cache_interface.py")
        self.attn_usage = _load(
            {"cdiv": cdiv}, _function(interface_src, "max_memory_usage_bytes", "FullAttentionSpec")
        )
        self.mamba_usage = _load(
            {"cdiv": cdiv}, _function(interface_src, "max_memory_usage_bytes", "MambaSpec")
        )

    def shapes(self, model: Any, tp: int, spec_tokens: int) -> tuple[tuple[int, ...], ...]:
        d = model.dims
        conv, ssm = self._calc.mamba2_state_shape(
            tp, d.mamba_num_heads * d.mamba_head_dim, d.mamba_n_groups,
            d.mamba_num_heads, d.mamba_head_dim, d.ssm_state_size, d.conv_kernel, spec_tokens,
        )  # fmt: skip
        return tuple(conv), tuple(ssm)

    def compute(self, case: Case) -> dict[str, Any]:
        model = lookup_model(case.model)
        assert model is not None, case.model
        d = model.dims
        kv_heads = max(1, d.num_key_value_heads // case.tp)
        attn_1tok = 2 * kv_heads * d.head_dim * DTYPE_BYTES[case.kv_dtype]
        shapes = self.shapes(model, case.tp, case.spec_tokens)
        dtypes = ("bfloat16", case.ssm_dtype)  # conv state: model dtype; SSM: the flag
        mamba_page = MambaStub(shapes, dtypes).page_size_bytes
        mode = "align" if case.prefix_caching else "none"
        cache = Cache(self.default_block_size, case.kv_dtype, mode, case.ssm_dtype)
        block = self._align(cache, attn_1tok, shapes, dtypes)
        padded = cache.mamba_page_size_padded
        attention = [i for i, k in enumerate(model.layer_pattern) if k == "*"]
        mamba = [i for i, k in enumerate(model.layer_pattern) if k == "M"]
        if case.spec_tokens and model.mtp_layers:
            attention += [model.num_hidden_layers + i for i in range(model.mtp_attention_layers)]
        attn_spec = AttnSpec(block, attn_1tok)
        mamba_spec = MambaStub(
            shapes, dtypes, block_size=cache.mamba_block_size or block,
            page_size_padded=padded, num_speculative_blocks=case.spec_tokens,
        )  # fmt: skip
        specs: dict[str, Any] = {f"layers.{i}": attn_spec for i in attention}
        specs.update({f"layers.{i}": mamba_spec for i in mamba})
        specs = dict(sorted(specs.items(), key=lambda kv: int(kv[0].split(".")[1])))
        groups = self.group(specs)
        config = types.SimpleNamespace(
            model_config=types.SimpleNamespace(max_model_len=case.max_model_len),
            parallel_config=types.SimpleNamespace(decode_context_parallel_size=1),
            cache_config=cache,
        )
        per_group = max(len(g.layer_names) for g in groups)
        page = attn_spec.page_size_bytes
        blocks = POOL_BYTES // (page * per_group)
        for g in groups:  # the release's own max_memory_usage_bytes on each group's spec
            usage = self.attn_usage if isinstance(g.kv_cache_spec, AttnSpec) else self.mamba_usage
            g.kv_cache_spec = _Bound(g.kv_cache_spec, usage)
        concurrency = self.concurrency(config, KvConfig(blocks, groups))
        per_request = sum(
            cdiv(g.kv_cache_spec.max_memory_usage_bytes(config), g.kv_cache_spec.page_size_bytes)
            for g in groups
        )
        return {
            "blockSize": block,
            "attentionPagePerToken": attn_1tok,
            "kvBytesPerToken": attn_1tok * len(attention),
            "pageBytes": page,
            "mambaPageBytes": mamba_page,
            "groups": len(groups),
            "layersPerGroup": per_group,
            "blocksPerRequest": per_request,
            "blocksFor64GiB": blocks,
            "concurrencyFor64GiB": concurrency,
        }

    def _align(self, cache: Cache, attn_1tok: int, shapes: Any, dtypes: tuple[str, str]) -> int:
        """Run the release's _align_hybrid_block_size with stand-ins for what it reads."""
        model_cls = types.SimpleNamespace(
            get_mamba_state_shape_from_config=lambda _c: shapes,
            get_mamba_state_dtype_from_config=lambda _c: dtypes,
        )
        backend = types.SimpleNamespace(
            get_supported_kernel_block_sizes=lambda: [MultipleOf(16)],
            customize_spec=lambda spec: spec,
        )
        platform = types.SimpleNamespace(
            _find_non_ssm_backends=lambda _c: [backend],
            # CUDA's override (0.31-0.32) needs the config's index_kpool: NemotronH has none.
            _get_indexer_block_alignment=lambda _c: None,
        )
        config = types.SimpleNamespace(
            cache_config=cache,
            model_config=types.SimpleNamespace(
                dtype="bfloat16", use_mla=False, architecture="NemotronHForCausalLM",
                get_num_kv_heads=lambda _p: 0, get_head_size=lambda: 0,
                get_mamba_chunk_size=lambda: 128,
            ),
            parallel_config=None,
            use_flashinfer_replayssm=False,
        )  # fmt: skip

        def full_spec(**kwargs: Any) -> Any:
            return types.SimpleNamespace(page_size_bytes=attn_1tok)

        def mamba_spec(shapes: Any, dtypes: Any, block_size: int, **kwargs: Any) -> Any:
            return MambaStub(tuple(shapes), tuple(dtypes), block_size, **kwargs)

        no_context = contextlib.nullcontext
        registry = types.SimpleNamespace(resolve_model_cls=lambda *a, **k: (model_cls, None))
        stubs = {
            "vllm.config.vllm": _module("m", set_current_vllm_config=lambda _c: no_context()),
            "vllm.model_executor.layers.mamba.abstract": _module(
                "m", get_mamba_prefill_checkpoint_alignment=lambda _c: None),
            "vllm.model_executor.layers.mamba.mamba_utils": _module(
                "m", mamba_state_alignment=lambda _c: 1),
            "vllm.model_executor.models": _module(
                "m", ModelRegistry=registry),
            "vllm.utils.math_utils": _module("m", cdiv=cdiv),
            "vllm.utils.torch_utils": _module("m", STR_DTYPE_TO_TORCH_DTYPE=DTYPE_BYTES),
            "vllm.v1.attention.backend": _module("m", MultipleOf=MultipleOf),
            "vllm.v1.kv_cache_interface": _module(
                "m", FullAttentionSpec=full_spec, MambaSpec=mamba_spec,
                MLAAttentionSpec=full_spec, get_kv_quant_mode=lambda _d: None),
        }  # fmt: skip
        saved = {k: sys.modules.get(k) for k in stubs}
        sys.modules.update(stubs)
        try:
            self.align(platform, config, backend)
        finally:
            for k, v in saved.items():
                if v is None:
                    sys.modules.pop(k, None)
                else:
                    sys.modules[k] = v
        return cache.block_size


class _Bound:
    """A group's spec with the release's own max_memory_usage_bytes bound to it."""

    def __init__(self, spec: Any, usage: Any) -> None:
        self._spec, self._usage = spec, usage

    def __getattr__(self, name: str) -> Any:
        return getattr(self._spec, name)

    def max_memory_usage_bytes(self, config: Any) -> int:
        return int(self._usage(self._spec, config))


def _divide(numerator: int, denominator: int) -> int:
    assert numerator % denominator == 0, f"{numerator} is not divisible by {denominator}"
    return numerator // denominator


def main() -> int:
    out: dict[str, Any] = {
        "command": "hack/vllm-release-reference.py",
        "poolBytes": POOL_BYTES,
        "releases": {},
    }
    for release in gen.RELEASES:
        functions = Release(release)
        rows = {case.name: {**vars(case), **functions.compute(case)} for case in CASES}
        out["releases"][release] = {"groupingFile": functions.grouping_file, "cases": rows}
    OUT.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}: {len(CASES)} cases × {len(gen.RELEASES)} releases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
