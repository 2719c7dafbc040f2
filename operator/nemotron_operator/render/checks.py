"""Checks of a spec that only rendering can make: they depend on the model (is it a VL model, does
it have an MTP head), on the vLLM flag table, or repeat an admission rule (CEL) that pydantic does
not evaluate, so that ``render`` and the controller refuse what the API server would.

Every problem names its field; all problems are reported at once.
"""

from __future__ import annotations

from nemotron_operator.api import CacheSpec, ModelSpec, NemotronDeployment, Plan
from nemotron_operator.api.errors import FieldError
from nemotron_operator.catalog import vllm_flags
from nemotron_operator.catalog.vllm_release_flags import ReleaseSurface, surface
from nemotron_operator.catalog.vllm_releases import EngineVersionError, resolve_release
from nemotron_operator.catalog.vllm_rules import Action
from nemotron_operator.render.adapters import adapter_errors, expert_parallel_errors
from nemotron_operator.render.engine import vllm_rules
from nemotron_operator.render.errors import RenderError
from nemotron_operator.render.inputs import ModelFacts, RenderOptions
from nemotron_operator.render.multinode import multi_node_errors

GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
# Parsers NVIDIA ships as plugin files in the model repositories; vLLM has no built-in parser of
# these names (model-facts.md §4: "No ultra_v3 or super_v3 built-in in v0.31/v0.33").
DEFAULT_REVISION = ModelSpec.model_fields["revision"].default
PLUGIN_ONLY_PARSERS = frozenset({"super_v3", "ultra_v3", "nano_v3"})


def _node_local(cache: CacheSpec | None) -> list[FieldError]:
    """A node-local cache is a directory, not a claim: the claim's fields do not apply (the CEL
    rule refuses nodeLocal with shared; repeated here for the CLI and the renderer)."""
    if cache is None or cache.node_local is None:
        return []
    errors = []
    if cache.shared:
        errors.append(
            FieldError(
                "spec.storage.cache.nodeLocal",
                "a node-local cache is one directory per node, a shared cache one claim for all "
                "pods: set nodeLocal or shared, not both",
            )
        )
    for field, value in (("size", cache.size), ("storageClassName", cache.storage_class_name)):
        if value is not None:
            errors.append(
                FieldError(
                    f"spec.storage.cache.{field}",
                    "configures a claim and does not apply to spec.storage.cache.nodeLocal (a "
                    f"directory on the node): remove spec.storage.cache.{field}",
                )
            )
    return errors


def check(
    deployment: NemotronDeployment,
    model: ModelFacts,
    options: RenderOptions,
    *,
    plan: Plan,
) -> None:
    """Raise RenderError listing every problem; return when the spec can be rendered."""
    errors = [
        *_extra_args(deployment.spec.engine.extra_args, engine_surface(deployment)),
        *_engine(deployment, model),
        *_refused_by_rules(deployment, model, plan),
        *_model(deployment, model, options, plan.max_model_len),
        *_placement(deployment, plan.gpu_product),
        *_autoscaling(deployment),
        *adapter_errors(deployment, deployment.spec.model.served_name or deployment.metadata.name),
        *expert_parallel_errors(deployment, plan.expert_parallel),
        *multi_node_errors(deployment, plan, options),
    ]
    if errors:
        raise RenderError(errors, name=deployment.metadata.name)


def _refused_by_rules(
    deployment: NemotronDeployment, model: ModelFacts, plan: Plan
) -> list[FieldError]:
    """The vLLM rules (``catalog.vllm_rules``) whose action is to refuse the spec."""
    return [
        FieldError(fired.field, f"{fired.message} (rule {fired.rule.id})")
        for fired in vllm_rules(deployment, plan, model)
        if fired.action is Action.REFUSE
    ]


def engine_surface(deployment: NemotronDeployment) -> ReleaseSurface | None:
    """The generated flags of the deployment's vLLM release (None: the planner refuses it)."""
    try:
        release = resolve_release(deployment.spec.engine.image, deployment.spec.engine.version)
    except EngineVersionError:
        return None
    return surface(release.profile)


def _extra_args(args: list[str], release: ReleaseSurface | None) -> list[FieldError]:
    field = "spec.engine.extraArgs"
    try:
        uses = vllm_flags.parse_args(args, release=release)
    except vllm_flags.FlagError as exc:
        return [FieldError(f"{field}[{exc.index}]", f"{exc}; remove or correct it")]
    errors = []
    seen: dict[str, int] = {}
    for use in uses:
        name = use.flag.name
        path = f"{field}[{use.index}]"
        if name in vllm_flags.DENIED:
            errors.append(FieldError(path, f"{name} is not allowed: {vllm_flags.DENIED[name]}"))
        elif name in vllm_flags.OWNED_BY_FIELD:
            owner = vllm_flags.OWNED_BY_FIELD[name]
            errors.append(FieldError(path, f"{name} duplicates {owner}: set that field instead"))
        elif name in seen and use.flag.kind is not vllm_flags.Kind.APPEND:
            errors.append(
                FieldError(path, f"{name} is already given at {field}[{seen[name]}]: keep one")
            )
        seen.setdefault(name, use.index)
    return errors


