"""``spec.model``: which checkpoint to serve, where its weights come from, and (for a model outside
the catalog) its architecture."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from nemotron_operator.api.base import ApiModel, ResourceName, ShortText, cel, validations

HF_REPO_ID = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$"
ModelId = Annotated[str, StringConstraints(min_length=3, max_length=193, pattern=HF_REPO_ID)]
# A Hugging Face revision: a branch, a tag or a commit hash.
Revision = Annotated[
    str, StringConstraints(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9][A-Za-z0-9._/-]*$")
]
# The hybrid layer pattern as NVIDIA spells it in config.json (`hybrid_override_pattern`):
# M = Mamba-2, E = MoE, * = attention, - = dense MLP.
LayerPattern = Annotated[
    str, StringConstraints(min_length=1, max_length=1024, pattern=r"^[ME*-]+$")
]
Precision = Literal["BF16", "FP8", "NVFP4"]
SecretKey = Annotated[
    str, StringConstraints(min_length=1, max_length=253, pattern=r"^[-._a-zA-Z0-9]+$")
]
AbsolutePath = Annotated[
    str, StringConstraints(min_length=1, max_length=1024, pattern=r"^/[^\x00]*$")
]
# scheme://bucket/prefix: a bucket name as S3 and GCS spell it (lower case, digits, dots, dashes,
# underscores), then an optional prefix. Which schemes (s3://, gs://: vLLM's Run:ai streamer path
# takes them, vllm/transformers_utils/runai_utils.py) is a CEL rule, to say so in its message.
OBJECT_STORE_URI = r"^[a-z][a-z0-9+.-]*://[a-z0-9][a-z0-9._-]{1,220}[a-z0-9](/[^\s\x00]*)?$"
ObjectStoreUri = Annotated[
    str, StringConstraints(min_length=8, max_length=1024, pattern=OBJECT_STORE_URI)
]
EndpointUrl = Annotated[
    str, StringConstraints(min_length=8, max_length=2048, pattern=r"^https?://[^\s\x00]+$")
]


class SecretKeyRef(ApiModel):
    """A key of a Secret in the deployment's namespace. The operator never reads it: the kubelet
    resolves it into the download container's environment."""

    name: ResourceName = Field(description="Name of the Secret.")
    key: SecretKey = Field(default="token", description="Key within the Secret.")


class HuggingFaceSource(ApiModel):
    """Download the checkpoint from the Hugging Face Hub into the weight cache volume."""

    token_secret_ref: SecretKeyRef | None = Field(
        default=None,
        description="Secret key holding a Hugging Face token (HF_TOKEN), for gated or private "
        "repositories. Omit for public checkpoints.",
    )


class PvcSource(ApiModel):
    """Serve weights that are already on an existing PersistentVolumeClaim."""

    claim_name: ResourceName = Field(description="Name of the existing PersistentVolumeClaim.")
    path: AbsolutePath = Field(
        default="/",
        description="Directory inside the claim that holds config.json and the safetensors shards.",
    )


class SecretRef(ApiModel):
    """A Secret in the deployment's namespace, by name. The operator never reads it: the kubelet
    resolves its keys into the serving container's environment."""

    name: ResourceName = Field(description="Name of the Secret.")


class ObjectStoreSource(ApiModel):
    """Stream the checkpoint from an object store straight onto the GPUs with vLLM's Run:ai model
    streamer (--load-format runai_streamer): no download, no weight-cache claim."""

    uri: ObjectStoreUri = Field(
        description="s3://bucket/prefix or gs://bucket/prefix: the directory that holds "
        "config.json, the tokenizer files and the safetensors shards.",
        json_schema_extra=validations(
            cel(
                "self.startsWith('s3://') || self.startsWith('gs://')",
                "spec.model.source.objectStore.uri must be an s3:// or gs:// URI, e.g. "
                "s3://bucket/prefix",
            )
        ),
    )
    credentials_secret_ref: SecretRef = Field(
        description="Secret with the keys AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and "
        "optionally AWS_SESSION_TOKEN): S3 access keys, or a Google Cloud Storage HMAC key for "
        "gs:// URIs. Passed to vLLM as environment variables by secretKeyRef.",
    )
    endpoint: EndpointUrl | None = Field(
        default=None,
        description="Endpoint of an S3-compatible store (MinIO, Ceph, ...): AWS_ENDPOINT_URL, "
        "with path-style addressing. Default: AWS S3 for s3://, "
        "https://storage.googleapis.com for gs://.",
    )
    concurrency: int | None = Field(
        default=None,
        ge=1,
        le=1024,
        description="Reader threads (object-store clients) of the streamer: "
        '--model-loader-extra-config {"concurrency": N}. Default: the streamer\'s own.',
    )


class ModelSource(ApiModel):
    """Where the weights come from: exactly one of huggingFace, pvc or objectStore."""

    model_config = ApiModel.model_config | {
        "json_schema_extra": validations(
            cel(
                "(has(self.huggingFace) ? 1 : 0) + (has(self.pvc) ? 1 : 0) + "
                "(has(self.objectStore) ? 1 : 0) == 1",
                "exactly one of spec.model.source.huggingFace, spec.model.source.pvc or "
                "spec.model.source.objectStore must be set",
            )
        )
    }

    hugging_face: HuggingFaceSource | None = Field(
        default=None, description="Download from the Hugging Face Hub into the weight cache."
    )
    pvc: PvcSource | None = Field(
        default=None, description="Use weights already present on an existing claim."
    )
    object_store: ObjectStoreSource | None = Field(
        default=None,
        description="Stream the weights from an S3 or GCS bucket with vLLM's Run:ai model "
        "streamer.",
    )


