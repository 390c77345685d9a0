"""One way to write a size: decimal units, the largest that keeps the number at 1 or more."""

from __future__ import annotations

import pytest

from gallery_app.core.units import GB, MB, GiB, MiB, describe_size


@pytest.mark.parametrize(("size", "text"), [
    (1, "1 byte"),
    (512, "512 bytes"),
    (1_500, "1.5 kB"),
    (300_000, "300 kB"),
    (999_960, "1.0 MB"),  # rounded into the next unit, not "1,000 kB"
    (2_345_678, "2.3 MB"),
    (351_685_709, "352 MB"),
    (100 * MB, "100 MB"),
    (2_489_894_016, "2.5 GB"),
    (16 * GB, "16.0 GB"),
])
def test_sizes_are_written_in_decimal_units(size, text):
    assert describe_size(size) == text


def test_binary_amounts_are_written_in_the_same_decimal_units():
    assert describe_size(MiB) == "1.0 MB"
    assert describe_size(16 * GiB) == "17.2 GB"


def test_an_unknown_size_says_so():
    assert describe_size(None) == "size unknown"