def _engine(deployment: NemotronDeployment, model: ModelFacts) -> list[FieldError]:
    engine = deployment.spec.engine
    errors = []
    if engine.multimodal is not None and not model.vision:
        errors.append(
            FieldError(
                "spec.engine.multimodal",
                f"{model.hf_id} is not a vision-language model, so it takes no images or "
                "videos: remove spec.engine.multimodal",
            )
        )
    if engine.reasoning_parser is not None and engine.reasoning_parser_plugin is not None:
        errors.append(
            FieldError(
                "spec.engine.reasoningParserPlugin",
                "set either reasoningParser (a built-in parser) or reasoningParserPlugin "
                "(a plugin file), not both",
            )
        )
    if engine.reasoning_parser in PLUGIN_ONLY_PARSERS:
        errors.append(
            FieldError(
                "spec.engine.reasoningParser",
                f"{engine.reasoning_parser} is not built into vLLM {vllm_flags.VLLM_VERSION}; it "
                "is a plugin file shipped in the model repository: put the file in a ConfigMap "
                "and set spec.engine.reasoningParserPlugin, or use the built-in nemotron_v3",
            )
        )
    plugin = engine.reasoning_parser_plugin
    if plugin is not None and not plugin.file_name.endswith(".py"):
        errors.append(
            FieldError(
                "spec.engine.reasoningParserPlugin.fileName",
                f"{plugin.file_name!r} is not a Python file: name the ConfigMap key that holds "
                "the parser's .py file",
            )
        )
    errors.extend(_speculative(deployment, model))
    return errors


def _speculative(deployment: NemotronDeployment, model: ModelFacts) -> list[FieldError]:
    spec = deployment.spec.engine.speculative_decoding
    if spec is None:
        return []
    field = "spec.engine.speculativeDecoding"
    if spec.method == "mtp" and model.mtp_layers == 0:
        return [
            FieldError(
                f"{field}.method",
                f"{model.hf_id} has no MTP head: set method: none or remove speculativeDecoding",
            )
        ]
    tokens = spec.num_speculative_tokens
    if spec.method == "mtp" and tokens is not None and not 1 <= tokens <= 8:
        return [FieldError(f"{field}.numSpeculativeTokens", "must be between 1 and 8 with mtp")]
    if spec.method == "none" and tokens not in (None, 0):
        return [
            FieldError(f"{field}.numSpeculativeTokens", "must be 0 (or unset) when method is none")
        ]
    return []


def _model(
    deployment: NemotronDeployment, model: ModelFacts, options: RenderOptions, max_model_len: int
) -> list[FieldError]:
    spec = deployment.spec.model
    errors = []
    architecture = spec.architecture
    if (
        architecture is not None
        and architecture.trust_remote_code
        and not options.allow_remote_code
    ):
        errors.append(
            FieldError(
                "spec.model.architecture.trustRemoteCode",
                "this operator does not allow remote code for models outside the catalog: ask "
                "the administrator to allow it, or serve a checkpoint vLLM supports natively",
            )
        )
    # Compared with the default rather than "was it set": the API server fills in the default.
    if spec.source.pvc is not None and spec.revision != DEFAULT_REVISION:
        errors.append(
            FieldError(
                "spec.model.revision",
                "applies to Hugging Face downloads; weights from spec.model.source.pvc are "
                "served as they are: remove spec.model.revision",
            )
        )
    errors += _object_store(deployment)
    if spec.source.pvc is not None and deployment.spec.storage is not None:
        errors.append(
            FieldError(
                "spec.storage",
                "configures the download cache and does not apply when weights come from "
                "spec.model.source.pvc: remove spec.storage",
            )
        )
    if max_model_len > max(model.trained_context, model.max_position_embeddings):
        errors.append(
            FieldError(
                "spec.engine.maxModelLen",
                f"{max_model_len} exceeds the {model.trained_context} tokens {model.hf_id} was "
                "trained to: lower it",
            )
        )
    return errors


# Flags spec.model.source.objectStore sets; in extraArgs they would contradict it.
STREAMER_FLAGS = {
    "--load-format": "spec.model.source.objectStore",
    "--model-loader-extra-config": "spec.model.source.objectStore (concurrency and the "
    "streamer's CPU buffer)",
}


