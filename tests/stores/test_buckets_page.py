"""Meta/Buckets.md: read, added to without duplicates, a forgotten bucket's section removed."""

from pathlib import Path

from stores.meta import BucketsPage, bucket_key
from stores.vault import Vault


def test_the_page_is_read_added_to_once_and_a_section_removed(tmp_path: Path) -> None:
    page = BucketsPage(Vault(tmp_path))
    assert page.read() == {} and not page.path.exists()
    assert page.add({"Home Lab": "NAS and backups.", "Tidepool": "The tide app."}) == 2
    assert page.read() == {"Home Lab": "NAS and backups.", "Tidepool": "The tide app."}
    # A name already listed, in any spelling, is not added again.
    assert page.add({"home_lab": "Again.", "Sourdough": "Bread."}) == 1
    assert list(page.read()) == ["Home Lab", "Tidepool", "Sourdough"]
    assert bucket_key("Home_Lab") == bucket_key("  home   lab ") == "home lab"
    # A section goes whole, with the prose a person wrote under it; no run of blank lines is left.
    page.path.write_text(page.path.read_text().replace("The tide app.", "The tide app.\n\nWritten by hand."))
    assert page.remove("tidepool")
    text = page.path.read_text()
    assert "## Tidepool" not in text and "Written by hand" not in text and "\n\n\n" not in text
    assert list(page.read()) == ["Home Lab", "Sourdough"]
    assert not page.remove("Tidepool")  # nothing left to remove


def test_a_missing_page_stays_missing_when_a_bucket_is_forgotten(tmp_path: Path) -> None:
    page = BucketsPage(Vault(tmp_path))
    assert not page.remove("Anything") and not page.path.exists()
