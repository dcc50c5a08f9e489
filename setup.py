"""The one file the wheel carries outside its packages: `pytest_skilleval_startup.pth`, the start-up check that
stops `pytest --skill-eval` before pytest reads a config file lying in a skill folder (pytest_skilleval/startup.py,
docs/security.md). A file at a wheel's root is installed into site-packages; this puts it there in the regular
wheel (`build_py`) and in the editable wheel `pip install -e .` builds (`editable_wheel`), which carries none of
build_py's output. Everything else is in pyproject.toml."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.editable_wheel import editable_wheel

# Sorts after the editable install's own `__editable__.*.pth`, which puts the package on the import path.
PTH = "pytest_skilleval_startup.pth"
HERE = Path(__file__).resolve().parent


class BuildPyWithPth(build_py):
    """build_py, and the `.pth` beside the packages (the wheel's root)."""

    def run(self) -> None:
        super().run()
        self.copy_file(str(HERE / PTH), str(Path(self.build_lib, PTH)), preserve_mode=False)


def add_to_wheel(wheel: Path, name: str, data: bytes) -> None:
    """Rewrite `wheel` with `name` at its root and a matching RECORD line."""
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    with zipfile.ZipFile(wheel) as old:
        entries = [(info, old.read(info)) for info in old.infolist() if info.filename != name]
    partial = wheel.with_name(wheel.name + ".part")
    with zipfile.ZipFile(partial, "w", zipfile.ZIP_DEFLATED) as new:
        new.writestr(name, data)
        for info, content in entries:
            if info.filename.endswith(".dist-info/RECORD"):
                content = content.rstrip(b"\r\n") + f"\n{name},sha256={digest},{len(data)}\n".encode()
            new.writestr(info, content)
    partial.replace(wheel)


class EditableWheelWithPth(editable_wheel):
    """editable_wheel, and the `.pth` added to the wheel it built."""

    def run(self) -> None:
        super().run()
        wheels = sorted(Path(self.dist_dir).glob("pytest_skilleval-*.whl"))
        if not wheels:
            raise RuntimeError(f"no editable wheel of pytest-skilleval in {self.dist_dir} to add {PTH} to")
        for wheel in wheels:
            add_to_wheel(wheel, PTH, (HERE / PTH).read_bytes())


setup(cmdclass={"build_py": BuildPyWithPth, "editable_wheel": EditableWheelWithPth})
