"""`gallery-app --self-test` from source (with and without a CLIP model) and, once built, from the bundle."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BUNDLE = REPO / "dist" / "gallery-app" / "gallery-app"

pytestmark = [pytest.mark.slow, pytest.mark.e2e, pytest.mark.timeout(600)]


def run_self_test(command: list[str], models_dir: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "GALLERY_APP_DATA_DIR")}
    env.update(GALLERY_APP_MODELS_DIR=str(models_dir), XDG_CONFIG_HOME=str(tmp_path / "config"),
               HOME=str(tmp_path / "home"))
    return subprocess.run(command + ["--self-test"], env=env, capture_output=True, text=True, timeout=540)


def log_of(done: subprocess.CompletedProcess) -> str:
    return "\n".join(line for line in done.stdout.splitlines() if line.startswith("self-test:"))


def test_self_test_from_source_without_clip_runs_the_chat_and_says_why_photos_were_skipped(tmp_path):
    done = run_self_test([sys.executable, "-m", "gallery_app.ui.app"], tmp_path / "models", tmp_path)
    log = log_of(done)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "window: PASS" in log and "chat: PASS" in log
    assert "licences: PASS" in log and "from their metadata" in log
    assert "photos: SKIP" in log and "CLIP" in log and "7 photos recorded" in log
    assert log.splitlines()[-1] == "self-test: OK"


def test_self_test_from_source_with_a_clip_model_searches_the_photos(tmp_path, test_clip_folder):
    folder, _weights = test_clip_folder  # CLIP-shaped test towers: meaningless vectors, real pipeline
    done = run_self_test([sys.executable, "-m", "gallery_app.ui.app"], folder, tmp_path)
    log = log_of(done)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "photos: PASS" in log and "results in" in log and "top hit" in log


@pytest.mark.skipif(not BUNDLE.is_file(), reason="no bundle: run `make package` first")
def test_the_bundle_passes_its_self_test(tmp_path):
    done = run_self_test([str(BUNDLE)], tmp_path / "models", tmp_path)
    log = log_of(done)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "(bundle," in log and "chat: PASS" in log
    assert "licences: PASS" in log and "written into the bundle" in log
