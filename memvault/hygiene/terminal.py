"""Text bound for a terminal or a log: control characters shown as escapes, never acted on.

A transcript may hold terminal controls (OSC 52 rewrites the clipboard, OSC 0 retitles the
window, BEL, a C1 CSI); memory text printed or logged must show them, not send them.
"""

# C0 controls but newline and tab, DEL, C1 controls, and the bidirectional overrides and
# isolates (they reorder what is shown: "trojan source").
CONTROLS: tuple[int, ...] = (*range(0x00, 0x09), *range(0x0B, 0x20), 0x7F, *range(0x80, 0xA0),
                             *range(0x202A, 0x202F), *range(0x2066, 0x206A))
_VISIBLE = {c: (f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}") for c in CONTROLS}
_ONE_LINE = {**_VISIBLE, 0x0A: "\\n", 0x09: "\\t"}
# The controls json.dumps leaves raw (it escapes only C0), as JSON escapes: still exact text.
JSON_ESCAPES: dict[int, str] = {c: f"\\u{c:04x}" for c in CONTROLS if c >= 0x7F}


def visible(text: str) -> str:
    """``text`` with every control shown as an escape (ESC → ``\\x1b``); a CRLF line end stays
    a line end, newlines and tabs stay as they are."""
    return text.replace("\r\n", "\n").translate(_VISIBLE)


def one_line(text: str) -> str:
    """``text`` as one log line: controls, newlines and tabs shown as escapes."""
    return text.translate(_ONE_LINE)
