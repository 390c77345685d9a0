"""The bundle's entry point (PyInstaller runs this file as __main__)."""

import multiprocessing
import sys

from gallery_app.ui.app import main

if __name__ == "__main__":
    # The language model runs in a spawned child process; in a bundle that child is this executable.
    multiprocessing.freeze_support()
    sys.exit(main())
