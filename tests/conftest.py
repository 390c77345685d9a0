"""Shared test setup: private data/model folders for every test, and no network beyond loopback."""

from __future__ import annotations

import ipaddress
import os
import socket
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_FIXTURES = REPO.parent / "shared" / "fixtures"
SHARED_MISSING = (f"needs the shared fixtures, which are not beside this checkout ({SHARED_FIXTURES}); "
                  "CI=true requires them")

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ["HF_HUB_OFFLINE"] = "1"


def _is_loopback(address) -> bool:
    if not isinstance(address, tuple):
        return True  # AF_UNIX and friends never leave the machine
    host = address[0]
    if host in ("localhost", ""):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex


def _guarded_connect(self, address):
    if not _is_loopback(address):
        raise ConnectionRefusedError(f"tests must not reach the network (tried {address!r})")
    return _real_connect(self, address)


def _guarded_connect_ex(self, address):
    if not _is_loopback(address):
        raise ConnectionRefusedError(f"tests must not reach the network (tried {address!r})")
    return _real_connect_ex(self, address)


socket.socket.connect = _guarded_connect
socket.socket.connect_ex = _guarded_connect_ex


@pytest.fixture(autouse=True)
def app_dirs(tmp_path_factory, monkeypatch):
    """Every test gets empty data and models folders; the real user folders are never touched."""
    base = tmp_path_factory.mktemp("app")
    data, models = base / "data", base / "models"
    monkeypatch.setenv("GALLERY_APP_DATA_DIR", str(data))
    monkeypatch.setenv("GALLERY_APP_MODELS_DIR", str(models))
    monkeypatch.delenv("GALLERY_APP_HUB_ENDPOINT", raising=False)
    # A data folder chosen in the process (the settings', the self-test's) is forgotten after each test.
    from gallery_app.core import paths

    monkeypatch.setattr(paths, "_chosen_data_dir", None)
    monkeypatch.setattr(paths, "_chosen_over_environment", False)
    return data, models


@pytest.fixture(scope="session")
def reader_model_once(tmp_path_factory):
    """The second reading's model joined from its packages once per run, not into every test's empty
    models folder (250 MB each): ``reader_model()`` returns it when first asked."""
    from gallery_app.core.chat import second_reading

    joined = {}
    original = second_reading.reader_model

    def once():
        if "model" not in joined:
            with pytest.MonkeyPatch.context() as patch:
                patch.setenv("GALLERY_APP_MODELS_DIR", str(tmp_path_factory.mktemp("reader-model")))
                joined["model"] = original()
        return joined["model"]

    return once


@pytest.fixture(autouse=True)
def shared_reader_model(reader_model_once, monkeypatch):
    from gallery_app.core.chat import second_reading

    monkeypatch.setattr(second_reading, "reader_model", reader_model_once)


def require_shared_fixtures() -> Path:
    """Skip the calling test when ../shared is absent (a clone from the project's home); CI must have it."""
    if not SHARED_FIXTURES.is_dir():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"CI needs the shared fixtures: {SHARED_FIXTURES} is missing.", pytrace=False)
        pytest.skip(SHARED_MISSING)
    return SHARED_FIXTURES


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    # tryfirst: in CI a missing folder must fail even a test whose parameter list came out empty without it.
    if item.get_closest_marker("shared_fixtures"):
        require_shared_fixtures()


def pytest_terminal_summary(terminalreporter):
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if SHARED_MISSING in str(r.longrepr)]
    if skipped:
        terminalreporter.write_line(
            f"{len(skipped)} tests skipped: they need ../shared/fixtures beside the checkout "
            "(the fixtures written by other projects; CI=true requires them).", yellow=True)


@pytest.fixture
def shared_fixtures() -> Path:
    return require_shared_fixtures()


@pytest.fixture(scope="session")
def test_clip_folder(tmp_path_factory):
    """A models folder holding the CLIP-shaped test towers, built once per run."""
    from tests.clip_models import write_test_clip_models

    folder = tmp_path_factory.mktemp("clip-models")
    weights = write_test_clip_models(folder)
    return folder, weights


@pytest.fixture
def test_clip(test_clip_folder, monkeypatch):
    """(vision, text, weights): the app's CLIP loaders pointed at the test towers."""
    from gallery_app.core.models.loading import open_clip_text, open_clip_vision

    folder, weights = test_clip_folder
    monkeypatch.setenv("GALLERY_APP_MODELS_DIR", str(folder))
    vision, text = open_clip_vision(threads=1), open_clip_text(threads=1)
    yield vision, text, weights
    vision.release()
    text.release()
