"""The team's acceptance check for title-slug; run with pytest from the workspace. All tests must pass."""

from pathlib import Path

SLUG = Path("output/slug.txt")


def test_slug_file_exists():
    assert SLUG.is_file()


def test_slug_value():
    assert SLUG.read_text().strip() == "hello-world-2026"


def test_slug_is_lowercase_ascii_without_spaces():
    text = SLUG.read_text().strip()
    assert text == text.lower() and text.isascii() and " " not in text
