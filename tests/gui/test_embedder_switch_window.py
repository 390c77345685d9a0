"""Another text embedder chosen in the window: every search stays whole while the chats are re-embedded."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox

from gallery_app.core.chat.importer import import_chat
from gallery_app.core.chat.retrieval import ChatRetriever
from gallery_app.core.models import choices, loading
from gallery_app.core.models.specs import Role
from gallery_app.ui.services import Services
from gallery_app.ui.settings import Settings
from gallery_app.ui.settings_dialog import SettingsDialog
from tests.chat_helpers import DEMO_CHAT, HashEmbedder

pytestmark = pytest.mark.timeout(60)
QUESTION = "key safe code at the cottage"


class _Named:
    def __init__(self, name: str):
        self.name = name


class OldEmbedder(HashEmbedder):
    spec = _Named("the old embedder")

    def release(self) -> None:
        pass


class NewEmbedder(OldEmbedder):
    model_key = "test-hash-other"
    dims = 32
    spec = _Named("the new embedder")


@pytest.fixture
def services(monkeypatch):
    new_keys = {"test-hash-other", "all-minilm-l6-v2-int8"}
    monkeypatch.setattr(loading, "open_text_embedder",
                        lambda setting=None, threads=None: NewEmbedder() if (setting or choices.chosen(
                            Role.TEXT_EMBEDDER)) in new_keys else OldEmbedder())
    services = Services(Settings())
    with services.connect() as conn:
        import_chat(conn, DEMO_CHAT, OldEmbedder())
    yield services
    assert services.workers.wait(10_000)
    services.shutdown()


def search(services) -> tuple[str, list[int], int]:
    embedder = services.text_embedder()
    with services.connect() as conn:
        found = ChatRetriever(conn, embedder).retrieve(QUESTION, k=4)
    return embedder.model_key, [match.chunk_id for match in found.matches], found.unindexed


def test_every_search_during_the_switch_is_whole_and_the_new_embedder_takes_over_at_the_end(qtbot, services):
    before = search(services)
    assert before[0] == "test-hash-words" and len(before[1]) == 4 and before[2] == 0
    during = []
    messages = []
    services.message.connect(messages.append)
    worker = services.switch_text_embedder("test-hash-other")
    worker.signals.progress.connect(lambda done, total: during.append(search(services)))
    with qtbot.waitSignal(worker.signals.finished, timeout=30_000):
        pass
    assert len(during) >= 2 and all(result == before for result in during)  # never empty, never mixed
    qtbot.waitUntil(lambda: services.settings.text_embedder == "test-hash-other", timeout=5_000)
    model, matches, unindexed = search(services)
    assert model == "test-hash-other" and len(matches) == 4 and unindexed == 0
    assert choices.chosen(Role.TEXT_EMBEDDER) == "test-hash-other"
    assert "Every chat is now searched with the new embedder." in messages


def test_ok_in_settings_starts_the_switch_and_keeps_the_old_embedder_until_it_ends(qtbot, services):
    dialog = SettingsDialog(services)
    qtbot.addWidget(dialog)
    combo = dialog.model_combos[Role.TEXT_EMBEDDER]
    combo.setCurrentIndex(combo.findData("all-minilm-l6-v2-int8"))
    dialog.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Ok).click()
    assert dialog.switching is not None
    assert services.settings.text_embedder == "" and Settings.load().text_embedder == ""  # not yet
    with qtbot.waitSignal(dialog.switching.signals.finished, timeout=30_000):
        pass
    qtbot.waitUntil(lambda: services.settings.text_embedder == "all-minilm-l6-v2-int8", timeout=5_000)
    assert Settings.load().text_embedder == "all-minilm-l6-v2-int8"


def test_a_cancelled_switch_keeps_the_old_embedder(qtbot, services):
    before = search(services)
    worker = services.switch_text_embedder("test-hash-other")
    # On the worker's thread, as its batch ends: the next batch sees it (122 windows: 4 batches, progress from the 2nd).
    worker.signals.progress.connect(lambda done, total: worker.cancel(), Qt.ConnectionType.DirectConnection)
    with qtbot.waitSignal(worker.signals.finished, timeout=30_000):
        pass
    assert services.settings.text_embedder == "" and choices.chosen(Role.TEXT_EMBEDDER) is None
    assert search(services) == before
