"""The core is headless: nothing under gallery_app/core may import Qt, directly or indirectly.
Models and the store sit below chats and photos: they never import them."""

from __future__ import annotations

import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import gallery_app.core

CORE = Path(gallery_app.core.__file__).parent
QT_MODULES = ("PySide6", "shiboken6", "PyQt5", "PyQt6")


def test_no_core_module_mentions_qt():
    offenders = []
    for path in CORE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            offenders += [f"{path.relative_to(CORE)}: {n}" for n in names if n.split(".")[0] in QT_MODULES]
    assert not offenders


def test_models_and_store_import_nothing_above_them():
    above = ("gallery_app.core.chat", "gallery_app.core.photos", "gallery_app.core.demo", "gallery_app.ui",
             "gallery_app.cli")
    offenders = []
    for folder in (CORE / "models", CORE / "store"):
        for path in folder.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text("utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.module:
                    names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
                elif isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                else:
                    continue
                if any(n == a or n.startswith(a + ".") for n in names for a in above):
                    offenders.append(f"{path.relative_to(CORE)}:{node.lineno}: {names[0]}")
    assert not offenders


def test_importing_the_whole_core_loads_no_qt():
    modules = [m.name for m in pkgutil.walk_packages([str(CORE)], prefix="gallery_app.core.")]
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {QT_MODULES!r}))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"