class ParameterCounts(ApiModel):
    """Parameter counts of the checkpoint, split the way the memory model shards them."""

    routed_experts: int = Field(
        ge=0,
        le=10**13,
        description="Parameters in routed MoE experts (sharded across the EP group).",
    )
    other: int = Field(
        ge=1,
        le=10**13,
        description="All other parameters of the main model: embeddings, LM head, attention, "
        "Mamba, shared experts, dense MLPs, norms (TP-sharded).",
    )
    mtp: int = Field(default=0, ge=0, le=10**12, description="Parameters of the MTP head.")
    vision: int = Field(
        default=0, ge=0, le=10**12, description="Parameters of the vision tower and projector."
    )


class ArchitectureSpec(ApiModel):
    """The architecture of a model that is not in the catalog, as its config.json gives it. The
    planner treats it exactly like a catalog entry."""

    layer_pattern: LayerPattern = Field(
        description="Hybrid layer pattern (hybrid_override_pattern): M Mamba-2, E MoE, "
        "* attention, - dense MLP; one character per layer."
    )
    hidden_size: int = Field(ge=1, le=65536, description="hidden_size.")
    num_attention_heads: int = Field(ge=1, le=1024, description="num_attention_heads.")
    num_key_value_heads: int = Field(ge=1, le=1024, description="num_key_value_heads.")
    head_dim: int = Field(ge=1, le=1024, description="head_dim of the attention layers.")
    mamba_num_heads: int = Field(default=0, ge=0, le=4096, description="mamba_num_heads.")
    mamba_head_dim: int = Field(default=0, ge=0, le=1024, description="mamba_head_dim.")
    ssm_state_size: int = Field(default=0, ge=0, le=4096, description="ssm_state_size.")
    mamba_n_groups: int = Field(default=0, ge=0, le=1024, description="n_groups of Mamba-2.")
    conv_kernel: int = Field(default=4, ge=1, le=64, description="conv_kernel of Mamba-2.")
    n_routed_experts: int = Field(default=0, ge=0, le=4096, description="n_routed_experts.")
    num_experts_per_tok: int = Field(default=0, ge=0, le=256, description="num_experts_per_tok.")
    n_shared_experts: int = Field(
        default=0,
        ge=0,
        le=64,
        description="n_shared_experts. Sizes the activation reserve together with "
        "moeSharedExpertIntermediateSize (their parameters are part of parameters.other).",
    )
    moe_intermediate_size: int | None = Field(
        default=None,
        ge=1,
        le=1_048_576,
        description="moe_intermediate_size (width of one routed expert); sizes the activation "
        "reserve. Unset: experts are assumed hidden-sized.",
    )
    moe_shared_expert_intermediate_size: int | None = Field(
        default=None,
        ge=1,
        le=1_048_576,
        description="moe_shared_expert_intermediate_size; sizes the activation reserve.",
    )
    moe_latent_size: int | None = Field(
        default=None,
        ge=1,
        le=65536,
        description="moe_latent_size (experts run in this latent width, as in Nemotron 3 Super); "
        "sizes the activation reserve. Unset: experts run at hiddenSize.",
    )
    intermediate_size: int | None = Field(
        default=None,
        ge=1,
        le=1_048_576,
        description="intermediate_size of the dense MLP ('-') layers; sizes the activation "
        "reserve. Unset: MLP intermediates are not counted in it.",
    )
    vocab_size: int = Field(ge=1, le=10**7, description="vocab_size.")
    max_position_embeddings: int = Field(
        ge=1, le=16_777_216, description="max_position_embeddings (the config's context limit)."
    )
    trained_context: int | None = Field(
        default=None,
        ge=1,
        le=16_777_216,
        description="Context the model was trained to, when longer than max_position_embeddings "
        "(served with VLLM_ALLOW_LONG_MAX_MODEL_LEN=1).",
    )
    mtp_layers: int = Field(
        default=0, ge=0, le=8, description="num_nextn_predict_layers (MTP head depth)."
    )
    vision: bool = Field(default=False, description="Whether the checkpoint has a vision tower.")
    parameters: ParameterCounts = Field(description="Parameter counts by part.")
    precision: Precision = Field(
        default="BF16",
        description="Quantization recipe of the checkpoint: BF16, FP8 or NVFP4 (which parts stay "
        "BF16 follows the Nemotron recipes; see docs/sizing.md).",
    )
    trust_remote_code: bool = Field(
        default=False,
        description="Whether vLLM needs --trust-remote-code for this checkpoint. Honoured only "
        "when the operator's administrator allows remote code.",
    )


class ModelSpec(ApiModel):
    """The checkpoint to serve."""

    id: ModelId = Field(
        description="Hugging Face repository id, e.g. nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-"
        "A12B-BF16; the key into the model catalog. Immutable.",
        json_schema_extra=validations(
            cel(
                "self == oldSelf",
                "spec.model.id is immutable: create a new NemotronDeployment to serve another "
                "model",
            )
        ),
    )
    revision: Revision = Field(
        default="main", description="Branch, tag or commit of the repository to serve."
    )
    served_name: ShortText | None = Field(
        default=None,
        description="Model name clients send in requests (--served-model-name). Default: the "
        "NemotronDeployment's name.",
    )
    source: ModelSource = Field(
        default_factory=lambda: ModelSource(hugging_face=HuggingFaceSource()),
        description="Where the weights come from. Default: download from the Hugging Face Hub "
        "without a token.",
    )
    architecture: ArchitectureSpec | None = Field(
        default=None,
        description="Explicit architecture for a model outside the catalog. Leave unset for "
        "catalog models (nemotron-operator models lists them).",
    )
