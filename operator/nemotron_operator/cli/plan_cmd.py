"""``nemotron-operator plan``: size a model on GPUs and show the arithmetic."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nemotron_operator.cli.common import EXIT_INFEASIBLE, EXIT_OK, EXIT_USAGE, SubParsers, fail

if TYPE_CHECKING:
    from nemotron_operator.sizing import GpuInventory, PlanningError

EPILOG = """\
examples:
  nemotron-operator plan nvidia/NVIDIA-Nemotron-3.5-Super-VL-120B-A12B-BF16
  nemotron-operator plan nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8 --gpu NVIDIA-H100-80GB-HBM3
  nemotron-operator plan -f deployment.yaml -o json      # exactly status.plan
  nemotron-operator plan MODEL --gpu h200 --sweep-max-model-len

exit status: 0 planned, 1 nothing fits (the rejected layouts say why), 2 bad input.
"""


def register(subparsers: SubParsers) -> None:
    parser = subparsers.add_parser(
        "plan",
        help="size a model on GPUs",
        description="Size a model on GPUs, without a cluster: the chosen layout, the per-GPU "
        "memory breakdown, concurrency, and every rejected layout with its reason.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("model", nargs="?", metavar="MODEL_ID", help="Hugging Face model id")
    parser.add_argument("-f", "--filename", help="a NemotronDeployment YAML (flags override it)")
    parser.add_argument(
        "--gpu",
        action="append",
        default=[],
        metavar="PRODUCT",
        help="candidate GPU product (GFD name or alias, repeatable); default: the whole catalog",
    )
    parser.add_argument(
        "--vllm-version",
        metavar="X.Y.Z",
        help="plan for this vLLM release (0.31 to 0.34 have engine profiles; default: the "
        "default image's, v0.34.0): the image vllm/vllm-openai:vX.Y.Z, or spec.engine.version "
        "when -f gives an image whose tag is not a version",
    )
    parser.add_argument("--max-model-len", type=int, metavar="N", help="context per request")
    parser.add_argument(
        "--min-concurrency", type=int, metavar="N", help="full-length requests per replica"
    )
    parser.add_argument(
        "--precision",
        choices=("BF16", "FP8", "NVFP4"),
        help="plan the catalog's checkpoint of the same model in this precision",
    )
    parser.add_argument("--tp", type=int, metavar="N", help="tensor-parallel size (explicit)")
    parser.add_argument("--pp", type=int, metavar="N", help="pipeline-parallel size (explicit)")
    parser.add_argument("--replicas", type=int, metavar="N", help="serving replicas")
    parser.add_argument(
        "--kv-cache-dtype", choices=("auto", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2")
    )
    parser.add_argument(
        "--max-num-seqs",
        type=int,
        metavar="N",
        help="sequences vLLM runs at once (hybrid models need at most one per Mamba cache block)",
    )
    parser.add_argument(
        "--gpu-inventory",
        metavar="NODES",
        help="plan on the GPUs of these Node objects (kubectl get nodes -o yaml|json), and of "
        "the ResourceSlices among them (kubectl get resourceslices -o yaml: DRA's GPUs)",
    )
    parser.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")
    parser.add_argument(
        "--sweep-max-model-len",
        action="store_true",
        help="also show max concurrency of the chosen layout at 32K, 128K, 256K and 1M context",
    )
    parser.set_defaults(handler=_run)


def _load_yaml(path: str) -> list[Any]:
    import yaml  # noqa: PLC0415

    text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    return [d for d in yaml.safe_load_all(text) if d is not None]


def _deployment_object(args: argparse.Namespace) -> dict[str, Any]:
    """The NemotronDeployment to plan: from -f or MODEL_ID, with the flags applied on top."""
    obj = _base_object(args)
    spec = obj.setdefault("spec", {})
    if not isinstance(spec, dict):
        raise ValueError("spec must be a mapping")
    _apply_flags(spec, args)
    return obj


def _base_object(args: argparse.Namespace) -> dict[str, Any]:
    if args.filename:
        docs = _load_yaml(args.filename)
        found = [d for d in docs if isinstance(d, dict) and d.get("kind") == "NemotronDeployment"]
        if not found:
            raise ValueError(f"{args.filename}: no NemotronDeployment object in the file")
        obj: dict[str, Any] = found[0]
    else:
        if not args.model:
            raise ValueError("give a MODEL_ID or -f deployment.yaml")
        obj = {
            "apiVersion": "serving.nemotron.io/v1alpha1",
            "kind": "NemotronDeployment",
            "metadata": {"name": "plan"},
            "spec": {"model": {"id": args.model}},
        }
    return obj


def _apply_flags(spec: dict[str, Any], args: argparse.Namespace) -> None:
    model = spec.setdefault("model", {})
    if args.model:
        model["id"] = args.model
    engine = spec.setdefault("engine", {})
    capacity = spec.setdefault("capacity", {})
    if args.vllm_version is not None:
        _set_vllm_version(engine, args.vllm_version)
    if args.max_model_len is not None:
        engine["maxModelLen"] = args.max_model_len
    if args.kv_cache_dtype is not None:
        engine["kvCacheDtype"] = args.kv_cache_dtype
    if args.max_num_seqs is not None:
        engine["maxNumSeqs"] = args.max_num_seqs
    if args.min_concurrency is not None:
        capacity["minConcurrency"] = args.min_concurrency
    if args.gpu:
        capacity.setdefault("gpu", {})["products"] = args.gpu
    parallelism = capacity.setdefault("parallelism", {})
    if args.tp is not None:
        parallelism["tensor"] = args.tp
    if args.pp is not None:
        parallelism["pipeline"] = args.pp
    if args.replicas is not None:
        spec["replicas"] = args.replicas
    if args.precision is not None:
        _switch_precision(model, args.precision)


def _set_vllm_version(engine: dict[str, Any], version: str) -> None:
    """The release to plan for: the vLLM image of that tag, unless the spec names an image whose
    tag is not a version (then spec.engine.version says what it runs)."""
    from nemotron_operator.catalog.vllm_releases import image_tag_version  # noqa: PLC0415

    image = engine.get("image")
    if isinstance(image, str) and image_tag_version(image) is None:
        engine["version"] = version
        return
    engine["image"] = f"vllm/vllm-openai:v{version.removeprefix('v')}"
    engine.pop("version", None)


def _switch_precision(model: dict[str, Any], precision: str) -> None:
    from nemotron_operator.catalog import lookup_model, sibling  # noqa: PLC0415

    architecture = model.get("architecture")
    if isinstance(architecture, dict):
        architecture["precision"] = precision
        return
    entry = lookup_model(str(model.get("id", "")))
    if entry is None:
        return  # the planner reports the unknown model
    other = sibling(entry, precision)  # type: ignore[arg-type]
    if other is None:
        raise ValueError(
            f"--precision {precision}: the catalog has no {precision} checkpoint of "
            f"{entry.family} {entry.variant} (nemotron-operator models lists what there is)"
        )
    model["id"] = other.hf_id


def _inventory(path: str | None) -> GpuInventory | None:
    if path is None:
        return None
    from nemotron_operator.sizing import inventory_from_usage  # noqa: PLC0415

    nodes: list[Any] = []
    for doc in _load_yaml(path):
        if isinstance(doc, dict) and isinstance(doc.get("items"), list):
            nodes.extend(doc["items"])
        elif isinstance(doc, list):
            nodes.extend(doc)
        elif isinstance(doc, dict):
            nodes.append(doc)
    objects = [n for n in nodes if isinstance(n, dict)]
    slices = [o for o in objects if o.get("kind") == "ResourceSlice"]
    return inventory_from_usage(
        [o for o in objects if o.get("kind") != "ResourceSlice"], {}, slices
    )


def _infeasible_exit(error: PlanningError) -> int:
    from nemotron_operator.sizing import errors  # noqa: PLC0415

    if error.reason == errors.INSUFFICIENT_GPU_MEMORY:
        return EXIT_INFEASIBLE
    if error.reason == errors.NO_MATCHING_GPUS and error.field is None:
        return EXIT_INFEASIBLE
    return EXIT_USAGE


def _run(args: argparse.Namespace) -> int:
    import yaml  # noqa: PLC0415

    from nemotron_operator.api.errors import SpecError  # noqa: PLC0415
    from nemotron_operator.cli.checks import parse  # noqa: PLC0415
    from nemotron_operator.sizing import (  # noqa: PLC0415
        PlanningError,
        plan_deployment,
        report,
    )

    try:
        obj = _deployment_object(args)
        inventory = _inventory(args.gpu_inventory)
        deployment = parse(obj)  # as kube-apiserver would admit it (checks.py)
    except SpecError as exc:
        return fail("\n  ".join(["invalid NemotronDeployment:", *map(str, exc.errors)]))
    except (OSError, ValueError, yaml.YAMLError) as exc:
        return fail(str(exc))
    spec = deployment.spec
    try:
        # A deployment plans on the GPUs it asks for its way (capacity.gpu.allocation) only.
        own = inventory.for_allocation(spec.capacity.gpu.allocation) if inventory else None
        result = plan_deployment(spec, inventory=own)
    except PlanningError as exc:
        code = _infeasible_exit(exc)
        where = f"{exc.field}: " if exc.field else ""
        lines = [f"cannot plan ({exc.reason}): {where}{exc.message}"]
        if exc.rejected:
            lines += ["", *report.rejected_lines(exc.rejected, exc.rejected_omitted)]
        return fail("\n".join(lines), code)
    if args.output == "json":
        print(json.dumps(result.plan.to_wire(), indent=2))
    elif args.output == "yaml":
        print(yaml.safe_dump(result.plan.to_wire(), sort_keys=False), end="")
    else:
        show_products = len(result.alternatives) > 1 or not spec.capacity.gpu.products
        lines = report.full_report(
            result,
            min_concurrency=spec.capacity.min_concurrency,
            products=show_products,
            with_sweep=args.sweep_max_model_len,
        )
        print("\n".join(lines))
    return EXIT_OK
