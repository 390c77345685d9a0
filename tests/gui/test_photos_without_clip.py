"""Photos without a CLIP model, in the real window: Ctrl+D still finds identical and resized copies of real
photos; words, a click on a photo and the duplicates list offer Help → Models at the CLIP model, where one
click downloads it (from a hub on 127.0.0.1); and *Add folder*'s chooser takes a typed hidden folder.

Before: each search said to run `gallery-app-cli models fetch clip-vit-b-32-…`, Ctrl+D found nothing, and
Choose stayed greyed for `~/.photos`."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
from PIL import Image
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QDialogButtonBox, QLineEdit

from gallery_app.core.models import catalog
from gallery_app.core.models.specs import ModelFile, ModelSpec, Role, Runtime
from gallery_app.ui.main_window import MODELS_OFFERED_KEY
from gallery_app.ui.models_dialog import READY
from gallery_app.ui.photos import PhotoGridModel
from tests.conftest import SHARED_FIXTURES
from tests.gui.test_main_window import open_window
from tests.fake_hub import PAYLOAD, SlowHub

PILLOW = SHARED_FIXTURES / "photos" / "pillow"
pytestmark = [pytest.mark.shared_fixtures, pytest.mark.timeout(120)]


@pytest.fixture
def hub(monkeypatch):
    """A model server on 127.0.0.1 that sends PAYLOAD at once, and CLIP's text tower as a 1 MiB model it serves."""
    from gallery_app.core import paths

    server = SlowHub(delay=0.0)
    server.thread.start()
    monkeypatch.setenv(paths.HUB_ENDPOINT_ENV, server.endpoint)
    spec = ModelSpec(key="tiny-clip-text-test", role=Role.CLIP_TEXT, name="Tiny text tower", runtime=Runtime.ONNX,
                     files=(ModelFile("text_model.onnx", len(PAYLOAD), hashlib.sha256(PAYLOAD).hexdigest(),
                                      repo_path="onnx/text_model.onnx"),),
                     licence="MIT", dims=4, hf_repo="tester/tiny-clip", revision="0" * 40)
    monkeypatch.setitem(catalog.CANDIDATES, Role.CLIP_TEXT, (spec,))
    monkeypatch.setitem(catalog.ALL_SPECS, spec.key, spec)
    yield spec
    server.server.shutdown()
    server.server.server_close()


@pytest.fixture
def window(qtbot):
    QSettings().setValue(MODELS_OFFERED_KEY, True)  # not a first start: the models dialog stays closed
    main = open_window(qtbot)
    main.tabs.setCurrentWidget(main.photo_pane)
    yield main
    main.close()


