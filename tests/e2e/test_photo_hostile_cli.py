"""`gallery-app-cli photos add` in a subprocess against hostile folders: no hang, no traceback, no runaway memory."""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from PIL import Image

from tests.chat_photo_exports import png_claiming

pytestmark = [pytest.mark.e2e, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "resources" / "demo" / "photos"
CAFE = os.fsdecode(b"caf\xe9.jpg")  # Latin-1 bytes on disk, not UTF-8: decodes with a lone surrogate
#: The child gets this much address space, so a regression fails with MemoryError instead of taking the machine's
#: memory (16 GB for a 60,000×1 PNG before the aspect fix); glibc's per-thread arenas are capped below so that the
#: address space ONNX Runtime's threads reserve does not grow with the number of cores.
ADDRESS_SPACE = 8 * 1024**3


@dataclass
class Run:
    code: int
    out: str
    err: str
    max_rss_mb: float
    cpu_seconds: float


def _peak_rss_mb(pid: int) -> float | None:
    """The high-water mark of the process's current memory image (VmHWM starts afresh at exec)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return None


def run_cli(*args: str | bytes, timeout: float = 120) -> Run:
    """One `gallery-app-cli` run with its own peak memory and CPU time.

    Peak memory is polled from /proc, not taken from wait4: a child forked from this (large) pytest process
    carries the parent's pages until exec, and the kernel folds that into the child's ru_maxrss (866 MB was
    seen in a full run for a CLI whose own peak is 115 MB).
    """
    def limit_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))

    with open(os.devnull, "rb") as stdin, tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        child = subprocess.Popen([sys.executable, "-m", "gallery_app.cli", *args], stdin=stdin, stdout=out,
                                 stderr=err, cwd=REPO, preexec_fn=limit_memory,
                                 env={**os.environ, "MALLOC_ARENA_MAX": "2"})
        deadline = time.monotonic() + timeout
        peak_mb = 0.0
        while True:
            peak_mb = max(peak_mb, _peak_rss_mb(child.pid) or 0.0)
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                child.kill()
                os.wait4(child.pid, 0)
                child.returncode = -9
                out.seek(0)
                pytest.fail(f"gallery-app-cli {args} still running after {timeout:.0f} s; output so far:\n"
                            f"{out.read().decode(errors='replace')}")
            time.sleep(0.05)
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Run(child.returncode, out.read().decode("utf-8"), err.read().decode("utf-8"),
                   peak_mb, usage.ru_utime + usage.ru_stime)


def demo_photos(folder: Path, count: int) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    photos = sorted(p for p in DEMO.iterdir() if p.suffix in (".png", ".jpg"))[:count]
    return [Path(shutil.copy(p, folder / p.name)) for p in photos]


def test_extreme_aspect_ratios_are_indexed_in_small_memory_and_time(test_clip, tmp_path):
    folder = tmp_path / "strips"
    demo_photos(folder, 1)
    for width, height in ((1, 20_000), (1, 2_000_000), (60_000, 1)):
        Image.new("RGB", (width, height), (10, 200, 30)).save(folder / f"strip-{width}x{height}.png")

    run = run_cli("photos", "add", str(folder))

    assert run.code == 0, run.err
    assert "4 photos found" in run.out and "4 added" in run.out, run.out
    assert "Traceback" not in run.err
    # Before: 26 s and 4.2 GB for the 1×20,000 strip alone; MemoryError for 1×2,000,000; 16 GB for 60,000×1.
    assert run.max_rss_mb < 800, f"peak memory {run.max_rss_mb:.0f} MB"
    assert run.cpu_seconds < 30, f"{run.cpu_seconds:.1f} s of CPU"
    listed = run_cli("photos", "list").out
    assert "1×2000000" in listed and "60000×1" in listed


def test_a_fifo_and_a_device_named_like_photos_are_skipped_not_read(test_clip, tmp_path):
    folder = tmp_path / "pipes"
    demo_photos(folder, 1)
    os.mkfifo(folder / "fifo.jpg")
    (folder / "zero.jpg").symlink_to("/dev/zero")  # reading it would never end
    shutil.copy(DEMO / "coffee.png", tmp_path / "elsewhere.png")
    (folder / "linked.png").symlink_to(tmp_path / "elsewhere.png")  # a link to a photo is still a photo

    run = run_cli("photos", "add", str(folder), timeout=60)  # before: hung forever on fifo.jpg

    assert run.code == 0, run.err
    assert "4 photos found" in run.out and "2 added" in run.out and "2 skipped (2 unsupported)" in run.out, run.out
    assert f"skipped (unsupported): {folder / 'fifo.jpg'}" in run.out
    assert "not a regular file" in run.out


def test_a_file_name_that_is_not_utf8_is_indexed_listed_and_kept_incremental(test_clip, tmp_path):
    folder = tmp_path / "names"
    first, *_ = demo_photos(folder, 4)
    cafe = os.fsencode(folder) + b"/caf\xe9.jpg"
    os.rename(first, cafe)  # a photo copied from an old Latin-1 camera card or a Windows zip

    run = run_cli("photos", "add", str(folder))  # before: UnicodeEncodeError, the whole batch rolled back
    assert run.code == 0, run.err
    assert "4 photos found" in run.out and "4 added" in run.out, run.out

    listed = run_cli("photos", "list")
    assert listed.code == 0, listed.err
    assert len(listed.out.splitlines()) == 4
    assert sum(line.endswith("caf\\xe9.jpg") for line in listed.out.splitlines()) == 1, listed.out

    again = run_cli("photos", "add", str(folder))
    assert "4 unchanged" in again.out and "added" in again.out and " 0 added" in again.out, again.out

    similar = run_cli("photos", "similar", cafe, "-k", "1")  # the raw bytes, as a shell passes them
    assert similar.code == 0, similar.err
    assert similar.out.startswith("1 results in ") and "caf\\xe9" not in similar.out  # never itself

    os.unlink(cafe)
    gone = run_cli("photos", "add", str(folder))
    assert "1 removed" in gone.out and "3 unchanged" in gone.out, gone.out
    assert len(run_cli("photos", "list").out.splitlines()) == 3


def test_pillows_raw_bomb_warning_never_reaches_the_terminal(test_clip, tmp_path):
    folder = tmp_path / "bombs"
    demo_photos(folder, 1)
    (folder / "wide.png").write_bytes(png_claiming(9_500, 9_500))  # above Pillow's warning limit, below ours and its error
    (folder / "huge.png").write_bytes(png_claiming(12_000, 12_000))  # above ours: skipped before any pixel is decoded

    run = run_cli("photos", "add", str(folder))

    assert run.code == 0, run.err
    assert "DecompressionBomb" not in run.err and "Warning" not in run.err, run.err
    assert "2 skipped (" in run.out and "1 truncated" in run.out and "1 too many pixels" in run.out, run.out
    assert "12000×12000 is more than the 100,000,000 pixels allowed" in run.out


@pytest.mark.parametrize("threshold", ["-1", "0", "1.5", "nan", "lots"])
def test_duplicates_refuses_a_threshold_that_is_not_a_similarity(threshold, capsys):
    from gallery_app.cli import main

    with pytest.raises(SystemExit) as exited:  # argparse's usage error, before any store is opened
        main(["photos", "duplicates", "--threshold", threshold])
    assert exited.value.code == 2
    assert f"{threshold} is not a similarity between 0 and 1" in capsys.readouterr().err
