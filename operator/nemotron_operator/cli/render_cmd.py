"""``nemotron-operator render``: print every object the operator would apply, without a cluster.

Exit 0 with the objects on stdout; 2 when the input is not a valid NemotronDeployment (each bad
field named); 1 when it is valid but cannot be planned (why, and the layouts tried).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nemotron_operator.cli.common import EXIT_INFEASIBLE, EXIT_OK, SubParsers, fail

if TYPE_CHECKING:
    from nemotron_operator.api import NemotronDeployment
    from nemotron_operator.api.errors import SpecError
    from nemotron_operator.sizing import PlanningError

# Imports inside the functions keep `nemotron-operator --help` fast (no pydantic at start-up).


def register(subparsers: SubParsers) -> None:
    parser = subparsers.add_parser(
        "render",
        help="print the Kubernetes objects for a NemotronDeployment",
        description="Print every Kubernetes object the operator would apply for a "
        "NemotronDeployment, without a cluster. The plan is printed as a comment header (YAML) "
        "and stored on each StatefulSet as the serving.nemotron.io/plan annotation. Objects "
        "carry no ownerReferences (there is no live NemotronDeployment to own them).",
    )
    parser.add_argument(
        "-f", "--filename", required=True, help="NemotronDeployment YAML or JSON file ('-': stdin)"
    )
    parser.add_argument(
        "--gpu-inventory",
        metavar="NODES",
        help="Node objects (e.g. kubectl get nodes -o yaml) to plan against, as the operator "
        "would in that cluster. Default: the GPU catalog.",
    )
    parser.add_argument("-o", "--output", choices=("yaml", "json"), default="yaml")
    parser.add_argument(
        "--allow-remote-code",
        action="store_true",
        help="allow --trust-remote-code for a model outside the catalog "
        "(spec.model.architecture.trustRemoteCode), as an administrator may allow the operator",
    )
    parser.set_defaults(handler=_run)


def _read_documents(source: str) -> list[Any]:
    import yaml  # noqa: PLC0415

    text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
    documents = [d for d in yaml.safe_load_all(text) if d is not None]
    items: list[Any] = []
    for document in documents:
        if isinstance(document, dict) and document.get("kind") == "List":
            items.extend(document.get("items") or [])
        else:
            items.append(document)
    return items


def _load_deployment(source: str) -> NemotronDeployment:
    from nemotron_operator.cli.checks import parse  # noqa: PLC0415

    documents = [
        d for d in _read_documents(source) if isinstance(d, dict) and d.get("kind") != "Node"
    ]
    if len(documents) != 1:
        raise ValueError(
            f"{source} holds {len(documents)} objects: render takes exactly one NemotronDeployment"
        )
    return parse(documents[0])  # as kube-apiserver would admit it (checks.py)


def _run(args: argparse.Namespace) -> int:
    import yaml  # noqa: PLC0415

    from nemotron_operator.api.errors import SpecError  # noqa: PLC0415
    from nemotron_operator.render import RenderError, RenderOptions, render_all  # noqa: PLC0415
    from nemotron_operator.render.output import render_text  # noqa: PLC0415
    from nemotron_operator.sizing import (  # noqa: PLC0415
        PlanningError,
        inventory_from_nodes,
        plan_deployment,
    )

    try:
        deployment = _load_deployment(args.filename)
        inventory = None
        if args.gpu_inventory:
            nodes = [d for d in _read_documents(args.gpu_inventory) if isinstance(d, dict)]
            inventory = inventory_from_nodes(nodes)
    except SpecError as exc:
        return fail(_invalid(exc))
    except (OSError, ValueError, yaml.YAMLError) as exc:
        return fail(str(exc))
    try:
        result = plan_deployment(deployment.spec, inventory=inventory)
    except PlanningError as exc:
        return fail(_infeasible(deployment, exc), EXIT_INFEASIBLE)
    options = RenderOptions(allow_remote_code=args.allow_remote_code)
    try:
        objects = render_all(deployment, result, options)
    except RenderError as exc:
        return fail(_invalid(exc))
    sys.stdout.write(render_text(deployment, result.plan, objects, args.output))
    return EXIT_OK


def _invalid(exc: SpecError) -> str:
    subject = f'NemotronDeployment "{exc.name}"' if exc.name else "NemotronDeployment"
    return "\n  ".join([f"{subject} is invalid:", *map(str, exc.errors)])


def _infeasible(deployment: NemotronDeployment, exc: PlanningError) -> str:
    lines = [
        f"NemotronDeployment {deployment.metadata.namespace}/{deployment.metadata.name} cannot "
        f"be planned ({exc.reason}): " + (f"{exc.field}: " if exc.field else "") + exc.message
    ]
    lines += [
        f"  {r.gpu_product} TP{r.tensor_parallel} x PP{r.pipeline_parallel}: {r.reason}"
        for r in exc.rejected
    ]
    if exc.rejected_omitted:
        lines.append(f"  ... and {exc.rejected_omitted} more")
    return "\n".join(lines)
