"""The bundle's entry point (PyInstaller runs this file as __main__)."""

import sys

from gallery_app.ui.app import main

if __name__ == "__main__":
    sys.exit(main())
