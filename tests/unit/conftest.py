"""Unit tests: a fresh database file per test."""

from __future__ import annotations

import pytest

from gallery_app.core.store import open_store


@pytest.fixture
def db_path(tmp_path):
    return tmp_path / "gallery.db"


@pytest.fixture
def store(db_path):
    conn = open_store(db_path)
    yield conn
    conn.close()
