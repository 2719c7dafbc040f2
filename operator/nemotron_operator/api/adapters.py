"""``spec.adapters`` and ``spec.engine.lora``: LoRA adapters served beside the base model.

vLLM's limits (``vllm/config/lora.py`` ``LoRAConfig``, docs/sizing.md §LoRA): ``max_lora_rank``
is one of 1, 8, 16, 32, 64, 128, 256, 320, 512 (default 16); ``max_loras`` ≥ 1 (default 1);
``max_cpu_loras`` ≥ ``max_loras`` (default: ``max_loras``). An adapter whose rank exceeds
``max_lora_rank`` is refused by vLLM when it loads, so the API refuses it first.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from nemotron_operator.api.base import ApiModel, ResourceName, cel, validations
from nemotron_operator.api.model import AbsolutePath, ModelId, Revision, SecretKeyRef

# vLLM's ``MaxLoRARanks`` (vllm/config/lora.py).
LoraRank = Literal[1, 8, 16, 32, 64, 128, 256, 320, 512]
DEFAULT_MAX_LORA_RANK: LoraRank = 16
DEFAULT_MAX_LORAS = 1
MAX_ADAPTERS = 64
# The name clients send as "model"; vLLM keeps it as the LoRARequest's lora_name.
AdapterName = Annotated[
    str, StringConstraints(min_length=1, max_length=63, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
]


class LoraSpec(ApiModel):
    """vLLM's LoRA limits (--enable-lora and its sizes). Setting it enables LoRA even with no
    adapters yet, so adapters added later load into running pods."""

    model_config = ApiModel.model_config | {
        "json_schema_extra": validations(
            cel(
                "!has(self.maxCpuLoras) || self.maxCpuLoras >= self.maxLoras",
                "maxCpuLoras must be at least maxLoras (vLLM refuses max_cpu_loras < max_loras)",
                ".maxCpuLoras",
            )
        )
    }

    max_loras: int = Field(
        default=DEFAULT_MAX_LORAS,
        ge=1,
        le=256,
        description="Adapters usable in one batch (--max-loras). vLLM preallocates GPU buffers "
        "for this many adapters at maxLoraRank; the plan counts them (docs/sizing.md).",
    )
    max_lora_rank: LoraRank = Field(
        default=DEFAULT_MAX_LORA_RANK,
        description="Largest adapter rank (--max-lora-rank): 1, 8, 16, 32, 64, 128, 256, 320 "
        "or 512.",
    )
    max_cpu_loras: int | None = Field(
        default=None,
        ge=1,
        le=4096,
        description="Adapters kept in CPU memory (--max-cpu-loras), at least maxLoras. "
        "Default: maxLoras.",
    )
    runtime_updates: bool = Field(
        default=True,
        description="Load and unload adapters in running pods (/v1/load_lora_adapter with "
        "VLLM_ALLOW_RUNTIME_LORA_UPDATING). false: the adapters are --lora-modules of the "
        "command line and a change rolls the pods.",
    )


class AdapterHuggingFace(ApiModel):
    """An adapter repository on the Hugging Face Hub, fetched into the weight cache volume: by
    the download step (a pinned revision, or any adapter without runtime updates), or by vLLM's
    own loader when added to running pods (docs/controller.md "LoRA adapters")."""

    id: ModelId = Field(description="Hugging Face repository id of the adapter.")
    revision: Revision | None = Field(
        default=None,
        description="Branch, tag or commit of the adapter repository. Set: the pods' download "
        "step fetches exactly this revision into the weight cache (adding or changing it rolls "
        "the pods). Unset: the default branch, loaded into running pods without a restart.",
    )
    token_secret_ref: SecretKeyRef | None = Field(
        default=None,
        description="Secret key holding a Hugging Face token for a gated or private adapter. "
        "All adapters share the serving container's HF_TOKEN, so they must name the same key.",
    )


class AdapterPvc(ApiModel):
    """An adapter already on an existing claim (mounted read-only)."""

    claim_name: ResourceName = Field(description="Name of the existing PersistentVolumeClaim.")
    path: AbsolutePath = Field(
        default="/",
        description="Directory inside the claim holding adapter_config.json and the weights.",
    )


class AdapterSource(ApiModel):
    """Where an adapter comes from: exactly one of huggingFace or pvc."""

    model_config = ApiModel.model_config | {
        "json_schema_extra": validations(
            cel(
                "has(self.pvc) != has(self.huggingFace)",
                "exactly one of spec.adapters[].source.huggingFace or source.pvc must be set",
            )
        )
    }

    hugging_face: AdapterHuggingFace | None = Field(
        default=None, description="Fetch from the Hugging Face Hub."
    )
    pvc: AdapterPvc | None = Field(default=None, description="Read from an existing claim.")


class AdapterSpec(ApiModel):
    """One LoRA adapter of the base model, requested by clients under its name."""

    name: AdapterName = Field(description="The model name clients send to use this adapter.")
    source: AdapterSource = Field(description="Where the adapter's weights are.")
    rank: LoraRank = Field(
        description="The adapter's LoRA rank (r in adapter_config.json); at most "
        "engine.lora.maxLoraRank."
    )


Adapters = Annotated[list[AdapterSpec], Field(max_length=MAX_ADAPTERS)]
