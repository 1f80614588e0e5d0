"""The web page of `memvault serve`, loaded in headless Chromium from a real server on a copy
of the demo home: the article list, search, an article whose citation opens the cited
conversation, the read endpoints behind them, and hostile text that must stay text.

Set MEMVAULT_WEB_SCREENSHOT=PATH to keep a screenshot of an article view (docs/img/web.png
is taken this way).
"""

import os
import subprocess
import re
import urllib.parse
from pathlib import Path

import httpx
import pytest

from memvault.ids import conversation_id
from memvault.models import Conversation, Message
from tests.helpers import MEMVAULT, free_port
from tests.servers.cdp import Browser, find_chromium
from tests.servers.test_http import wait_healthy

pytestmark = pytest.mark.slow

CHROMIUM = find_chromium()
HOSTILE_TITLE = '<img src=x onerror="window.__xss=1">Hostile title'
HOSTILE_TEXT = "<script>window.__xss=2</script> and <b onmouseover=\"window.__xss=3\">bold</b>"


def add_hostile(home: Path) -> str:
    """A conversation and an article whose text is markup; the conversation's short ref."""
    from memvault.config.settings import load_settings
    from stores.ledger import Ledger

    conv = Conversation(source="note", native_id="hostile-note", title=HOSTILE_TITLE, messages=[
        Message(native_id="1", role="user", text=HOSTILE_TEXT),
        Message(native_id="2", parent_native_id="1", role="tool", kind="tool_call",
                text='Bash: echo "<iframe src=javascript:window.__xss=4>"'),
    ])
    with Ledger.open(load_settings(home)) as ledger:
        ledger.upsert_conversations([conv])
    ref = f"conv:{conversation_id('note', 'hostile-note')[:8]}"
    (home / "articles" / "Hostile_Page.md").write_text(
        "# Hostile Page\n\n<script>window.__xss=5</script>\n\n<img src=x onerror=\"window.__xss=6\">\n\n"
        f"A [link](javascript:window.__xss=7) and a claim.[^1]\n\n## References\n\n"
        f"[^1]: `{ref}` (2026-12-01, note) — <b>markup in a footnote</b>\n", encoding="utf-8")
    return ref


@pytest.fixture
def served(demo_copy: Path, spawn, tmp_path: Path) -> tuple[str, str]:
    """(base URL of a running `memvault serve`, the hostile conversation's ref)."""
    ref = add_hostile(demo_copy)
    port, log = free_port(), tmp_path / "serve.log"
    with log.open("w") as err:
        proc = spawn([MEMVAULT, "--home", str(demo_copy), "serve", "--port", str(port)],
                     stdout=subprocess.DEVNULL, stderr=err)
    base = f"http://127.0.0.1:{port}"
    assert wait_healthy(base, proc, log)["_status"] == 200
    return base, ref


def test_read_endpoints(served: tuple[str, str]) -> None:
    base, ref = served
    with httpx.Client(base_url=base, timeout=120) as client:
        listed = client.get("/conversations", params={"limit": 0}).json()
        assert len(listed) >= 5 and [c["date"] for c in listed] == sorted((c["date"] for c in listed), reverse=True)
        homelab = client.get("/conversations", params={"project": "homelab"}).json()
        assert homelab and {c["project"] for c in homelab} == {"/Users/sam/src/homelab"}
        assert {c["source"] for c in client.get("/conversations", params={"source": "chatgpt"}).json()} == {"chatgpt"}
        assert client.get("/conversations", params={"since": "2999-01-01"}).json() == []
        assert len(client.get("/conversations", params={"limit": 2}).json()) == 2
        assert client.get("/conversations", params={"source": "slack"}).status_code == 400

        one = client.get(f"/conversations/{homelab[0]['ref']}").json()
        assert one["id"] == homelab[0]["id"] and one["messages"] and one["message_count"] == homelab[0]["messages"]
        assert client.get(f"/conversations/{homelab[0]['short_id']}").json()["id"] == one["id"]
        missing = client.get("/conversations/conv:00000000")
        assert missing.status_code == 404 and "conv:00000000" in missing.json()["error"]
        assert client.get("/conversations/not-hex").status_code == 400
        hostile = client.get(f"/conversations/{ref}").json()
        assert hostile["title"] == HOSTILE_TITLE and hostile["messages"][0]["text"] == HOSTILE_TEXT

        page = client.get("/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert "script-src 'self'" in page.headers["content-security-policy"]
        assert client.get("/static/app.js").headers["content-type"].startswith("text/javascript")
        assert client.get("/static/render.py").status_code == 404  # only the page's own files are served
        assert client.get("/static/..%2F__init__.py").status_code == 404
        html = client.get("/articles/Hostile_Page/html").json()["html"]
        assert "<script>" not in html and "&lt;script&gt;" in html and f'href="#/c/{ref[5:]}"' in html


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (apt-get install -y chromium); "
                                              "the web page needs a real browser to be tested")
