"""gallery-app-cli on a damaged or unwritable data folder, run as a person runs it: a message, never a traceback.

Every command leaves the database (and its write-ahead log, if there is one) byte for byte as it was.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from gallery_app.core.paths import DATABASE_FILENAME
from tests.chat_helpers import DEMO_CHAT, REPO
from tests.store_damage import (
    READING_COMMANDS,
    copy_store,
    fingerprint,
    garble_table,
    run_bound_by_permissions,
    truncate,
    with_unfinished_log,
)

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
IMPORT = ["chat", "import", str(DEMO_CHAT), "--embedder", "all-minilm-l6-v2-int8"]


@pytest.fixture(scope="module")
def healthy(demo_store, tmp_path_factory) -> Path:
    """The demo chat imported with MiniLM (so `chat ask` reads real passages), as a closed file."""
    return copy_store(demo_store, tmp_path_factory.mktemp("healthy"))


@pytest.fixture
def folder(tmp_path):
    """A data folder and a models folder; made writable again afterwards, so pytest can remove them."""
    (tmp_path / "data").mkdir()
    (tmp_path / "models").mkdir()
    yield tmp_path
    for path in [tmp_path, *tmp_path.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)


def cli(base: Path, args: list[str], *, data: Path | None = None):
    env = {**os.environ, "GALLERY_APP_DATA_DIR": str(data or base / "data"),
           "GALLERY_APP_MODELS_DIR": str(base / "models")}
    return run_bound_by_permissions([sys.executable, "-m", "gallery_app.cli", *args], cwd=REPO, env=env)


def assert_refused(done, *expected: str) -> None:
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "apsw." not in done.stderr, done.stderr
    for text in expected:
        assert text in done.stdout + done.stderr, done.stderr


def damage(healthy: Path, data: Path, how: str) -> Path:
    db = data / DATABASE_FILENAME
    if how == "unfinished log, damaged page":
        with_unfinished_log(healthy, data)
        garble_table(db, "messages")
        return db
    shutil.copyfile(healthy, db)
    if how == "cut in half":
        truncate(db, db.stat().st_size // 2)
    elif how == "cut inside the header":
        truncate(db, 60)
    elif how == "damaged page":
        garble_table(db, "messages")
    elif how == "not a database":
        db.write_bytes(b"%PDF-1.4 certainly not a database\n" * 100)
    return db


@pytest.mark.parametrize("how, commands", [
    ("cut in half", [*READING_COMMANDS, IMPORT]),
    # These fail where the one above does, when the file is opened: fewer commands say as much.
    ("cut inside the header", [["doctor"], ["chat", "list"], IMPORT]),
    ("not a database", [["doctor"], ["photos", "list"], IMPORT]),
])
def test_a_damaged_file_is_named_by_every_command_and_never_written(healthy, folder, how, commands):
    """Before: apsw.CorruptError traceback from every command, doctor included."""
    db = damage(healthy, folder / "data", how)
    before = fingerprint(folder / "data")
    for args in commands:
        done = cli(folder, args)
        assert_refused(done, f"The database {db}", "Nothing was changed", "GALLERY_APP_DATA_DIR=")
        assert fingerprint(folder / "data") == before, args


@pytest.mark.parametrize("how", ["damaged page", "unfinished log, damaged page"])
def test_a_damaged_page_is_found_by_doctor_and_by_the_commands_that_read_it(healthy, folder, how):
    """Before: doctor said "Everything the app needs works"; chat list and ask ended in apsw.CorruptError."""
    db = damage(healthy, folder / "data", how)
    before = fingerprint(folder / "data")
    doctor = cli(folder, ["doctor"])
    assert_refused(doctor, "BROKEN", f"The database {db} is damaged", "Nothing was changed")
    assert "Everything the app needs works" not in doctor.stdout
    assert fingerprint(folder / "data") == before
    for args in [["chat", "list"], READING_COMMANDS[2], IMPORT]:
        assert_refused(cli(folder, args), f"The database {db} is damaged", "Nothing was changed")
        assert fingerprint(folder / "data") == before, args
    if how == "damaged page":
        # The photos do not pass through the damaged page: listing them still works, and writes nothing.
        photos = cli(folder, ["photos", "list"])
        assert photos.returncode == 0 and "No photos yet" in photos.stdout
        assert fingerprint(folder / "data") == before


def test_doctor_passes_a_healthy_store_after_checking_every_page(healthy, folder):
    shutil.copyfile(healthy, folder / "data" / DATABASE_FILENAME)
    done = cli(folder, ["doctor"])
    assert "integrity check passed" in done.stdout, done.stdout + done.stderr


@pytest.fixture
def permissions_bind(folder):
    """Skip only where no way was found to make a chmod stop the CLI (root, and capabilities cannot be dropped)."""
    locked = folder / "locked"
    locked.mkdir(mode=0o555)
    try:
        probe = run_bound_by_permissions([sys.executable, "-c", f"open({str(locked / 'x')!r}, 'w')"])
    except OSError as exc:
        pytest.skip(f"running as root and the capabilities cannot be dropped here ({exc}): chmod cannot bind")
    if probe.returncode == 0:
        pytest.skip("a folder made read-only with chmod can still be written here, so the case cannot be set up")


@pytest.mark.usefixtures("permissions_bind")
def test_a_read_only_data_folder_is_read_and_a_write_is_refused_by_name(healthy, folder):
    """Before: apsw.ReadOnlyError traceback (apsw.CantOpenError on a first start); then every command refused,
    reading ones too (issue 23: SQLite can read the file as it lies)."""
    data = folder / "data"
    shutil.copyfile(healthy, data / DATABASE_FILENAME)
    data.chmod(0o555)
    before = fingerprint(data)
    listing = cli(folder, ["chat", "list"])
    assert listing.returncode == 0 and "Weekend away" in listing.stdout, listing.stderr
    photos = cli(folder, ["photos", "list"])
    assert photos.returncode == 0, photos.stderr
    asked = cli(folder, READING_COMMANDS[2])
    assert asked.returncode == 0 and "Found" in asked.stdout, asked.stderr
    for args in [["doctor"], IMPORT]:
        done = cli(folder, args)
        assert_refused(done, f"The data folder {data} is read-only", "Nothing was changed", "GALLERY_APP_DATA_DIR=")
        assert fingerprint(data) == before, args
    assert fingerprint(data) == before
    assert sorted(p.name for p in data.iterdir()) == [DATABASE_FILENAME]


@pytest.mark.usefixtures("permissions_bind")
def test_a_read_only_database_can_be_read_but_a_write_is_refused(healthy, folder):
    """Before: chat import ended in apsw.ReadOnlyError; doctor said everything works."""
    data = folder / "data"
    db = data / DATABASE_FILENAME
    shutil.copyfile(healthy, db)
    db.chmod(0o444)
    before = fingerprint(data)
    listing = cli(folder, ["chat", "list"])
    assert listing.returncode == 0 and "Weekend away" in listing.stdout, listing.stderr
    # The read left SQLite's -wal and -shm files beside it, read-only like the database: named too.
    assert_refused(cli(folder, IMPORT), f"{db}, {db}-wal, {db}-shm are read-only", "Nothing was changed")
    assert_refused(cli(folder, ["doctor"]), f"The database {db} is read-only")
    assert fingerprint(data) == before


def test_a_data_folder_that_cannot_be_created_is_named(folder):
    """Before: NotADirectoryError traceback. A file where a folder should be stops root as well."""
    blocker = folder / "data" / "notes.txt"
    blocker.write_text("a file, not a folder")
    for args in [["doctor"], ["chat", "list"], ["photos", "list"]]:
        assert_refused(cli(folder, args, data=blocker / "gallery"), f"The data folder {blocker / 'gallery'} cannot "
                                                                     "be created", "GALLERY_APP_DATA_DIR=")
