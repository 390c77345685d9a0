"""gallery-app-cli photos: add, list, search, similar, query-image --add, duplicates, bundles."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from gallery_app.cli import main
from tests.unit.test_photo_decode import EXPECTED_SKIPS, META, PHOTOS

pytestmark = [pytest.mark.e2e, pytest.mark.filterwarnings("ignore::UserWarning")]
DEMO = Path(__file__).resolve().parents[2] / "resources" / "demo" / "photos"


def photo_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if re.match(r"^\s+-?\d\.\d{3}\s+#\d+", line)]


@pytest.mark.shared_fixtures
def test_add_reports_skipped_files_and_exits_zero_then_list_shows_one_line_per_photo(test_clip, capsys):
    assert main(["photos", "add", str(PHOTOS)]) == 0
    out, _ = capsys.readouterr()
    assert f"{len(META)} photos found" in out and f"{len(META) - len(EXPECTED_SKIPS)} added" in out
    assert "5 skipped (2 truncated, 1 corrupt, 1 empty, 1 too many pixels)" in out
    for name, reason in EXPECTED_SKIPS.items():
        assert f"skipped ({reason}): {PHOTOS / name}" in out

    assert main(["photos", "add", str(PHOTOS)]) == 0
    assert f"{len(META) - len(EXPECTED_SKIPS)} unchanged" in capsys.readouterr().out

    assert main(["photos", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(META) - len(EXPECTED_SKIPS)
    assert any("Apple iPhone 13 Pro" in line and line.endswith("pug.heic") for line in lines)


@pytest.mark.shared_fixtures
def test_search_similar_and_query_image_with_add(test_clip, capsys, tmp_path):
    folder = tmp_path / "demo"
    shutil.copytree(DEMO, folder)
    main(["photos", "add", str(folder)])
    capsys.readouterr()

    assert main(["photos", "search", "a cat", "-k", "3"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("3 results in ") and len(photo_lines(out)) == 3

    assert main(["photos", "similar", str(folder / "chelsea.png")]) == 0
    out = capsys.readouterr().out
    assert len(photo_lines(out)) == 6 and "chelsea.png" not in out.split("\n", 1)[1]

    upload = tmp_path / "new.jpg"
    shutil.copy(PHOTOS / "pillow" / "hopper.jpg", upload)
    assert main(["photos", "query-image", str(upload), "--add", "-k", "1"]) == 0
    out = capsys.readouterr().out
    assert "added new.jpg to your gallery" in out
    assert re.search(r"^\s+1\.000\s+#8\s", out, re.M)  # itself, at similarity 1
    main(["photos", "list"])
    assert len(capsys.readouterr().out.splitlines()) == 8

    assert main(["photos", "duplicates", "--threshold", "0.9999"]) == 0
    assert main(["photos", "similar", "#999"]) == 1
    assert "There is no photo #999" in capsys.readouterr().err


def test_photo_commands_say_what_is_missing_without_a_clip_model(capsys, tmp_path):
    assert main(["photos", "search", "a cat"]) == 1
    err = capsys.readouterr().err
    assert "CLIP" in err and "models fetch" in err
    assert main(["photos", "add", str(DEMO)]) == 0  # kept, searchable once the model is there
    captured = capsys.readouterr()
    assert "7 added" in captured.out and "become searchable" in captured.err


@pytest.mark.shared_fixtures
def test_duplicates_without_a_clip_model_finds_identical_and_resized_copies(capsys, tmp_path):
    """Before: `photos duplicates` stopped with "needs the CLIP model" and found nothing."""
    from PIL import Image

    folder = tmp_path / "photos"
    folder.mkdir()
    for name in ("hopper.jpg", "flower.jpg", "pil_sample_rgb.jpg"):
        shutil.copy(PHOTOS / "pillow" / name, folder / name)
    shutil.copy(PHOTOS / "pillow" / "hopper.jpg", folder / "hopper backup.jpg")
    with Image.open(PHOTOS / "pillow" / "flower.jpg") as image:
        image.resize((image.width // 2, image.height // 2)).save(folder / "flower small.jpg", quality=70)
    assert main(["photos", "add", str(folder)]) == 0
    capsys.readouterr()
    assert main(["photos", "duplicates"]) == 0
    captured = capsys.readouterr()
    assert "only identical files and resized or re-encoded copies are found" in captured.err
    groups = re.split(r"^Group \d+: ", captured.out, flags=re.M)[1:]
    assert len(groups) == 2, captured.out
    by_title = {group.splitlines()[0]: {Path(line.split(None, 1)[1]).name for line in group.splitlines()[1:]}
                for group in groups}
    assert by_title == {"2 photos: identical files": {"hopper.jpg", "hopper backup.jpg"},
                        "2 photos: resized or re-encoded copies": {"flower.jpg", "flower small.jpg"}}
