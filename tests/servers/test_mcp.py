"""`memvault mcp`, driven by the MCP SDK's own stdio client against a real populated home.

One server process answers every call (the model loads once); the tests below check parts
of what that one session got back.
"""

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from memvault.hygiene.noise import strip_memory_blocks
from tests.helpers import MEMVAULT, child_env

TOOLS = {"search", "timeline", "get", "recall", "list_articles", "read_article", "read_section",
         "article_toc", "article_links"}
WRITE_TOOLS = {"remember"}  # refused unless `mcp.allow_write` (tests/live/test_live_recall.py)


def text_of(result) -> str:
    return "".join(c.text for c in result.content if c.type == "text")


def ok(result) -> str:
    assert not result.is_error, text_of(result)
    return text_of(result)


async def conversation(session: ClientSession) -> dict:
    """Every call an agent would make, as a client would make them."""
    out: dict = {"init": await session.initialize(), "tools": (await session.list_tools()).tools}
    call = session.call_tool
    out["recall"] = await call("recall", {"query": "default NOAA station for tidepool"})
    out["recall_small"] = await call("recall", {"query": "postgres backup retention on the NAS", "max_nodes": 2})
    out["search"] = await call("search", {"query": "sourdough starter feeding", "limit": 3})
    out["list"] = await call("list_articles", {})
    out["missing"] = await call("read_article", {"title": "No Such Article"})
    out["bad_args"] = await call("search", {"query": "x", "limit": 0})
    out["resource"] = await session.read_resource("memvault://articles")
    out["templates"] = (await session.list_resource_templates()).resource_templates
    out["empty"] = await call("recall", {"query": "   "})
    out["scoped"] = await call("search", {"query": "release", "project": "tidepool", "limit": 5})
    out["remember"] = await call("remember", {"text": "should not be stored"})
    title = ok(out["list"]).split('"title": "', 1)[1].split('"', 1)[0]
    out["title"] = title
    out["article"] = await call("read_article", {"title": title})
    out["article_resource"] = await session.read_resource(f"memvault://articles/{title.replace(' ', '_')}")
    out["toc"] = await call("article_toc", {"title": title})
    out["links"] = await call("article_links", {"title": title})
    section = ok(out["toc"]).split('"title": "', 1)[1].split('"', 1)[0]
    out["section_title"] = section
    out["section"] = await call("read_section", {"title": title, "section": section})
    node_id = ok(out["search"]).split('"id": "', 1)[1].split('"', 1)[0]
    out["node_id"] = node_id
    out["timeline"] = await call("timeline", {"id": node_id, "before": 1, "after": 1})
    out["get"] = await call("get", {"ids": [node_id]})
    return out


@pytest.fixture(scope="module")
def session_results(doors_home, tmp_path_factory) -> dict:
    errlog = tmp_path_factory.mktemp("mcp") / "stderr.log"

    async def run() -> dict:
        params = StdioServerParameters(command=MEMVAULT, args=["--home", str(doors_home), "mcp"], env=child_env())
        with anyio.fail_after(240), errlog.open("w") as err:  # bounded: the model loads on the first query
            async with stdio_client(params, errlog=err) as (read, write), ClientSession(read, write) as session:
                return await conversation(session)

    out = anyio.run(run)
    out["stderr"] = errlog.read_text(encoding="utf-8", errors="replace")
    return out


def test_the_server_log_holds_no_request_chatter(session_results) -> None:
    # The client keeps the server's stderr as its log: an anticipated tool error (no such
    # article) and each request are the agent's business, not lines of the SDK's INFO log.
    log = session_results["stderr"]
    assert "No Such Article" not in log and "Processing request" not in log, log[:2000]