def copies(folder: Path) -> Path:
    """Real photos, a byte-identical backup of one and a half-size re-encoded copy of another."""
    folder.mkdir(parents=True)
    for name in ("hopper.jpg", "flower.jpg", "pil_sample_rgb.jpg"):
        shutil.copy(PILLOW / name, folder / name)
    shutil.copy(PILLOW / "hopper.jpg", folder / "hopper backup.jpg")
    with Image.open(PILLOW / "flower.jpg") as image:
        image.resize((image.width // 2, image.height // 2)).save(folder / "flower small.jpg", quality=70)
    return folder


def focused(models, role: Role) -> bool:
    """The Models dialog's row of ``role`` is filled in and its Download button has the focus."""
    actions = models._actions.get(role)
    return actions is not None and not actions.download.isHidden() and models.focusWidget() is actions.download


def add(window, qtbot, folder: Path) -> None:
    with qtbot.waitSignal(window.photo_pane.folder_added, timeout=60_000) as added:
        window.photo_pane.add_folder(folder)
    assert added.args[0].added == 5


def test_ctrl_d_without_clip_lists_identical_and_resized_copies_and_offers_the_model(window, qtbot, tmp_path):
    add(window, qtbot, copies(tmp_path / "photos"))
    qtbot.keyClick(window, Qt.Key.Key_D, Qt.KeyboardModifier.ControlModifier)
    dialog = window.photo_pane.duplicates_dialog
    assert dialog is not None and dialog.isVisible()
    qtbot.waitUntil(lambda: dialog.groups.rowCount() >= 2, timeout=30_000)
    titles = [dialog.groups.item(row, 0).text().split(": ", 1)[1] for row in range(dialog.groups.rowCount())]
    assert sorted(titles) == ["2 photos: identical files", "2 photos: resized or re-encoded copies"], titles
    names = dialog.photo_names()
    assert sorted(names) == ["flower small.jpg", "flower.jpg", "hopper backup.jpg", "hopper.jpg"]
    assert "need the CLIP model" in dialog.summary.text() and not dialog.threshold.isEnabled()

    qtbot.mouseClick(dialog.get_clip_button, Qt.MouseButton.LeftButton)
    models = window.models_dialog
    assert models is not None and models.isVisible() and models.focused_role is Role.CLIP_VISION
    qtbot.waitUntil(lambda: focused(models, Role.CLIP_VISION), timeout=15_000)
    assert "Download" in models.actions(Role.CLIP_VISION).download.text()


def test_words_without_clip_open_models_at_the_text_tower_where_download_is_one_click(hub, window, qtbot):
    pane = window.photo_pane
    qtbot.waitUntil(lambda: pane.clip_problem is not None, timeout=15_000)
    qtbot.keyClicks(pane.search_box, "a cat on a sofa")
    with qtbot.waitSignal(pane.problem, timeout=15_000) as problem:
        qtbot.keyClick(pane.search_box, Qt.Key.Key_Return)
    assert "gallery-app-cli" not in problem.args[0] and "Tiny text tower" in problem.args[0]
    assert pane.status_line.text() == problem.args[0] and pane.get_clip_button.isVisible()

    qtbot.mouseClick(pane.get_clip_button, Qt.MouseButton.LeftButton)
    models = window.models_dialog
    assert models is not None and models.isVisible() and models.focused_role is Role.CLIP_TEXT
    qtbot.waitUntil(lambda: focused(models, Role.CLIP_TEXT), timeout=15_000)
    download = models.actions(Role.CLIP_TEXT).download
    row = next(i for i, state in enumerate(models.states) if state.role is Role.CLIP_TEXT)
    assert models.table.item(row, 1).background().color().alpha() > 0  # the row is marked
    with qtbot.waitSignal(models.job_finished, timeout=30_000) as finished:
        qtbot.mouseClick(download, Qt.MouseButton.LeftButton)  # the one click
    assert finished.args == ["clip-text", READY]
    qtbot.waitUntil(lambda: models.state(Role.CLIP_TEXT).usable, timeout=15_000)


def test_clicking_a_photo_without_clip_offers_the_vision_tower(window, qtbot):
    pane = window.photo_pane
    qtbot.waitUntil(lambda: len(pane.model.photos()) > 0, timeout=15_000)
    index = pane.model.index_of(pane.model.photos()[0].id)
    with qtbot.waitSignal(pane.problem, timeout=15_000) as problem:
        qtbot.mouseClick(pane.view.viewport(), Qt.MouseButton.LeftButton, pos=pane.view.visualRect(index).center())
    assert "vision tower" in problem.args[0] and "gallery-app-cli" not in problem.args[0]
    assert index.data(PhotoGridModel.IdRole) is not None
    qtbot.mouseClick(pane.get_clip_button, Qt.MouseButton.LeftButton)
    assert window.models_dialog.focused_role is Role.CLIP_VISION


def test_add_folder_takes_a_typed_hidden_folder_with_the_choose_button(window, qtbot, tmp_path):
    hidden = copies(tmp_path / "home" / ".photos")
    dialog = window.photo_pane.choose_folder()
    assert dialog.isVisible()
    name = dialog.findChild(QLineEdit, "fileNameEdit")
    choose = dialog.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Open)
    # Pasted: typed key by key into a dialog that is not the active window (offscreen), Qt's own completion
    # rewrites the line with the names it selects on the way.
    name.setText(str(hidden))
    qtbot.waitUntil(choose.isEnabled, timeout=5_000)
    with qtbot.waitSignal(window.photo_pane.folder_added, timeout=60_000) as added:
        qtbot.mouseClick(choose, Qt.MouseButton.LeftButton)
    assert added.args[0].folder == hidden.resolve() and added.args[0].added == 5
