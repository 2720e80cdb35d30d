"""Builds libinapack.so, the Go worker's C ABI (worker/cabi), into the package.

The library is compiled from the repository this directory belongs to, so install from a checkout:
``pip install ./python``. It needs Go (the version in ../go.mod) on PATH, or in $GO.
"""

import os
import shutil
import subprocess
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent.parent


class BuildWithGo(build_py):
    def run(self):
        super().run()
        go = shutil.which(os.environ.get("GO", "go"))
        if go is None:
            raise SystemExit(
                "inapack: building libinapack.so needs Go (see ../go.mod for the version) on PATH or in $GO; "
                "install it (your distribution or the Go project's downloads), then run pip install ./python again")
        if not (ROOT / "go.mod").is_file() or not (ROOT / "worker" / "cabi").is_dir():
            raise SystemExit(f"inapack: {ROOT} is not an INAPack checkout (no go.mod / worker/cabi): "
                             "install with pip install ./python from the repository")
        out = Path(self.build_lib).resolve() / "inapack" / "libinapack.so"
        out.parent.mkdir(parents=True, exist_ok=True)
        cmd = [go, "build", "-buildmode=c-shared", "-trimpath", "-o", str(out), "./worker/cabi"]
        print("inapack:", " ".join(cmd))
        subprocess.run(cmd, cwd=ROOT, check=True)
        out.with_suffix(".h").unlink(missing_ok=True)


class BinaryDistribution(Distribution):
    """The wheel holds a native library: tag it for this platform."""

    def has_ext_modules(self):
        return True


setup(cmdclass={"build_py": BuildWithGo}, distclass=BinaryDistribution)
