"""Build the project's images without Docker, for the simulated cluster's real nodes, from the
same inputs as hack/images/*/Dockerfile: a Debian bookworm root filesystem (mmdebstrap
--variant=minbase with Debian's python3), the package installed with pip --target under the
pinned constraints.txt, and the user, working directory, environment, ports, entrypoint and
command read from the Dockerfile's final stage. umoci assembles each into an OCI archive in
.cache/images/<name>.tar, named as the cluster expects (docker.io/... as the CRI normalizes
names); each real node imports them into its containerd. Also the pod sandbox's pause image
(hack/build-nodes.sh builds the program).

    hack/build-images.sh            build what changed (a hash of the inputs names each archive)
    hack/build-images.sh --check    exit 1 when an archive is missing or older than its inputs

Differences from the published images (README): Debian's Python 3.11 (/usr/bin/python3) instead of
the python:3.11-slim image's own build in /usr/local, and Debian's packages as of the build day.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache" / "images"
SITE = "usr/local/lib/python3.11/dist-packages"  # on Debian python3's sys.path, as pip's --target
BASE_PACKAGES = ("python3", "python-is-python3", "ca-certificates")
# The environment the Dockerfiles' base (python:3.11-slim-bookworm) sets for every image.
BASE_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "LANG": "C.UTF-8"}  # fmt: skip
OPERATOR_IMAGE = "ghcr.io/nemotron-operator/nemotron-operator"


@dataclass
class ImageConfig:
    """What a Dockerfile's final stage says about the image it produces."""

    user: str = ""
    workdir: str = "/"
    env: dict[str, str] = field(default_factory=dict)
    expose: list[str] = field(default_factory=list)
    entrypoint: list[str] = field(default_factory=list)
    cmd: list[str] = field(default_factory=list)


def dockerfile_config(path: Path) -> ImageConfig:
    """USER, WORKDIR, ENV, EXPOSE, ENTRYPOINT and CMD of the final stage (continuation lines
    joined; only the forms the project's Dockerfiles use)."""
    text = path.read_text().replace("\\\n", " ")
    config = ImageConfig()
    for line in text.splitlines():
        words = line.strip().split(None, 1)
        if not words or words[0].startswith("#"):
            continue
        instruction, rest = words[0].upper(), (words[1] if len(words) > 1 else "")
        if instruction == "FROM":
            config = ImageConfig()
        elif instruction == "USER":
            config.user = rest.strip()
        elif instruction == "WORKDIR":
            config.workdir = rest.strip()
        elif instruction == "ENV":
            config.env.update(dict(item.split("=", 1) for item in shlex.split(rest)))
        elif instruction == "EXPOSE":
            config.expose += [p if "/" in p else f"{p}/tcp" for p in rest.split()]
        elif instruction in ("ENTRYPOINT", "CMD"):
            value = json.loads(rest)
            setattr(config, instruction.lower(), value)
    return config


def _run(*argv: str | Path, cwd: Path | None = None) -> None:
    subprocess.run([str(a) for a in argv], check=True, cwd=cwd)


def _digest(*parts: bytes) -> str:
    return hashlib.sha256(b"\0".join(parts)).hexdigest()[:12]


def _tree_bytes(directory: Path) -> bytes:
    return b"".join(p.relative_to(ROOT).as_posix().encode() + p.read_bytes()
                    for p in sorted(directory.rglob("*")) if p.is_file()
                    and "__pycache__" not in p.parts)  # fmt: skip


def base_rootfs_path() -> Path:
    return CACHE / f"base-bookworm-{_digest(' '.join(BASE_PACKAGES).encode())}.tar"


def base_rootfs() -> Path:
    """Debian bookworm, minbase, with Debian's python3: mmdebstrap as root (no Docker)."""
    path = base_rootfs_path()
    if not path.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp.tar")
        _run("mmdebstrap", "--variant=minbase", "--mode=root", "--quiet",
             f"--include={','.join(BASE_PACKAGES)}", "bookworm", tmp)  # fmt: skip
        tmp.rename(path)
    return path


