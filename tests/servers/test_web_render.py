"""The web page's article renderer: citations, footnotes and wikilinks become links; nothing
in an article becomes markup of its own (it is partly built from untrusted conversations)."""

from html.parser import HTMLParser

from memvault.servers.web.render import article_html

ARTICLE = """---
aliases: [Tidepool]
---
# Tidepool Station

Tidepool reads NOAA tides.[^1] See [[Tidepool_Release|the release]] and [[No_Such_Page]].

| a | b |
|---|---|
| `x` | [[Tidepool_Release\\|r]] |

## References

[^1]: `conv:1a2b3c4d` (2026-10-01, claude-code) — tidepool: cache NOAA station data
"""

HOSTILE = """# Hostile

<script>window.__xss = 1</script>

<img src=x onerror="window.__xss = 2">

Inline <b onclick="x()">bold</b> and [click](javascript:alert(1)) and [ok](https://example.org/a"b).

[[A"onmouseover="x|<i>shown</i>]] and `conv:1a2b3c4d"><script>` and [^x"y]

[^x"y]: <svg onload=alert(1)>
"""


class Elements(HTMLParser):
    """Every start tag with its attributes."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def elements(html: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = Elements()
    parser.feed(html)
    return parser.tags


def resolve(page: str) -> str | None:
    return {"tidepool release": "Tidepool_Release", "tidepool_release": "Tidepool_Release"}.get(page.lower())


def test_citations_footnotes_and_wikilinks_become_links() -> None:
    html = article_html(ARTICLE, resolve)
    tags = elements(html)
    assert "aliases" not in html and html.startswith("<h1>Tidepool Station</h1>")  # front matter dropped
    hrefs = [a.get("href") for t, a in tags if t == "a"]
    assert "#/c/1a2b3c4d" in hrefs  # the citation opens the conversation
    assert "#fn-1" in hrefs and ("div", {"class": "footnote", "id": "fn-1"}) in tags
    assert hrefs.count("#/a/Tidepool_Release") == 2  # in prose and inside a table cell (`\\|`)
    assert '<span class="wikilink missing" title="no such article yet">No_Such_Page</span>' in html
    assert ">the release</a>" in html and "<table>" in html


def test_nothing_in_an_article_becomes_markup() -> None:
    html = article_html(HOSTILE, lambda page: page)  # every page "exists": its name lands in an href
    tags = elements(html)
    allowed = {"h1", "p", "code", "a", "sup", "div", "span"}
    assert {t for t, _ in tags} <= allowed, {t for t, _ in tags}
    assert not [a for _, attrs in tags for a in attrs if a.startswith("on")]
    hrefs = [a.get("href") or "" for t, a in tags if t == "a"]
    assert not [h for h in hrefs if h.lower().startswith("javascript:")]
    assert all(h.startswith(("#", "https://")) for h in hrefs), hrefs
    assert "&lt;script&gt;window.__xss = 1&lt;/script&gt;" in html and "&lt;svg onload=alert(1)&gt;" in html
    assert "&lt;i&gt;shown&lt;/i&gt;" in html  # a wikilink's display text is text
    assert "#/a/A%22onmouseover%3D%22x" in hrefs  # the page name is quoted into the link, not into markup
