"""``nemotron-operator models`` and ``gpus``: list the catalogs."""

from __future__ import annotations

import argparse
import json
from typing import Any

from nemotron_operator.cli.common import EXIT_OK, SubParsers

GIB = 1024**3


def register(subparsers: SubParsers) -> None:
    models = subparsers.add_parser(
        "models",
        help="list the model catalog",
        description="The models the planner knows, keyed by Hugging Face id. A model outside "
        "the catalog can be planned with spec.model.architecture.",
    )
    models.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")
    models.set_defaults(handler=_models)
    gpus = subparsers.add_parser(
        "gpus",
        help="list the GPU catalog",
        description="The GPU products the planner knows, by GPU Feature Discovery name "
        "(nvidia.com/gpu.product), with the memory the device reports.",
    )
    gpus.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")
    gpus.set_defaults(handler=_gpus)


def _emit(output: str, records: list[dict[str, Any]], rows: list[list[str]]) -> None:
    if output == "json":
        print(json.dumps(records, indent=2))
    elif output == "yaml":
        import yaml  # noqa: PLC0415

        print(yaml.safe_dump(records, sort_keys=False), end="")
    else:
        from nemotron_operator.sizing.report import table  # noqa: PLC0415

        print("\n".join(line[2:] for line in table(rows)))


def _models(args: argparse.Namespace) -> int:
    from nemotron_operator.catalog import MODELS  # noqa: PLC0415

    records = []
    rows = [["MODEL", "PRECISION", "PARAMS", "CHECKPOINT", "LAYERS M/E/*/-", "CONTEXT", "MTP"]]
    for m in MODELS:
        split = m.parameter_split()
        counts = "/".join(str(m.layer_count(k)) for k in "ME*-")
        context = str(m.max_position_embeddings)
        if m.trained_context > m.max_position_embeddings:
            context += f" ({m.trained_context} trained)"
        records.append(
            {
                "id": m.hf_id,
                "family": m.family,
                "variant": m.variant,
                "precision": m.precision,
                "architecture": m.architecture,
                "layerPattern": m.layer_pattern,
                "parameters": {
                    "routedExperts": split.routed_experts,
                    "other": split.other,
                    "mtp": split.mtp,
                    "vision": split.vision,
                },
                "weightsBytes": m.weights_bytes(),
                "maxPositionEmbeddings": m.max_position_embeddings,
                "trainedContext": m.trained_context,
                "mtpLayers": m.mtp_layers,
                "vision": m.vision,
                "trustRemoteCode": m.trust_remote_code,
                "reasoningParser": m.default_reasoning_parser,
                "toolCallParser": m.default_tool_call_parser,
                "sources": list(m.sources),
            }
        )
        rows.append(
            [
                m.hf_id,
                m.precision,
                f"{split.total / 1e9:.1f}B",
                f"{m.weights_bytes() / GIB:.1f} GiB",
                counts,
                context,
                str(m.mtp_layers),
            ]
        )
    _emit(args.output, records, rows)
    return EXIT_OK


def _gpus(args: argparse.Namespace) -> int:
    from nemotron_operator.catalog import GPUS  # noqa: PLC0415

    records = []
    rows = [["PRODUCT (GFD)", "MEMORY", "CC", "FP8", "FP4", "PER NODE", "INTERCONNECT"]]
    for g in GPUS:
        memory = f"{g.memory_mib} MiB" if g.memory_reported else f"{g.memory_gib:.1f} GiB*"
        records.append(
            {
                "name": g.name,
                "displayName": g.display_name,
                "memoryBytes": g.memory_bytes,
                "memoryReported": g.memory_reported,
                "computeCapability": g.compute_capability_str,
                "family": g.family,
                "fp8": g.fp8,
                "fp4": g.fp4,
                "gpusPerNode": g.gpus_per_node,
                "interconnect": g.interconnect,
                "aliases": list(g.aliases),
            }
        )
        rows.append(
            [
                g.name,
                memory,
                g.compute_capability_str,
                "yes" if g.fp8 else "no",
                "yes" if g.fp4 else "no",
                str(g.gpus_per_node),
                g.interconnect,
            ]
        )
    _emit(args.output, records, rows)
    if args.output == "table":
        print("* not reported by the device (unified memory); the marketed size is used")
    return EXIT_OK
