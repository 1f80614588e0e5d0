// memvault's read-only web page: articles, conversations and search over the local HTTP API.
// Conversation text is untrusted, so everything read from the API goes into the page as text
// (textContent); the one exception is an article's HTML, which the server renders from
// Markdown with raw HTML escaped (memvault/servers/web/render.py). The page's CSP allows
// no inline script either way.
"use strict";

const main = document.getElementById("main");
const FOLDED = new Set(["tool_call", "tool_result", "meta"]);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value !== null && value !== undefined) node.setAttribute(key, String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// A server started with --token-file wants `Authorization: Bearer <token>` on every API call.
// The page asks for the token once and keeps it in this tab's sessionStorage only (gone when the
// tab closes; never in localStorage, a cookie or the URL).
const TOKEN_KEY = "memvault-token";

class NeedsToken extends Error {}

async function api(path) {
  const headers = { Accept: "application/json" };
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = `Bearer ${token}`;
  const response = await fetch(path, { headers });
  if (response.status === 401) {
    if (token) sessionStorage.removeItem(TOKEN_KEY);
    throw new NeedsToken(token ? "That token was refused." : "");
  }
  let body;
  try { body = await response.json(); } catch (e) { body = { error: `${response.status} ${response.statusText}` }; }
  if (!response.ok) throw new Error(body.error || `${response.status} ${response.statusText}`);
  return body;
}

function show(...nodes) {
  main.replaceChildren(...nodes.filter((node) => node !== null && node !== undefined));
  window.scrollTo(0, 0);
}

function fail(error) {
  if (error instanceof NeedsToken) return askToken(error.message);
  show(el("p", { class: "error" }, String(error.message || error)));
}

function askToken(why) {
  const input = el("input", { id: "token", type: "password", autocomplete: "off", "aria-label": "Token" });
  const form = el("form", { id: "token-form" }, input, el("button", { type: "submit" }, "Open"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const value = input.value.trim();
    if (value) { sessionStorage.setItem(TOKEN_KEY, value); route(); }
  });
  show(el("h1", {}, "Token"),
    el("p", {}, "This memory is served with a token (memvault serve --token-file FILE). Paste the token from that file; "
      + "it is kept in this tab only."),
    why ? el("p", { class: "error" }, why) : null, form);
  input.focus();
}

function day(iso) { return iso ? iso.slice(0, 10) : ""; }
function clock(iso) { return iso ? `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC` : ""; }

async function articles() {
  const list = await api("/articles");
  const items = list.map((a) => {
    const stem = a.path.split("/").pop().replace(/\.md$/, "");
    return el("li", {}, el("a", { href: `#/a/${encodeURIComponent(stem)}` }, a.title),
      el("span", { class: "meta" }, `${a.words} words · ${a.citations} citations`));
  });
  show(el("h1", {}, "Articles"),
    items.length ? el("ul", { class: "list", id: "articles" }, ...items)
      : el("p", { class: "muted" }, "No articles yet — `memvault run` writes them."));
}

async function article(stem) {
  const a = await api(`/articles/${encodeURIComponent(stem)}/html`);
  const body = el("article", { class: "article" });
  body.innerHTML = a.html; // rendered server-side with raw HTML escaped; see the note at the top
  show(body, el("p", { class: "muted" }, a.path));
}

const LIST_LIMIT = 500;

async function conversations() {
  const list = await api(`/conversations?limit=${LIST_LIMIT + 1}`);
  const cut = list.length > LIST_LIMIT;
  if (cut) list.length = LIST_LIMIT;
  const rows = list.map((c) => el("tr", {},
    el("td", {}, el("a", { href: `#/c/${c.short_id}` }, c.ref)),
    el("td", {}, day(c.date)), el("td", {}, c.source), el("td", {}, c.project || ""),
    el("td", { class: "num" }, c.messages), el("td", {}, c.title || "(untitled)")));
  show(el("h1", {}, "Conversations"),
    rows.length ? el("table", { id: "conversations" },
      el("thead", {}, el("tr", {}, ...["id", "date", "source", "project", "messages", "title"].map((h) => el("th", {}, h)))),
      el("tbody", {}, ...rows))
      : el("p", { class: "muted" }, "No conversations yet — `memvault ingest PATH` reads transcripts."),
    cut ? el("p", { class: "muted" }, `The newest ${LIST_LIMIT} are shown; \`memvault conversations\` filters all of them.`) : null);
}

function message(m) {
  if (FOLDED.has(m.kind)) {
    const lines = m.text.split("\n").map((line) => line.trim()).filter(Boolean);
    // "Bash result:" says little; its first line of output says more (as `memvault show` folds it).
    const first = !lines.length ? "(empty)" : lines[0].endsWith(":") && lines.length > 1 ? `${lines[0]} ${lines[1]}` : lines[0];
    const label = m.kind === "tool_call" ? "tool call" : m.kind === "tool_result" ? "tool result" : m.kind;
    return el("details", { class: "tool" }, el("summary", {}, `${label}: ${first}`), el("pre", {}, m.text));
  }
  return el("section", { class: `msg ${m.role}` },
    el("div", { class: "who" }, m.role + (m.kind === "text" ? "" : ` (${m.kind.replace(/_/g, " ")})`),
      m.timestamp ? el("time", { datetime: m.timestamp }, clock(m.timestamp)) : null),
    el("div", { class: "text" }, m.text));
}

async function conversation(id) {
  const c = await api(`/conversations/${encodeURIComponent(id)}`);
  const facts = [c.ref, c.source, c.project, clock(c.date), `${c.messages.length} messages`].filter(Boolean).join(" · ");
  show(el("div", { class: "conversation", "data-id": c.id },
    el("h1", {}, c.title || "(untitled conversation)"), el("p", { class: "conv-facts" }, facts),
    ...c.messages.map(message)));
}

function hitLink(hit) {
  // A hit cites its document: `conv:<id>` for a conversation, `[[Article_Stem]]` for an article.
  const cite = hit.cite || "";
  if (cite.startsWith("conv:")) return `#/c/${encodeURIComponent(cite.slice(5))}`;
  const article = /^\[\[([^\]|#]+)/.exec(cite);
  return article ? `#/a/${encodeURIComponent(article[1])}` : null;
}

async function search(query) {
  document.getElementById("q").value = query;
  const result = await api(`/recall?q=${encodeURIComponent(query)}`);
  const hits = result.hits.map((h) => {
    const href = hitLink(h);
    const title = h.title || h.path;
    return el("div", { class: "hit" },
      href ? el("a", { href }, title) : el("strong", {}, title),
      el("span", { class: "muted" }, ` · ${h.source || ""}${h.date ? ` · ${h.date}` : ""} · ${h.path}`),
      el("p", { class: "text" }, h.text));
  });
  show(el("h1", {}, `Search: ${query}`),
    hits.length ? el("div", { id: "hits" }, ...hits) : el("p", { class: "muted", id: "hits" }, "Nothing found."));
}

async function route() {
  const hash = location.hash || "#/";
  if (!hash.startsWith("#/")) return; // an in-page anchor (a footnote): the browser scrolls, the view stays
  const [view, ...rest] = hash.slice(2).split("/");
  const arg = decodeURIComponent(rest.join("/"));
  try {
    if (view === "a" && arg) await article(arg);
    else if (view === "c" && arg) await conversation(arg);
    else if (view === "c") await conversations();
    else if (view === "s" && arg) await search(arg);
    else await articles();
  } catch (error) {
    fail(error);
  }
}

document.getElementById("search").addEventListener("submit", (event) => {
  event.preventDefault();
  const query = document.getElementById("q").value.trim();
  if (query) location.hash = `#/s/${encodeURIComponent(query)}`;
});
window.addEventListener("hashchange", route);
route();
