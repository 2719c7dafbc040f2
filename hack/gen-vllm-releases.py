#!/usr/bin/env python3
"""Generate operator/nemotron_operator/catalog/vllm_release_data/vllm-0.3X.json from each
supported vLLM release's own wheel, read without importing it (vLLM needs torch and a GPU).

For each release: ``pip download --no-deps vllm==X`` into .cache/vllm-wheels/ (once), then the
source files inside the wheel are parsed with ``ast``:

- flags of ``vllm serve``: every ``add_argument("--x", "-y", ...)`` in ``engine/arg_utils.py``
  (``EngineArgs``/``AsyncEngineArgs.add_cli_args``) and in the serve parser
  (``make_arg_parser``), plus ``--<field>`` for every field of ``BaseFrontendArgs`` and
  ``FrontendArgs`` (their ``add_cli_args`` turns each field into a flag);
- environment variables: the keys of ``envs.py``'s ``environment_variables``;
- speculative-config keys: the fields of ``config/speculative.py``'s ``SpeculativeConfig``;
- the choices of the flags whose value is a ``Literal`` (``CHOICE_LITERALS``: the flag, the
  ``Literal`` alias its field is typed with, found in whichever module defines it, nested aliases
  expanded), less a value ``add_cli_args`` removes (``--all2all-backend``'s passthrough);
- the memory-model facts of catalog.vllm_releases: ``CacheConfig.DEFAULT_BLOCK_SIZE``, the
  ``MambaCacheMode`` literal, whether ``v1/worker/extensible_kv_cache.py`` exists and its margin
  constants.

Usage: hack/gen-vllm-releases.py [--out DIR]   (default: the package's data directory)
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The manylinux x86_64 wheel of each release on PyPI, pinned by its sha256.
RELEASES = {
    "0.31.0": "39132b433967f0962d03d8a5f633b9bee6b32708f566c7d5637b79f8d0ef3433",
    "0.32.0": "5e2ecdc5b0baf72921c288486417ca82778456a448e4fe60b62ee43c0dfc8611",
    "0.33.0": "4b6bdec4ab269990bf70d45a3c1e94c3760a27064513760193b26d6f0da883aa",
    "0.34.0": "79ca4b3cd74aec08c4bf476bdf0cb15735b605ae5368526a2faae1e30f044ca2",
}
CACHE = ROOT / ".cache" / "vllm-wheels"
# Flag -> the Literal alias of its config field (vllm get_kwargs turns a Literal into choices).
CHOICE_LITERALS = {
    "--all2all-backend": "All2AllBackend",
    "--chat-template-content-format": "ChatTemplateContentFormatOption",
    "--collect-detailed-traces": "DetailedTraceModules",  # a list of them (nargs="+")
    "--kv-cache-dtype": "CacheDType",
    "--mm-encoder-tp-mode": "MMEncoderTPMode",
    "--moe-backend": "MoEBackend",
    "--spec-method": "SpeculativeMethod",
}
# ``parallel_kwargs["all2all_backend"]["choices"].remove(NAME)`` in add_cli_args.
_REMOVED_CHOICE = re.compile(r'\["(\w+)"\]\["choices"\]\.remove\(\s*(\w+)\s*\)')
DATA = ROOT / "operator" / "nemotron_operator" / "catalog" / "vllm_release_data"


def wheel(release: str) -> Path:
    """The release's wheel, downloaded from PyPI once (no dependencies: nothing is installed),
    checked against its pinned sha256."""
    CACHE.mkdir(parents=True, exist_ok=True)
    name = f"vllm-{release}-cp38-abi3-manylinux_2_28_x86_64.whl"
    path = CACHE / name
    if not path.exists() or _sha256(path) != RELEASES[release]:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "--only-binary=:all:", "--platform", "manylinux_2_28_x86_64",
             "--python-version", "3.11", f"vllm=={release}", "-d", str(CACHE)],
            check=True,
        )  # fmt: skip
    if not path.exists() or _sha256(path) != RELEASES[release]:
        raise SystemExit(f"{name}: missing or not the pinned sha256 {RELEASES[release]}")
    return path


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


class Wheel:
    def __init__(self, path: Path) -> None:
        self.zip = zipfile.ZipFile(path)
        self.names = set(self.zip.namelist())

    def source(self, name: str) -> str:
        return self.zip.read(name).decode("utf-8")

    def tree(self, name: str) -> ast.Module:
        return ast.parse(self.source(name), filename=name)

    def defining(self, class_name: str, under: str = "vllm/entrypoints/") -> str:
        """The file under ``under`` that defines ``class_name``."""
        needle = f"class {class_name}"
        for name in sorted(self.names):
            if name.startswith(under) and name.endswith(".py") and needle in self.source(name):
                return name
        raise SystemExit(f"{class_name} not found under {under}")


def add_argument_flags(tree: ast.AST) -> dict[str, list[str]]:
    """``add_argument("--x", "-y", ...)`` → {"--x": ["-y"]} (the first long option is the name)."""
    flags: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr != "add_argument":
            continue
        options = [
            a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
        ]
        longs = [o for o in options if o.startswith("--")]
        if not longs:
            continue
        name, *more = longs
        aliases = sorted(set(more) | {o for o in options if o.startswith("-") and o not in longs})
        flags.setdefault(name, [])
        flags[name] = sorted(set(flags[name]) | set(aliases))
    return flags


def class_fields(tree: ast.AST, class_name: str) -> list[str]:
    """Annotated public fields of a class body (dataclass fields), in order."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            return [
                item.target.id
                for item in node.body
                if isinstance(item, ast.AnnAssign)
                and isinstance(item.target, ast.Name)
                and not item.target.id.startswith("_")
                and not _is_classvar(item.annotation)
            ]
    raise SystemExit(f"class {class_name} not found")


