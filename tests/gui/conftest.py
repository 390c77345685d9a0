"""GUI tests: settings in a private folder, and no worker thread may outlive its test."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QCoreApplication, QSettings, QThreadPool


@pytest.fixture(autouse=True)
def private_settings(tmp_path, qapp):
    """QSettings read and written in a temporary folder, never the person's real preferences."""
    QCoreApplication.setOrganizationName("gallery_app-tests")
    QCoreApplication.setApplicationName("gallery_app-tests")
    QSettings.setDefaultFormat(QSettings.Format.IniFormat)
    QSettings.setPath(QSettings.Format.IniFormat, QSettings.Scope.UserScope, str(tmp_path / "settings"))
    yield
    QSettings().clear()


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
