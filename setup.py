"""Builds the `evident` package: the pure-Python layer from bindings/python plus the compiled
`evident._core`, which is built by CMake from this repository (target `_core` only, tests off).

Works offline with Debian's python3-setuptools, python3-wheel and pybind11-dev:

    /usr/bin/python3 -m pip install --no-build-isolation --break-system-packages .

Environment knobs:
  EVIDENT_CMAKE_BUILD_DIR  reuse/keep the CMake build there (default: build-pip/cmake)
  EVIDENT_CMAKE_ARGS       extra CMake configure arguments (space-separated)
  EVIDENT_BUILD_JOBS       parallel build jobs (default: number of CPUs)
"""
import glob
import os
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))


def read_version() -> str:
    with open(os.path.join(HERE, "VERSION"), encoding="utf-8") as f:
        return f.read().strip()


class CMakeExtension(Extension):
    def __init__(self, name: str) -> None:
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    """Configures the top-level CMake project and builds only the `_core` target."""

    def build_extension(self, ext: Extension) -> None:
        build_dir = os.environ.get("EVIDENT_CMAKE_BUILD_DIR") or os.path.join(HERE, "build-pip",
                                                                               "cmake")
        build_dir = os.path.abspath(build_dir)
        os.makedirs(build_dir, exist_ok=True)
        configure = [
            "cmake", "-S", HERE, "-B", build_dir,
            "-DCMAKE_BUILD_TYPE=Release",
            "-DEVIDENT_BUILD_TESTS=OFF",
            "-DEVIDENT_BUILD_PYTHON=ON",
            f"-DPython_EXECUTABLE={sys.executable}",
            f"-DPYTHON_EXECUTABLE={sys.executable}",
        ]
        if shutil.which("ninja") and not os.path.exists(os.path.join(build_dir, "Makefile")):
            configure += ["-G", "Ninja"]
        configure += os.environ.get("EVIDENT_CMAKE_ARGS", "").split()
        subprocess.check_call(configure)
        jobs = os.environ.get("EVIDENT_BUILD_JOBS") or str(os.cpu_count() or 2)
        subprocess.check_call(["cmake", "--build", build_dir, "--target", "_core", "-j", jobs])
        built = sorted(glob.glob(os.path.join(build_dir, "bindings", "core", "_core*.so")))
        if not built:
            raise RuntimeError(f"CMake did not produce _core*.so under {build_dir}/bindings/core")
        dest = self.get_ext_fullpath(ext.name)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(built[-1], dest)
        # `wait image`'s OpenCV half, opened on the first search from beside _core
        # (engine/capture/src/template_match_module.h); built with _core.
        match = os.path.join(build_dir, "engine", "capture", "libevident-match.so")
        if not os.path.exists(match):
            raise RuntimeError(f"CMake did not produce {match}")
        shutil.copyfile(match, os.path.join(os.path.dirname(dest), "libevident-match.so"))


setup(
    version=read_version(),
    ext_modules=[CMakeExtension("evident._core")],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": "build-pip/setuptools"}},
    zip_safe=False,
)
