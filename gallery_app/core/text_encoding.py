"""Telling UTF-16 written without a byte-order mark from other bytes: for chat exports and notes alike."""

from __future__ import annotations

#: Bytes looked at: enough for the NUL pattern, little for a big file.
SAMPLE_BYTES = 8192


def utf16_without_bom(raw: bytes) -> str | None:
    """"utf-16-le" / "utf-16-be" when ``raw`` reads as UTF-16 with no BOM, else None.

    Latin text in UTF-16 LE is "A\\0B\\0": NULs at odd offsets; BE the other way round. Text in other
    scripts has fewer NULs, but still far more on one side than on the other; a binary file has them on
    both sides.
    """
    sample = raw[:SAMPLE_BYTES]
    pairs = len(sample) // 2
    if pairs < 4:
        return None
    even_nuls = sample[0:pairs * 2:2].count(0)
    odd_nuls = sample[1:pairs * 2:2].count(0)
    if odd_nuls >= 0.3 * pairs and even_nuls <= 0.05 * pairs:
        return "utf-16-le"
    if even_nuls >= 0.3 * pairs and odd_nuls <= 0.05 * pairs:
        return "utf-16-be"
    return None
