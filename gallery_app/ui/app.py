"""Entry point of the desktop app (``gallery-app``)."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from PySide6.QtCore import QObject, Slot

from gallery_app import __version__


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="gallery-app", description="Your chats and photos, searchable by meaning.")
    parser.add_argument("files", nargs="*", metavar="FILE",
                        help="WhatsApp exports to import, photos to search by, folders to add (as if dropped)")
    parser.add_argument("--version", action="version", version=f"gallery_app {__version__}")
    parser.add_argument("--screenshot", metavar="PNG", help="save a picture of the window once loaded, then quit")
    parser.add_argument("--self-test", action="store_true",
                        help="open the window (offscreen without a display), ask one chat question and run one "
                             "photo search on the demo data in a temporary data folder, print a log, exit 0 if "
                             "everything that can run here passed")
    parser.add_argument("--camera-file", metavar="FILE",
                        help="use this video file instead of the webcam (for tests and computers without a camera)")
    return parser.parse_args(argv)


def configure_services(services, args: argparse.Namespace) -> None:
    """Apply command-line options to the window's services (the camera stand-in, …)."""
    if getattr(args, "camera_file", None):
        from pathlib import Path

        from gallery_app.core.errors import AppError

        camera_file = Path(args.camera_file).expanduser().resolve()
        if not camera_file.is_file():
            raise AppError(f"--camera-file: {camera_file} is not a file.")
        services.camera_file = str(camera_file)


class _StoreAlarm(QObject):
    """Shows the first store failure a job meets; it lives on the GUI thread, so jobs' reports queue to it."""

    shown = False

    @Slot(object)
    def report(self, error) -> None:
        if not self.shown:
            self.shown = True
            store_failure_box(error, self.parent()).open()


def store_failure_box(error, parent=None):
    """A dialog saying why the app cannot use its database and what the person can do about it."""
    from PySide6.QtCore import QUrl
    from PySide6.QtGui import QDesktopServices, Qt
    from PySide6.QtWidgets import QMessageBox

    from gallery_app.core import paths

    box = QMessageBox(QMessageBox.Icon.Critical, "Gallery cannot use its data", error.message,
                      QMessageBox.StandardButton.Close, parent)
    box.setTextFormat(Qt.TextFormat.PlainText)  # a path is data, never markup
    if error.hint:
        box.setInformativeText(error.hint)  # plain text too (the box's format): markup would show as written
    folder = box.addButton("Open data folder", QMessageBox.ButtonRole.ActionRole)
    folder.clicked.connect(
        lambda: QDesktopServices.openUrl(QUrl.fromLocalFile(str(paths.data_dir(create=False)))))
    return box


def start_window(services, *, ask: bool = True):
    """The main window on ``services``, or None when the database cannot be used (said in a dialog if ``ask``).

    A file found damaged later, while the window is open (a bad page read by some job), is reported once.
    """
    from gallery_app.ui.main_window import MainWindow

    failure = services.check_store()
    if failure is not None:
        logging.getLogger(__name__).error("%s", failure)
        if ask:
            store_failure_box(failure).exec()
        return None
    # Listening before the window is built: its panes start jobs as they are made, and a job that meets the
    # damage before a listener exists would report it to no one. The report is queued to this thread, so
    # it runs after the window below exists and has become the dialog's parent.
    alarm = _StoreAlarm()
    services.store_failed.connect(alarm.report)
    window = MainWindow(services)
    alarm.setParent(window)
    window.store_alarm = alarm
    return window


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if args.self_test:
        from gallery_app.ui import self_test

        self_test_data = self_test.prepare_environment()  # before the QApplication: platform and a throw-away data folder
    from PySide6.QtCore import QThreadPool, QTimer
    from PySide6.QtGui import QIcon
    from PySide6.QtWidgets import QApplication

    from gallery_app.core.resources import resources_dir

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("gallery_app")
    app.setApplicationDisplayName("Gallery")
    app.setOrganizationName("gallery_app")
    app.setApplicationVersion(__version__)
    app.setDesktopFileName("gallery-app")
    app.setWindowIcon(QIcon(str(resources_dir() / "icons" / "gallery-app.svg")))
    from gallery_app.ui.services import Services
    from gallery_app.ui.settings import Settings

    settings = Settings.load()
    if not args.self_test:  # the self-test keeps to its throw-away data folder
        settings.apply_data_folder()  # before anything opens the database
    # A damaged or read-only database: said in a dialog (on the console only when nobody is there to read it).
    window = start_window(Services(settings), ask=not (args.self_test or args.screenshot))
    if window is None:
        return 1
    configure_services(window.services, args)
    window.show()
    if args.files:
        from pathlib import Path

        window.open_paths([Path(name).expanduser().resolve() for name in args.files])
    if args.self_test:
        from gallery_app.ui import self_test

        code = self_test.run(window)
        window.close()
        app.processEvents()
        import shutil

        shutil.rmtree(self_test_data, ignore_errors=True)
        return code
    if args.screenshot:
        def capture() -> None:
            window.grab().save(args.screenshot)
            window.close()
            app.quit()

        # Once the demo data is in, a moment for the visible thumbnails to arrive.
        window.demo_ready.connect(lambda _lines: QTimer.singleShot(1500, capture))
    code = app.exec()
    # Workers hold database connections and models: let them finish before the interpreter goes.
    QThreadPool.globalInstance().waitForDone(-1)
    return code


if __name__ == "__main__":
    sys.exit(main())
