"""Byte counts as a person reads them: downloads, files, memory and limits all in one unit system.

Decimal SI units (1 MB = 1,000,000 bytes): model hubs publish download sizes that way and the file
managers of macOS and Linux show files that way, so a size here matches the model card and the models
folder. The binary ``MiB``/``GiB`` are amounts for code that sizes memory the way runtimes allocate it
(llama.cpp reports MiB); they are never printed as units.
"""

from __future__ import annotations

KB = 1000
MB = 1000 * KB
GB = 1000 * MB
MiB = 1024 * 1024
GiB = 1024 * MiB

_SMALLER_UNITS = ((MB, "MB"), (KB, "kB"))


def describe_size(size: int | None) -> str:
    """``size`` bytes in the largest unit that keeps it at 1 or more: "512 bytes", "2.3 MB", "352 MB", "16.0 GB".

    Below 10 of a unit one decimal stays (a 2.3 MB photo is not "2 MB"); gigabytes always keep one,
    because memory sizes that decide what fits differ by tenths.
    """
    if size is None:
        return "size unknown"
    if round(size / GB, 1) >= 1:
        return f"{size / GB:,.1f} GB"
    # Units are compared after rounding, so 999,960 bytes is "1.0 MB", not "1,000 kB".
    for unit, name in _SMALLER_UNITS:
        value = size / unit
        if round(value, 1) >= 1:
            return f"{value:.1f} {name}" if round(value, 1) < 10 else f"{value:,.0f} {name}"
    return "1 byte" if size == 1 else f"{size:,} bytes"
