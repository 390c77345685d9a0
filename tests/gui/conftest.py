"""GUI tests: settings in a private folder, and no worker thread may outlive its test."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QCoreApplication, QSettings, QThreadPool

from gallery_app.core import paths
from tests.fake_hub import SlowHub


@pytest.fixture(autouse=True)
def private_settings(tmp_path, qapp):
    """QSettings read and written in a temporary folder, never the person's real preferences."""
    QCoreApplication.setOrganizationName("gallery_app-tests")
    QCoreApplication.setApplicationName("gallery_app-tests")
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp_path / "settings"))
    yield
    QSettings().clear()


@pytest.fixture(scope="session", autouse=True)
def multimedia_plugin_loaded(qapp):
    """QtMultimedia's FFmpeg plugin loaded once, before any test starts a worker.

    Loading it logs a Qt message, which pytest-qt's message handler handles in Python: it waits for
    the GIL while the dynamic loader's lock is held. A worker closing a database at that moment holds
    the GIL and waits for the same loader lock (SQLite unloads the vector extension): both hang for
    good (seen once in six runs of test_camera's first QMediaDevices call). The app itself installs
    no Python message handler, so this is the tests' own trap.
    """
    from PySide6.QtMultimedia import QMediaDevices

    QMediaDevices.videoInputs()


@pytest.fixture(autouse=True)
def no_threads_left_behind(qapp):
    yield
    assert QThreadPool.globalInstance().waitForDone(20_000), "a worker was still running after the test"


@pytest.fixture
def services():
    """The window's shared services, with every worker finished and model released afterwards."""
    from gallery_app.ui.services import Services

    made = Services()
    yield made
    made.workers.cancel_all()
    made.workers.wait()
    made.shutdown()


@pytest.fixture
def slow_hub(monkeypatch):
    """Downloads go to a fake hub on 127.0.0.1 (``tests.fake_hub``), never to the network."""
    hub = SlowHub(delay=0.05)
    hub.thread.start()
    monkeypatch.setenv(paths.HUB_ENDPOINT_ENV, hub.endpoint)
    yield hub
    hub.server.shutdown()
    hub.server.server_close()
