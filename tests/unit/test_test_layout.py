"""pytest imports test files by basename (no packages under tests/), so two files with one name in
different folders stop the whole run at collection, which only shows when every folder runs together."""

from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_every_test_file_name_is_unique_across_the_suite():
    names = Counter(path.name for path in TESTS.rglob("test_*.py"))
    assert [name for name, count in names.items() if count > 1] == []
