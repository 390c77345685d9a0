"""Camera search: a video file stands in for the webcam and is decoded by QtMultimedia itself.

The video shows a demo photo; the test CLIP tower's vector is the colour of the picture, so the
photo comes back first at similarity ≈ 1 only if the frame's channel order (Format_RGB32 is B,G,R,X
in memory on little-endian machines) is read as it really is.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from PySide6.QtCore import QSize, Qt
from PySide6.QtMultimedia import QMediaDevices, QVideoFrameFormat

from gallery_app.core.photos.indexer import PhotoIndexer
from gallery_app.core.photos.pixels import PixelBuffer, PixelLayout
from gallery_app.core.store import open_store
from gallery_app.ui.photos import PhotoPane, jobs
from gallery_app.ui.photos.camera import NO_CAMERA, pick_camera_format
from gallery_app.ui.qt_pixels import pixel_buffer_from_qimage

DEMO = Path(__file__).resolve().parents[2] / "resources" / "demo" / "photos"

# Written in a child process: PyAV brings its own FFmpeg libraries, QtMultimedia loads another.
_WRITE_VIDEO = """
import sys, av
from PIL import Image
source, target = sys.argv[1], sys.argv[2]
image = Image.open(source).convert("RGB").resize((300, 200))  # the photo's own 3:2 aspect
out = av.open(target, "w")
stream = out.add_stream("libx264", rate=10)
stream.width, stream.height, stream.pix_fmt = 300, 200, "yuv420p"
stream.options = {"crf": "12"}
for _ in range(30):
    for packet in stream.encode(av.VideoFrame.from_image(image)):
        out.mux(packet)
for packet in stream.encode():
    out.mux(packet)
out.close()
"""


@pytest.fixture(scope="session")
def coffee_video(tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("video") / "coffee.mp4"
    subprocess.run([sys.executable, "-c", _WRITE_VIDEO, str(DEMO / "coffee.png"), str(target)],
                   check=True, timeout=60)
    return target


@pytest.fixture
def pane(qtbot, services):
    pane = PhotoPane(services)
    qtbot.addWidget(pane)
    pane.show()
    yield pane
    pane.shutdown()


@pytest.fixture
def indexed_demo(test_clip, tmp_path):
    folder = tmp_path / "demo"
    shutil.copytree(DEMO, folder, ignore=shutil.ignore_patterns("*.md", "*.json"))
    conn = open_store()
    PhotoIndexer(conn, test_clip[0], workers=2).add_folder(folder)
    conn.close()
    return folder


def test_camera_search_from_a_video_file_finds_the_photo_it_shows(indexed_demo, services, coffee_video, qtbot):
    services.camera_file = str(coffee_video)
    pane = PhotoPane(services)
    qtbot.addWidget(pane)
    pane.show()
    try:
        qtbot.waitUntil(lambda: pane.model.total > 0, timeout=10_000)
        before = pane.model.total
        dialog = pane.open_camera()
        with qtbot.waitSignal(dialog.first_frame, timeout=20_000):
            pass
        assert dialog.capture_button.isEnabled()
        frame = dialog.current_image()
        print(f"camera frames arrive as {frame.format().name} {frame.width()}x{frame.height()}")

        with qtbot.waitSignal(pane.results_shown, timeout=20_000) as shown:
            qtbot.mouseClick(dialog.capture_button, Qt.MouseButton.LeftButton)
        results = shown.args[0]
        top = results.hits[0]
        assert top.photo.name == "coffee.png", [(h.photo.name, round(h.similarity, 4)) for h in results.hits]
        print(f"top hit {top.photo.name} at similarity {top.similarity:.5f}")
        assert top.similarity > 0.99
        assert results.added is None and pane.model.total == before
        assert not dialog.isVisible()  # closed after the search, media stopped

        # The trap this guards against: the same bytes read in the wrong channel order rank differently.
        right = pixel_buffer_from_qimage(frame)
        if right.layout in (PixelLayout.BGRX8888, PixelLayout.BGRA8888):
            wrong = PixelBuffer(right.data, right.width, right.height, PixelLayout.RGBX8888, right.stride)
            misread = jobs.search_pixels(None, services, wrong, False)
            assert misread.hits[0].photo.name != "coffee.png" or misread.hits[0].similarity < top.similarity

        # Again, keeping the capture: the gallery gains one photo.
        dialog = pane.open_camera()
        with qtbot.waitSignal(dialog.first_frame, timeout=20_000):
            pass
        dialog.keep.setChecked(True)
        with qtbot.waitSignals([pane.results_shown, pane.count_changed], timeout=20_000, order="none"):
            dialog.capture()
        kept = dialog.last_results
        assert kept.added is not None and kept.added.source == "camera"
        qtbot.waitUntil(lambda: pane.header.text() == f"{before + 1} photos", timeout=10_000)
    finally:
        pane.shutdown()


def test_no_camera_and_no_video_file_is_a_message_not_a_crash(pane, services, qtbot):
    if QMediaDevices.videoInputs():
        pytest.skip("this machine has a camera")
    dialog = pane.open_camera()
    assert dialog.message.text() == NO_CAMERA
    assert not dialog.capture_button.isEnabled()
    dialog.capture()  # nothing to capture: still a message
    assert "No picture" in dialog.message.text()
    dialog.close()

    services.camera_file = "/nowhere/video.mp4"
    dialog = pane.open_camera()
    assert "is not there" in dialog.message.text()
    dialog.close()


def _format(width: int, height: int, fps: float, jpeg: bool = False):
    pixel = QVideoFrameFormat.PixelFormat.Format_Jpeg if jpeg else QVideoFrameFormat.PixelFormat.Format_YUYV
    return SimpleNamespace(resolution=lambda: QSize(width, height), maxFrameRate=lambda: fps,
                           pixelFormat=lambda: pixel, name=f"{width}x{height}@{fps}{' jpeg' if jpeg else ''}")


def test_the_capture_format_is_the_best_one_within_1024x768():
    formats = [_format(1920, 1080, 30), _format(1280, 720, 30), _format(1024, 768, 15, jpeg=True),
               _format(1024, 768, 15), _format(640, 480, 30), _format(320, 240, 60)]
    assert pick_camera_format(formats).name == "1024x768@15"
    assert pick_camera_format([_format(1920, 1080, 30), _format(1280, 960, 30)]).name == "1280x960@30"
    assert pick_camera_format([]) is None