def test_web_page_in_headless_chromium(served: tuple[str, str], tmp_path: Path) -> None:
    base, ref = served
    articles = httpx.get(f"{base}/articles", timeout=60).json()
    cited = max((a for a in articles if a["title"] != "Hostile Page"), key=lambda a: a["citations"])
    assert cited["citations"] > 0
    stem = Path(cited["path"]).stem
    assert CHROMIUM is not None
    with Browser(CHROMIUM, tmp_path / "profile") as browser:
        browser.navigate(f"{base}/")
        shown = browser.wait_for("document.querySelectorAll('#articles li a').length")
        assert shown == len(articles)
        assert browser.evaluate("[...document.querySelectorAll('#articles li a')].map(a => a.textContent)") == \
            [a["title"] for a in articles]

        # Search: type into the box, press Enter, read the hits the page shows.
        browser.evaluate("document.getElementById('q').focus()")
        browser.type_text("how long are postgres backups kept on the NAS")
        browser.press_enter()
        hits = browser.wait_for("document.querySelectorAll('#hits .hit').length && document.getElementById('hits').innerText")
        assert "14 days" in hits
        assert re.search(r" · \d{4}-\d{2}-\d{2} · /conv:", hits)  # a turn says the day it was said
        assert browser.evaluate("location.hash") == "#/s/" + urllib.parse.quote("how long are postgres backups kept on the NAS")

        # An article: its citations are links; the first opens the cited conversation.
        browser.navigate(f"{base}/#/a/{stem}")
        first = browser.wait_for("document.querySelector('.article a.cite') && "
                                 "document.querySelector('.article a.cite').textContent")
        assert first.startswith("conv:")
        assert browser.evaluate("document.querySelector('.article h1').textContent") == cited["title"]
        if os.environ.get("MEMVAULT_WEB_SCREENSHOT"):  # for the docs: the whole article, References included
            browser.send("Emulation.setDeviceMetricsOverride", width=1280, height=1150, deviceScaleFactor=1,
                         mobile=False)
            browser.screenshot(Path(os.environ["MEMVAULT_WEB_SCREENSHOT"]))
            browser.send("Emulation.clearDeviceMetricsOverride")
        browser.evaluate("document.querySelector('.article a.cite').click()")
        conv_id = browser.wait_for("document.querySelector('.conversation') && "
                                   "document.querySelector('.conversation').dataset.id")
        assert conv_id.startswith(first.removeprefix("conv:"))
        assert browser.evaluate("document.querySelectorAll('.conversation .msg').length") > 0
        shot = tmp_path / "conversation.png"
        browser.screenshot(shot)
        assert shot.read_bytes().startswith(b"\x89PNG")

        # Hostile text stays text: in an article, in its footnote, and in the conversation it cites.
        browser.navigate(f"{base}/#/a/Hostile_Page")
        browser.wait_for("document.querySelector('.article h1') && "
                         "document.querySelector('.article h1').textContent === 'Hostile Page'")
        body = browser.evaluate("document.querySelector('.article').innerText")
        assert "<script>window.__xss=5</script>" in body and "<b>markup in a footnote</b>" in body
        assert browser.evaluate("document.querySelectorAll('.article script, .article img, .article b').length") == 0
        assert browser.evaluate("[...document.querySelectorAll('a')].filter(a => a.href.startsWith('javascript:')).length") == 0
        browser.evaluate("document.querySelector('.article a.cite').click()")
        title = browser.wait_for("document.querySelector('.conversation h1') && "
                                 "document.querySelector('.conversation h1').textContent")
        assert title == HOSTILE_TITLE
        assert HOSTILE_TEXT in browser.evaluate("document.querySelector('.conversation').innerText")
        assert browser.evaluate("document.querySelectorAll('main img, main script, main b, main iframe').length") == 0
        browser.evaluate("document.querySelector('details.tool').open = true")
        assert "<iframe" in browser.evaluate("document.querySelector('details.tool pre').textContent")
        assert browser.evaluate("window.__xss === undefined")


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (apt-get install -y chromium); "
                                              "the web page needs a real browser to be tested")
def test_web_page_asks_for_the_token_once(demo_copy: Path, spawn, tmp_path: Path) -> None:
    token_file, port, log = tmp_path / "hub.token", free_port(), tmp_path / "serve.log"
    with log.open("w") as err:
        proc = spawn([MEMVAULT, "--home", str(demo_copy), "serve", "--port", str(port), "--token-file", str(token_file)],
                     stdout=subprocess.DEVNULL, stderr=err)
    base = f"http://127.0.0.1:{port}"
    wait_healthy(base, proc, log)
    assert token_file.stat().st_mode & 0o777 == 0o600 and str(token_file) in log.read_text()
    token = token_file.read_text().strip()
    assert len(token) == 64 and httpx.get(f"{base}/articles", timeout=60).status_code == 401
    assert CHROMIUM is not None
    with Browser(CHROMIUM, tmp_path / "profile") as browser:
        browser.navigate(f"{base}/")
        browser.wait_for("document.getElementById('token-form') !== null")
        browser.evaluate("document.getElementById('token').value = '" + "0" * 64 + "'")
        browser.evaluate("document.getElementById('token-form').requestSubmit()")
        refused = browser.wait_for("document.querySelector('main .error') && document.querySelector('main .error').textContent")
        assert "refused" in refused
        browser.evaluate("document.getElementById('token').focus()")
        browser.type_text(token)
        browser.press_enter()
        assert browser.wait_for("document.querySelectorAll('#articles li a').length") > 0
        browser.navigate(f"{base}/#/c")  # another view: the token is not asked again
        assert browser.wait_for("document.querySelectorAll('#conversations tbody tr').length") > 0
        assert browser.evaluate("sessionStorage.getItem('memvault-token')") == token
        assert browser.evaluate("localStorage.length") == 0 and browser.evaluate("document.cookie") == ""