def _pip(*args: str | Path) -> None:
    _run(sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "--no-compile", *args)  # fmt: skip


def _script(rootfs: Path, name: str, body: str) -> None:
    path = rootfs / "usr/local/bin" / name
    path.write_text(body)
    path.chmod(0o755)


def fill_operator(rootfs: Path) -> None:
    """hack/images/operator/Dockerfile: the operator's package and its pinned dependencies."""
    _pip("--target", rootfs / SITE, "--constraint", ROOT / "constraints.txt", ROOT)
    shutil.rmtree(
        rootfs / SITE / "bin", ignore_errors=True
    )  # scripts for this Python, not Debian's
    _script(rootfs, "nemotron-operator", "#!/usr/bin/python3\nimport sys\n"
            "from nemotron_operator.cli import main\nsys.exit(main())\n")  # fmt: skip


def fill_vllm_stub(rootfs: Path) -> None:
    """hack/images/vllm-stub/Dockerfile: its requirements, the operator's package without its
    dependencies, the simulator's package beside it, and the vllm and hf scripts."""
    stub = ROOT / "hack/images/vllm-stub"
    _pip("--target", rootfs / SITE, "--constraint", ROOT / "constraints.txt",
         "--requirement", stub / "requirements.txt")  # fmt: skip
    _pip("--target", rootfs / SITE, "--no-deps", "--upgrade", ROOT)
    shutil.copytree(ROOT / "operator/nemotron_sim", rootfs / SITE / "nemotron_sim",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    shutil.rmtree(rootfs / SITE / "bin", ignore_errors=True)
    for name in ("vllm", "hf"):
        _script(rootfs, name, (stub / name).read_text())


IMAGES = {  # archive name: (image name, Dockerfile, how to fill the root filesystem, checks)
    "operator": (f"{OPERATOR_IMAGE}:{{app_version}}", "operator", fill_operator,
                 ["nemotron-operator", "--help"]),
    "vllm-stub": ("docker.io/nemotron-operator/vllm-stub:dev", "vllm-stub", fill_vllm_stub,
                  ["vllm", "--version"]),
}  # fmt: skip


def app_version() -> str:
    for line in (ROOT / "charts/nemotron-operator/Chart.yaml").read_text().splitlines():
        if line.startswith("appVersion:"):
            return line.split(":", 1)[1].strip().strip('"')
    raise SystemExit("build-images: no appVersion in the chart")


def assemble(rootfs: Path, config: ImageConfig, name: str, out: Path, work: Path) -> None:
    """An OCI archive of ``rootfs`` with ``config``, named ``name`` for containerd's import."""
    layout, bundle = work / "layout", work / "bundle"
    _run("umoci", "init", "--layout", layout)
    _run("umoci", "new", "--image", f"{layout}:latest")
    _run("umoci", "unpack", "--image", f"{layout}:latest", bundle)
    shutil.rmtree(bundle / "rootfs")
    rootfs.rename(bundle / "rootfs")
    _run("umoci", "--log", "error", "repack", "--no-history", "--image", f"{layout}:latest", bundle)
    argv: list[str] = ["umoci", "config", "--no-history", "--image", f"{layout}:latest",
                       "--config.workingdir", config.workdir]  # fmt: skip
    if config.user:
        argv += ["--config.user", config.user]
    for key, value in {**BASE_ENV, **config.env}.items():
        argv += ["--config.env", f"{key}={value}"]
    for port in config.expose:
        argv += ["--config.exposedports", port]
    argv += [a for word in config.entrypoint for a in ("--config.entrypoint", word)]
    argv += [a for word in config.cmd for a in ("--config.cmd", word)]
    _run(*argv)
    _run("umoci", "gc", "--layout", layout)
    index = json.loads((layout / "index.json").read_text())
    for manifest in index["manifests"]:  # what `ctr images import` names the image
        manifest.setdefault("annotations", {})["io.containerd.image.name"] = name
    (layout / "index.json").write_text(json.dumps(index))
    tmp = out.with_suffix(".tmp")
    _run("tar", "-C", layout, "-cf", tmp, ".")
    tmp.rename(out)


def inputs_key(name: str) -> str:
    """A hash of everything the image is built from (the base's name stands for its packages)."""
    image, directory, _, _ = IMAGES[name]
    dockerfile = ROOT / "hack/images" / directory / "Dockerfile"
    inputs = [
        base_rootfs_path().name.encode(), image.format(app_version=app_version()).encode(),
        dockerfile.read_bytes(), Path(__file__).read_bytes(),
        (ROOT / "constraints.txt").read_bytes(), (ROOT / "pyproject.toml").read_bytes(),
        # the operator image holds the operator's package only; the stand-in both packages
        _tree_bytes(ROOT / "operator" / ("nemotron_operator" if name == "operator" else "")),
        _tree_bytes(ROOT / "hack/images" / directory),
    ]  # fmt: skip
    return _digest(*inputs)


def up_to_date(name: str) -> bool:
    out, stamp = CACHE / f"{name}.tar", CACHE / f"{name}.inputs"
    return out.exists() and stamp.exists() and stamp.read_text() == inputs_key(name)


def build(name: str) -> Path:
    image, directory, fill, check = IMAGES[name]
    image = image.format(app_version=app_version())
    dockerfile = ROOT / "hack/images" / directory / "Dockerfile"
    out, stamp = CACHE / f"{name}.tar", CACHE / f"{name}.inputs"
    if up_to_date(name):
        return out
    base = base_rootfs()
    key = inputs_key(name)
    config = dockerfile_config(dockerfile)
    with tempfile.TemporaryDirectory(prefix=f"build-{name}-", dir=CACHE) as work:
        rootfs = Path(work) / "rootfs"
        rootfs.mkdir()
        _run("tar", "-C", rootfs, "-xf", base)
        fill(rootfs)
        (rootfs / config.workdir.lstrip("/")).mkdir(parents=True, exist_ok=True)
        # Fail the build, not the pod (as the Dockerfiles' RUN checks do).
        subprocess.run(
            ["chroot", "--userspec", config.user or "0:0", str(rootfs), "/usr/bin/env",
             *(f"{k}={v}" for k, v in {**BASE_ENV, "HOME": "/tmp"}.items()), *check],
            check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        assemble(rootfs, config, image, out, Path(work))
    stamp.write_text(key)
    return out


def build_pause(pause_binary: Path) -> Path:
    out, stamp = CACHE / "pause.tar", CACHE / "pause.inputs"
    key = _digest(pause_binary.read_bytes())
    if out.exists() and stamp.exists() and stamp.read_text() == key:
        return out
    with tempfile.TemporaryDirectory(prefix="build-pause-", dir=CACHE) as work:
        rootfs = Path(work) / "rootfs"
        rootfs.mkdir()
        shutil.copy(pause_binary, rootfs / "pause")
        config = ImageConfig(user="65535:65535", entrypoint=["/pause"])
        assemble(rootfs, config, "registry.k8s.io/pause:3.10", out, Path(work))
    stamp.write_text(key)
    return out


def main() -> int:
    if sys.argv[1:] == ["--check"]:  # exit 1 when an image is older than its inputs
        stale = [name for name in IMAGES if not up_to_date(name)]
        for name in stale:
            sys.stderr.write(f"build-images: {CACHE / name}.tar is missing or out of date\n")
        return 1 if stale else 0
    if os.geteuid() != 0:
        sys.stderr.write(
            "build-images: needs root (mmdebstrap, chroot and umoci keep file owners)\n"
        )
        return 2
    nodes_bin = subprocess.run([ROOT / "hack/build-nodes.sh", "--print-dir"], check=True,
                               capture_output=True, text=True).stdout.strip()  # fmt: skip
    CACHE.mkdir(parents=True, exist_ok=True)
    for name in sys.argv[1:] or ["pause", *IMAGES]:
        began = time.monotonic()
        path = build_pause(Path(nodes_bin) / "pause") if name == "pause" else build(name)
        size = path.stat().st_size / 2**20
        took = time.monotonic() - began
        sys.stderr.write(f"build-images: {path} ({size:.0f} MiB) in {took:.0f} s\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