def _object_store(deployment: NemotronDeployment) -> list[FieldError]:
    """``spec.model.source.objectStore``: what belongs to the Hugging Face download cannot be set
    (the storage rule repeats a CEL rule), nor the streamer's flags in extraArgs."""
    spec = deployment.spec
    if spec.model.source.object_store is None:
        return []
    errors = []
    if spec.model.revision != DEFAULT_REVISION:
        errors.append(
            FieldError(
                "spec.model.revision",
                "applies to Hugging Face downloads; weights streamed from "
                "spec.model.source.objectStore are served as the bucket holds them: remove "
                "spec.model.revision",
            )
        )
    if spec.storage is not None:
        errors.append(
            FieldError(
                "spec.storage",
                "configures the download cache and does not apply when weights are streamed "
                "from spec.model.source.objectStore: remove spec.storage",
            )
        )
    for index, arg in enumerate(spec.engine.extra_args):
        found = vllm_flags.lookup(arg) if arg.startswith("-") else None
        name = found[0].name if found is not None else ""
        if name in STREAMER_FLAGS:
            errors.append(
                FieldError(
                    f"spec.engine.extraArgs[{index}]",
                    f"{name} is set from {STREAMER_FLAGS[name]} when weights are streamed from "
                    "an object store: remove it",
                )
            )
    return errors


def _placement(deployment: NemotronDeployment, gpu_product: str) -> list[FieldError]:
    spec = deployment.spec
    errors = []
    wanted = spec.scheduling.node_selector.get(GPU_PRODUCT_LABEL)
    if wanted is not None and wanted != gpu_product:
        errors.append(
            FieldError(
                f'spec.scheduling.nodeSelector["{GPU_PRODUCT_LABEL}"]',
                f"is {wanted} but the plan runs on {gpu_product}: choose GPUs with "
                "spec.capacity.gpu.products and remove this selector",
            )
        )
    cache = spec.storage.cache if spec.storage is not None else None
    if cache is not None and cache.shared and "ReadWriteMany" not in cache.access_modes:
        errors.append(
            FieldError(
                "spec.storage.cache.accessModes",
                "a shared cache needs accessModes to include ReadWriteMany",
            )
        )
    errors += _node_local(cache)
    errors += _dra(deployment)
    pool = spec.node_pool
    if pool.provisioner == "Karpenter" and pool.karpenter is None:
        errors.append(
            FieldError(
                "spec.nodePool.karpenter", "is required when nodePool.provisioner is Karpenter"
            )
        )
    if pool.provisioner != "Karpenter" and pool.karpenter is not None:
        errors.append(
            FieldError(
                "spec.nodePool.provisioner",
                "nodePool.karpenter is set but provisioner is None: set provisioner: Karpenter "
                "or remove nodePool.karpenter",
            )
        )
    return errors


def _autoscaling(deployment: NemotronDeployment) -> list[FieldError]:
    """autoscaling.provider and autoscaling.keda go together (the CRD's CEL rules, repeated)."""
    autoscaling = deployment.spec.autoscaling
    if autoscaling is None:
        return []
    if autoscaling.provider == "KEDA" and autoscaling.keda is None:
        return [
            FieldError(
                "spec.autoscaling.keda",
                "is required when autoscaling.provider is KEDA: name the Prometheus trigger "
                "(keda.prometheus.serverAddress, query and threshold)",
            )
        ]
    if autoscaling.provider != "KEDA" and autoscaling.keda is not None:
        return [
            FieldError(
                "spec.autoscaling.provider",
                "autoscaling.keda is set but autoscaling.provider is Operator: set provider: "
                "KEDA or remove autoscaling.keda",
            )
        ]
    return []


def _dra(deployment: NemotronDeployment) -> list[FieldError]:
    """capacity.gpu.allocation DRA (docs/dra.md): what the claim replaces cannot be set too."""
    spec = deployment.spec
    gpu = spec.capacity.gpu
    if gpu.allocation != "DRA":
        if gpu.device_class_name is None:
            return []
        return [
            FieldError(
                "spec.capacity.gpu.deviceClassName",
                "is only used with allocation: DRA; set allocation: DRA or remove deviceClassName",
            )
        ]
    errors = []
    if GPU_PRODUCT_LABEL in spec.scheduling.node_selector:
        errors.append(
            FieldError(
                f'spec.scheduling.nodeSelector["{GPU_PRODUCT_LABEL}"]',
                "with allocation: DRA the claim's selector picks the product (DRA nodes need "
                "not carry GPU Feature Discovery labels): remove this selector and name the "
                "product in spec.capacity.gpu.products",
            )
        )
    if spec.node_pool.provisioner == "Karpenter":
        errors.append(
            FieldError(
                "spec.nodePool.provisioner",
                "Karpenter NodePools are sized in nvidia.com/gpu, which DRA pods do not request: "
                "use allocation: DevicePlugin with Karpenter, or provisioner: None with DRA",
            )
        )
    return errors
