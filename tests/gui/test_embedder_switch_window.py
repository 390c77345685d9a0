"""Another text embedder chosen in the window: every search stays whole while the chats are re-embedded."""

from __future__ import annotations

import hashlib

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox

from gallery_app.core.chat.importer import import_chat
from gallery_app.core.chat.retrieval import ChatRetriever
from gallery_app.core.models import catalog, choices, loading, sources
from gallery_app.core.models.specs import ModelFile, ModelSpec, Role, Runtime
from gallery_app.ui.services import Services
from gallery_app.ui.settings import Settings
from gallery_app.ui.settings_dialog import SettingsDialog
from tests.chat_helpers import DEMO_CHAT, HashEmbedder
from tests.fake_hub import PAYLOAD

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


def test_an_embedder_chosen_in_settings_that_is_not_here_yet_is_downloaded_first(qtbot, services, slow_hub,
                                                                                monkeypatch):
    """Before: the switch failed at once ("… is not on this computer yet"), though the model was one download away."""
    spec = ModelSpec(key="test-hash-other", role=Role.TEXT_EMBEDDER, name="the new embedder", runtime=Runtime.ONNX,
                     files=(ModelFile("model.onnx", len(PAYLOAD), hashlib.sha256(PAYLOAD).hexdigest(),
                                      repo_path="onnx/model.onnx"),),
                     licence="MIT", dims=NewEmbedder.dims, hf_repo="tester/new-embedder", revision="0" * 40)
    monkeypatch.setitem(catalog.CANDIDATES, Role.TEXT_EMBEDDER, (*catalog.CANDIDATES[Role.TEXT_EMBEDDER], spec))
    monkeypatch.setitem(catalog.ALL_SPECS, spec.key, spec)

    def open_text_embedder(setting=None, threads=None):
        if (setting or choices.chosen(Role.TEXT_EMBEDDER)) != spec.key:
            return OldEmbedder()
        sources.resolve(spec)  # ModelNotAvailable unless its file is in the models folder, checked
        return NewEmbedder()

    monkeypatch.setattr(loading, "open_text_embedder", open_text_embedder)
    before = search(services)
    dialog = SettingsDialog(services)
    qtbot.addWidget(dialog)
    combo = dialog.model_combos[Role.TEXT_EMBEDDER]
    combo.setCurrentIndex(combo.findData(spec.key))
    steps, progress, finished = [], [], []
    start = services.run

    def run(worker, label=None):  # listening before the job starts: its first step comes at once
        worker.signals.step.connect(steps.append)
        worker.signals.progress.connect(lambda done, total: progress.append((done, total)))
        worker.signals.finished.connect(lambda: finished.append(True))
        return start(worker, label)

    monkeypatch.setattr(services, "run", run)
    dialog.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Ok).click()
    # Until the download and the embedding are both done, search keeps the old embedder.
    assert search(services) == before
    qtbot.waitUntil(lambda: bool(finished), timeout=30_000)
    assert steps[:2] == ["Downloading the new embedder…", "Embedding messages…"]
    assert (len(PAYLOAD), len(PAYLOAD)) in progress  # the download's bytes went to the status bar
    assert (sources.model_folder(spec) / "model.onnx").read_bytes() == PAYLOAD
    qtbot.waitUntil(lambda: services.settings.text_embedder == spec.key, timeout=5_000)
    model, matches, unindexed = search(services)
    assert model == "test-hash-other" and len(matches) == 4 and unindexed == 0