def _is_classvar(annotation: ast.expr) -> bool:
    text = ast.unparse(annotation)
    return text.startswith(("ClassVar", "typing.ClassVar"))


def class_constant(tree: ast.AST, class_name: str, field: str) -> object:
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            for item in node.body:
                if (
                    isinstance(item, ast.AnnAssign)
                    and isinstance(item.target, ast.Name)
                    and item.target.id == field
                    and item.value is not None
                ):
                    return ast.literal_eval(item.value)
    raise SystemExit(f"{class_name}.{field} not found")


def module_value(tree: ast.Module, name: str) -> ast.expr:
    for node in tree.body:
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
            value = node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return value
    raise SystemExit(f"module-level {name} not found")


def literal_strings(expr: ast.expr) -> list[str]:
    """``Literal["a", "b"]`` → ["a", "b"]."""
    if isinstance(expr, ast.Subscript):
        inner = expr.slice
        items = inner.elts if isinstance(inner, ast.Tuple) else [inner]
        return [i.value for i in items if isinstance(i, ast.Constant) and isinstance(i.value, str)]
    raise SystemExit(f"not a Literal: {ast.unparse(expr)}")


def defined_anywhere(w: Wheel, name: str) -> ast.expr:
    """The value of the module-level ``name`` in whichever vllm/ module assigns it."""
    assigned = re.compile(rf"^{name}\s*(:[^=\n]*)?=", re.M)
    for path in sorted(w.names):
        if path.startswith("vllm/") and path.endswith(".py") and assigned.search(w.source(path)):
            return module_value(w.tree(path), name)
    raise SystemExit(f"{name} is not assigned in any vllm/ module")