def test_tools_have_descriptions_that_say_when_to_use_memory(session_results) -> None:
    instructions = session_results["init"].instructions or ""
    assert "not instructions" in instructions and "conv:" in instructions and "quietly" in instructions
    tools = {t.name: t for t in session_results["tools"]}
    assert set(tools) == TOOLS | WRITE_TOOLS
    assert not tools["remember"].annotations.read_only_hint
    for tool in (tools[n] for n in TOOLS):
        assert tool.description and len(tool.description) > 40, tool.name
        assert tool.annotations and tool.annotations.read_only_hint, tool.name
    assert "preferences" in tools["recall"].description and "history" in tools["recall"].description


def test_recall_returns_a_block_with_the_fact(session_results) -> None:
    block = ok(session_results["recall"])
    assert block.startswith("<memory-recall>") and block.rstrip().endswith("</memory-recall>")
    assert "9414750" in block and "not instructions" in block
    assert strip_memory_blocks("before " + block + " after") == "before after"
    small = ok(session_results["recall_small"])
    assert "14 days" in small and small.count("(cite: ") <= 2


def test_every_result_is_marked_for_ingest_to_strip(session_results) -> None:
    for key in ("search", "list", "article", "toc", "links", "section", "timeline", "get"):
        text = ok(session_results[key])
        assert text.startswith("<memory-recall tool=") and "not instructions" in text, key
        assert strip_memory_blocks(text) == "", key  # if it lands in a transcript, nothing of it survives


def test_article_tools_and_three_layer_search(session_results) -> None:
    r = session_results
    assert f"# {r['title']}" in ok(r["article"])
    assert '"path"' in ok(r["toc"]) and '"out"' in ok(r["links"]) and '"in"' in ok(r["links"])
    assert r["section_title"] in ok(r["section"])
    assert '"id"' in ok(r["search"]) and '"text"' not in ok(r["search"])  # layer 1: no bodies
    assert r["node_id"] in ok(r["timeline"]) and '"anchor": true' in ok(r["timeline"])
    got = ok(r["get"])
    assert r["node_id"] in got and '"text"' in got and '"vector"' not in got


def test_errors_come_back_as_tool_errors_that_say_what_to_do(session_results) -> None:
    missing = session_results["missing"]
    assert missing.is_error and "memvault articles" in text_of(missing)
    assert session_results["bad_args"].is_error and "limit" in text_of(session_results["bad_args"])


def test_the_article_list_resource(session_results) -> None:
    contents = session_results["resource"].contents
    assert contents and contents[0].text.startswith("<memvault-index>")
    assert "Articles:" in contents[0].text and session_results["title"] in contents[0].text
    assert strip_memory_blocks(contents[0].text) == ""


def test_structured_content_version_templates_and_honest_errors(session_results) -> None:
    from memvault import __version__

    r = session_results
    assert r["init"].server_info.version == __version__
    tools = {t.name: t for t in r["tools"]}
    assert all(tools[n].output_schema for n in TOOLS | WRITE_TOOLS)
    rec = r["recall"].structured_content
    assert rec["block"] == ok(r["recall"]) and rec["hits"] and {"id", "score", "cite"} <= set(rec["hits"][0])
    # A turn's hit says the day it was said; an article's none.
    assert all(bool(h["date"]) == (h["kind"] in ("message", "exchange")) for h in rec["hits"])
    assert any(h["date"] for h in rec["hits"]) and any(h["kind"] == "section" for h in rec["hits"])
    assert r["search"].structured_content["hits"][0]["id"] in ok(r["search"])
    assert r["get"].structured_content["nodes"][0]["id"] == r["node_id"]
    assert r["empty"].is_error and "empty" in text_of(r["empty"])
    scoped = r["scoped"].structured_content["hits"]
    assert scoped and all((h["project"] or "").endswith("/tidepool") for h in scoped)
    assert r["remember"].is_error and "allow_write" in text_of(r["remember"])
    assert [t.uri_template for t in r["templates"]] == ["memvault://articles/{title}"]
    body = r["article_resource"].contents[0].text
    assert f"# {r['title']}" in body and strip_memory_blocks(body) == ""
