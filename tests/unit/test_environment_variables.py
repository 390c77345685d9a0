"""Every GALLERY_APP_* environment variable is read in core/paths.py alone, and nothing writes one to steer the core.

Before: resources.py, models/specs.py and the vector cache read their own variables, and the window set
GALLERY_APP_DATA_DIR (from the settings, and for the self-test) for the core to find.
Tests may still set them (monkeypatch): only gallery_app/ is scanned.
"""

from __future__ import annotations

import ast
from pathlib import Path

import gallery_app

PACKAGE = Path(gallery_app.__file__).parent
OWNER = PACKAGE / "core" / "paths.py"
PREFIX = "GALLERY_APP_"


def _is_environ(node: ast.AST) -> bool:
    """``os.environ`` or a bare ``environ``."""
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ")


def _env_keys(tree: ast.AST):
    """(line, key expression) of every read or write of an environment variable."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args:
            func = node.func
            if isinstance(func, ast.Attribute) and _is_environ(func.value):  # environ.get / setdefault / pop
                yield node.lineno, node.args[0]
            elif (isinstance(func, ast.Attribute) and func.attr in ("getenv", "putenv", "unsetenv")) or (
                    isinstance(func, ast.Name) and func.id in ("getenv", "putenv")):
                yield node.lineno, node.args[0]
        elif isinstance(node, ast.Subscript) and _is_environ(node.value):
            yield node.lineno, node.slice
        elif isinstance(node, ast.Compare) and any(_is_environ(c) for c in node.comparators):
            yield node.lineno, node.left


def _string_constants(tree: ast.AST) -> dict[str, str]:
    return {target.id: node.value.value for node in ast.walk(tree) if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
            for target in node.targets if isinstance(target, ast.Name)}


def _names_an_app_variable(key: ast.AST, constants: dict[str, str]) -> bool:
    if PREFIX in ast.unparse(key):
        return True
    name = key.id if isinstance(key, ast.Name) else key.attr if isinstance(key, ast.Attribute) else ""
    return name.endswith("_ENV") or constants.get(name, "").startswith(PREFIX)


def app_variable_uses(source: str) -> list[int]:
    tree = ast.parse(source)
    constants = _string_constants(tree)
    return sorted(line for line, key in _env_keys(tree) if _names_an_app_variable(key, constants))


def test_the_scan_sees_each_way_of_reading_or_writing_a_variable():
    spelled = '''
import os
from os import environ, getenv
RESOURCES = "GALLERY_APP_RESOURCES_DIR"
a = os.environ.get("GALLERY_APP_HUB_ENDPOINT", "")
b = os.getenv(RESOURCES)
c = environ[paths.DATA_DIR_ENV]
os.environ["GALLERY_APP_DATA_DIR"] = "x"
d = "GALLERY_APP_VECTOR_CACHE_MB" in os.environ
e = getenv(RESOURCES)
os.environ.setdefault(f"GALLERY_APP_{name}", "1")
f = os.environ.get("TERM") or os.getenv("DISPLAY")
'''
    assert app_variable_uses(spelled) == [5, 6, 7, 8, 9, 10, 11]


def test_only_core_paths_reads_the_apps_environment_variables():
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == OWNER:
            continue
        lines = app_variable_uses(path.read_text("utf-8"))
        offenders += [f"{path.relative_to(PACKAGE.parent)}:{line}" for line in lines]
    assert offenders == [], "read GALLERY_APP_* variables through gallery_app/core/paths.py"


def test_core_paths_reads_them():
    assert app_variable_uses(OWNER.read_text("utf-8"))  # the scan still sees the one module that does


def test_the_settings_data_folder_gives_way_to_the_variable_and_the_self_tests_does_not(monkeypatch, tmp_path):
    import shutil

    from gallery_app.core import paths
    from gallery_app.ui import self_test

    named = paths.data_dir()  # the test's own folder, from GALLERY_APP_DATA_DIR
    paths.use_data_dir(tmp_path / "from the settings")
    assert paths.data_dir() == named
    monkeypatch.delenv(paths.DATA_DIR_ENV)
    assert paths.data_dir() == tmp_path / "from the settings"

    monkeypatch.setenv(paths.DATA_DIR_ENV, str(named))
    throw_away = self_test.prepare_environment()
    try:
        assert paths.data_dir() == throw_away != named and paths.database_path().parent == throw_away
        assert paths.data_dir_from_environment() == named  # what the settings dialog says takes precedence
    finally:
        shutil.rmtree(throw_away, ignore_errors=True)
