"""The reported vLLM combinations the operator has no rule for in ``vllm_rules``, and why each is
dropped (obsolete, not reachable, or nothing to do); docs/compatibility.md lists them too."""

from __future__ import annotations

from dataclasses import dataclass

from nemotron_operator.catalog.vllm_flag_table import VLLM_VERSION


@dataclass(frozen=True)
class DroppedRule:
    """A reported combination the operator has no rule for, and why."""

    combination: str
    source: str
    why: str


DROPPED: tuple[DroppedRule, ...] = (
    DroppedRule(
        "VLLM_FLASHINFER_MOE_BACKEND=latency + MTP (the drafter's MLP is not supported by the "
        "FlashInfer TRT-LLM MoE kernel)",
        "vllm-project/vllm#39809",
        "obsolete: the variable is in none of 0.31-0.34's envs.py (vllm_release_data), and a "
        "NemotronDeployment sets no environment variables on the vLLM container; the flag form "
        "(--moe-backend flashinfer_trtllm) runs with MTP in the Ultra recipe "
        "(vllm-project/recipes#509)",
    ),
    DroppedRule(
        "--mamba-cache-mode all (refused from 0.32: MambaCacheMode is align|none)",
        "vllm config/cache.py of 0.32.0-0.34.0",
        "not reachable: the operator owns --mamba-cache-mode (spec.engine.enablePrefixCaching; "
        "refused in extraArgs) and vLLM chooses align with prefix caching itself "
        "(model_executor/models/config.py)",
    ),
    DroppedRule(
        "VLLM_USE_V2_MODEL_RUNNER=0 on 0.34 (the V1 model runner is gone: vLLM refuses to start)",
        "vllm platforms/interface.py of 0.34.0; the variable left envs.py in 0.34",
        "not reachable: the operator sets no such variable, and a test checks every VLLM_* "
        "variable it renders against each release's envs.py",
    ),
    DroppedRule(
        "speculative-config keys disable_padded_drafter_batch and use_heterogeneous_vocab on 0.34 "
        "(removed from SpeculativeConfig)",
        "vllm config/speculative.py of 0.33.0 and 0.34.0",
        "not reachable: the operator renders method and num_speculative_tokens only (checked "
        "against each release's keys), and --speculative-config is refused in extraArgs "
        "(spec.engine.speculativeDecoding owns it)",
    ),
    DroppedRule(
        "--kv-cache-dtype float16|bfloat16 different from the model dtype (refused from 0.33)",
        "vllm config/vllm.py of 0.33.0 ('kv_cache_dtype=... is incompatible with')",
        "not reachable: spec.engine.kvCacheDtype offers bfloat16, not float16, and every "
        "Nemotron checkpoint's dtype is bfloat16 (an explicit architecture is planned as "
        "bfloat16 too)",
    ),
    DroppedRule(
        "0.34 defaults the Super VL / Omni architectures' Mamba SSM state to float32",
        "vllm model_executor/models/config.py of 0.34.0 (NemotronHNanoVLV2Config)",
        "nothing to do: the operator always passes --mamba-ssm-cache-dtype (default float32), "
        "so every release runs the same state dtype",
    ),
    DroppedRule(
        'speculative config method "mtp" instead of "nemotron_h_mtp" (the thread\'s second '
        "workaround)",
        "vllm-project/vllm#39809",
        "the crash it worked around is the Mamba cache mode (rule mtp-prefix-caching-mamba-"
        "align); later vLLM deprecates the per-model method names for the generic mtp, which "
        "finds the model's MTP head itself (vllm-project/vllm#34159)",
    ),
    DroppedRule(
        "reasoningParser super_v3 / ultra_v3 / nano_v3 as a built-in parser",
        "docs/model-facts.md §4",
        f"already refused by the renderer: vLLM {VLLM_VERSION} has no built-in parser of these "
        "names; they are plugin files (spec.engine.reasoningParserPlugin)",
    ),
    DroppedRule(
        "Ultra without --mamba-ssm-cache-dtype",
        "vllm-project/recipes#509",
        "cannot happen: the operator always passes --mamba-ssm-cache-dtype (default float32); "
        "the remaining case, a reduced-precision dtype, is rule ultra-mamba-ssm-float32",
    ),
)
