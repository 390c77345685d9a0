"""Small JSON files the app keeps beside its data (chosen models, files pointed at, checksum verdicts).

Written whole to a temporary file and renamed over the old one, so a crash or a second process
never leaves half a file; a missing or unreadable file reads as empty.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def read_json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def write_json(path: Path, value: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    temporary.write_text(json.dumps(value, indent=1, sort_keys=True), "utf-8")
    os.replace(temporary, path)
