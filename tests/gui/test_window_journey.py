"""One person's session in the real window: the demo chat answers a question and a follow-up, then the
photo half is searched by words, by a tap, by an uploaded photo and by the camera (a video file)."""

from __future__ import annotations

import re

from PIL import Image
from PySide6.QtCore import QSettings, Qt

from gallery_app.core import resources
from gallery_app.core.chat.events import Answer
from gallery_app.ui.main_window import MODELS_OFFERED_KEY, MainWindow
from gallery_app.ui.photos.grid_model import PhotoGridModel
from gallery_app.ui.services import Services
from gallery_app.ui.settings import Settings
from tests.gui.test_camera import coffee_video  # noqa: F401  (session fixture: a video of coffee.png)
from tests.gui.test_chat_pane import ask_and_record, turns, wait_idle

LONG = 120_000


def test_a_session_in_the_real_window(qtbot, test_clip, coffee_video, tmp_path):  # noqa: F811
    QSettings().setValue(MODELS_OFFERED_KEY, True)
    services = Services(Settings(text_embedder="all-minilm-l6-v2-int8", answer_tokens=48))
    window = MainWindow(services)
    qtbot.addWidget(window)
    with qtbot.waitSignals([window.demo_ready, window.models_checked], timeout=LONG):
        window.show()
    try:
        # Chats: passages first, then the streamed answer with the right name, then a follow-up.
        chat = window.chat_pane
        events = ask_and_record(chat, qtbot, "Who ended up paying for the hotel?")
        names = [name for name, _shown, _event in events]
        assert names.index("MatchesFound") < names.index("AnswerPiece")
        answer = events[-1][2]
        assert isinstance(answer, Answer) and "Daniel" in answer.text, answer.text
        follow_up = ask_and_record(chat, qtbot, "How much was it?")
        assert isinstance(follow_up[-1][2], Answer) and follow_up[-1][2].text
        assert len(turns(chat, "passages")) == 2

        # Photos: words, a tap, an upload, the camera.
        window.tabs.setCurrentWidget(window.photo_pane)
        photos = window.photo_pane
        qtbot.waitUntil(lambda: photos.model.total == len(resources.demo_photo_files()), timeout=20_000)
        with qtbot.waitSignal(photos.results_shown, timeout=LONG):
            qtbot.keyClicks(photos.search_box, "a cat on a sofa")
            qtbot.keyClick(photos.search_box, Qt.Key.Key_Return)
        assert re.match(r"\d+ results in \d+ ms", photos.status_line.text()), photos.status_line.text()

        index = photos.model.index(0)
        tapped = index.data(PhotoGridModel.IdRole)
        with qtbot.waitSignal(photos.results_shown, timeout=LONG):
            qtbot.mouseClick(photos.view.viewport(), Qt.MouseButton.LeftButton,
                             pos=photos.view.visualRect(index).center())
        shown = [photos.model.index(row).data(PhotoGridModel.IdRole) for row in range(photos.model.rowCount())]
        assert tapped not in shown and shown

        before = photos.model.total
        upload = tmp_path / "sunset.png"
        Image.linear_gradient("L").convert("RGB").resize((320, 240)).save(upload)
        window.open_paths([upload])  # what dropping the file on the window does
        qtbot.waitUntil(lambda: photos.model.total == before + 1, timeout=LONG)
        qtbot.waitUntil(lambda: photos.header.text() == f"{before + 1} photos", timeout=10_000)

        services.camera_file = str(coffee_video)
        dialog = photos.open_camera()
        with qtbot.waitSignal(dialog.first_frame, timeout=30_000):
            pass
        with qtbot.waitSignal(photos.results_shown, timeout=LONG) as found:
            qtbot.mouseClick(dialog.capture_button, Qt.MouseButton.LeftButton)
        assert found.args[0].hits[0].photo.name == "coffee.png"
    finally:
        wait_idle(window.chat_pane, qtbot)
        window.close()
