"""The read-only web page `memvault serve` shows at `/`: one HTML file, a script and a style
sheet shipped as package data (no build step, nothing fetched from elsewhere), and the
article renderer (`render.py`)."""

from importlib.resources import files

# Only these files are served, so a request path can never name another file of the package.
ASSETS = {"index.html": "text/html; charset=utf-8", "app.js": "text/javascript; charset=utf-8",
          "style.css": "text/css; charset=utf-8"}

# Defence in depth behind the escaping: no inline script, nothing loaded from elsewhere, no
# framing, and the page may only talk to the server that served it.
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
       "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")


def asset(name: str) -> tuple[bytes, str] | None:
    """The bytes and media type of a page file; None for any name not in :data:`ASSETS`."""
    media = ASSETS.get(name)
    if media is None:
        return None
    return files(__package__).joinpath(name).read_bytes(), media
