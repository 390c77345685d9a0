"""Entry point of the desktop app (``gallery-app``)."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from gallery_app import __version__


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="gallery-app", description="Your chats and photos, searchable by meaning.")
    parser.add_argument("--version", action="version", version=f"gallery_app {__version__}")
    parser.add_argument("--screenshot", metavar="PNG", help="save a picture of the window once loaded, then quit")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    from PySide6.QtCore import QTimer
    from PySide6.QtGui import QIcon
    from PySide6.QtWidgets import QApplication

    from gallery_app.core.resources import resources_dir

    from gallery_app.ui.main_window import MainWindow

    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("gallery_app")
    app.setApplicationDisplayName("Gallery")
    app.setOrganizationName("gallery_app")
    app.setApplicationVersion(__version__)
    app.setDesktopFileName("gallery-app")
    app.setWindowIcon(QIcon(str(resources_dir() / "icons" / "gallery-app.svg")))
    window = MainWindow()
    window.show()
    if args.screenshot:
        def capture() -> None:
            window.grab().save(args.screenshot)
            window.close()
            app.quit()

        # Long enough for the model check and the visible thumbnails to arrive.
        QTimer.singleShot(2500, capture)
    return app.exec()


if __name__ == "__main__":
    sys.exit(main())