def literal_values(w: Wheel, expr: ast.expr) -> list[str]:
    """A ``Literal`` alias's strings, nested aliases (``Literal["a", Other]``) expanded."""
    if isinstance(expr, ast.Name):
        return literal_values(w, defined_anywhere(w, expr.id))
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return [expr.value]
    if isinstance(expr, ast.Subscript) and ast.unparse(expr.value) in ("Literal", "typing.Literal"):
        inner = expr.slice
        items = inner.elts if isinstance(inner, ast.Tuple) else [inner]
        return [value for item in items for value in literal_values(w, item)]
    raise SystemExit(f"not a Literal of strings: {ast.unparse(expr)}")


def flag_choices(w: Wheel) -> dict[str, list[str]]:
    removed: dict[str, list[str]] = {}
    for field, constant in _REMOVED_CHOICE.findall(w.source("vllm/engine/arg_utils.py")):
        value = ast.literal_eval(defined_anywhere(w, constant))
        removed.setdefault("--" + field.replace("_", "-"), []).append(value)
    choices = {}
    for flag, alias in CHOICE_LITERALS.items():
        values = set(literal_values(w, defined_anywhere(w, alias)))
        choices[flag] = sorted(values - set(removed.get(flag, [])))
    return choices


def margin_constants(w: Wheel) -> dict[str, object] | None:
    name = "vllm/v1/worker/extensible_kv_cache.py"
    if name not in w.names:
        return None
    tree = w.tree(name)
    floor = ast.unparse(module_value(tree, "KV_CACHE_MARGIN_FLOOR_BYTES"))
    fraction = ast.literal_eval(module_value(tree, "KV_CACHE_MARGIN_FRACTION"))
    # ``(3 if current_platform.is_rocm() else 1) << 30``: the CUDA branch is the ``else``.
    expr = module_value(tree, "KV_CACHE_MARGIN_FLOOR_BYTES")
    cuda_floor = None
    if (
        isinstance(expr, ast.BinOp)
        and isinstance(expr.op, ast.LShift)
        and isinstance(expr.left, ast.IfExp)
    ):
        cuda_floor = ast.literal_eval(expr.left.orelse) << ast.literal_eval(expr.right)
    return {"marginFloorExpression": floor, "cudaMarginFloorBytes": cuda_floor,
            "marginFraction": fraction}  # fmt: skip


def release_data(release: str) -> dict[str, object]:
    w = Wheel(wheel(release))
    flags = add_argument_flags(w.tree("vllm/engine/arg_utils.py"))
    frontend = w.defining("FrontendArgs(")
    base = w.defining("BaseFrontendArgs")
    for path in sorted({frontend, base}):
        flags.update({k: v for k, v in add_argument_flags(w.tree(path)).items() if k not in flags})
    for path, cls in ((base, "BaseFrontendArgs"), (frontend, "FrontendArgs")):
        for field in class_fields(w.tree(path), cls):
            flags.setdefault("--" + field.replace("_", "-"), [])
    envs = module_value(w.tree("vllm/envs.py"), "environment_variables")
    assert isinstance(envs, ast.Dict)
    env_names = sorted(k.value for k in envs.keys if isinstance(k, ast.Constant))
    cache = w.tree("vllm/config/cache.py")
    return {
        "release": release,
        "source": f"vllm-{release} wheel from PyPI, read by hack/gen-vllm-releases.py",
        "defaultBlockSize": class_constant(cache, "CacheConfig", "DEFAULT_BLOCK_SIZE"),
        "mambaCacheModes": literal_strings(module_value(cache, "MambaCacheMode")),
        "extensibleKvCache": margin_constants(w),
        "flags": {name: flags[name] for name in sorted(flags)},
        "flagChoices": flag_choices(w),
        "environmentVariables": env_names,
        "speculativeConfigKeys": sorted(
            class_fields(w.tree("vllm/config/speculative.py"), "SpeculativeConfig")
        ),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DATA)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for release in RELEASES:
        minor = ".".join(release.split(".")[:2])
        data = release_data(release)
        path = args.out / f"vllm-{minor}.json"
        path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {path.relative_to(args.out.parent)}: {len(data['flags'])} flags")  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    sys.exit(main())
