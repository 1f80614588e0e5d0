"""memvault's OpenCode plugin, written by `memvault agent-setup opencode` into ``DIR/plugin/``.

OpenCode loads every ``.js`` file of its plugin folder at start and calls its exported async
functions with ``{client, directory, …}``; each returns hooks (OpenCode's plugin API):

- ``event`` with ``session.idle`` (a turn is over): the plugin reads the session through the
  SDK client (``client.session.messages``), writes it as one JSON line per message
  (``{"type": "message", info, parts}``: OpenCode's own shapes) to ``<home>/.memvault/opencode/<session>.jsonl``,
  and runs ``memvault capture --source opencode`` with a Claude-Code-style payload naming that
  file — the live path from there on is the same as for any agent;
- ``chat.message`` (a prompt was submitted): it runs ``memvault prompt-recall`` with the
  prompt's text and, when a block comes back, adds it to the message as a synthetic text part.

The plugin never throws into OpenCode: a failing command costs that capture or that recall.
"""

import json
from pathlib import Path

PLUGIN_NAME = "memvault.js"
EXPORT_DIR = "opencode"  # under the home's .memvault: the sessions the plugin exports

_TEMPLATE = """\
// memvault — long-term memory for OpenCode. Written by `memvault agent-setup opencode`;
// rerunning it rewrites this file. Captures a session when it goes idle, adds recall to prompts.
import { execFile } from "node:child_process";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";

const MEMVAULT = __EXE__;
const HOME = __HOME__;
const EXPORTS = join(HOME, ".memvault", __EXPORT_DIR__);

function memvault(args, input, timeoutMs) {
  return new Promise((resolve) => {
    const child = execFile(MEMVAULT, ["--home", HOME, ...args], { timeout: timeoutMs, maxBuffer: 1 << 20 },
      (error, stdout) => resolve(error ? "" : String(stdout)));
    child.stdin.end(input);
  });
}

export const MemvaultPlugin = async ({ client, directory }) => ({
  event: async ({ event }) => {
    if (event.type !== "session.idle") return;
    try {
      const id = event.properties.sessionID;
      const answer = await client.session.messages({ path: { id } });
      const messages = Array.isArray(answer) ? answer : answer.data || [];
      await mkdir(EXPORTS, { recursive: true, mode: 0o700 });
      const file = join(EXPORTS, `${id.replace(/[^A-Za-z0-9_.-]/g, "_")}.jsonl`);
      await writeFile(file, messages.map((m) => JSON.stringify({ type: "message", ...m })).join("\\n") + "\\n", { mode: 0o600 });
      await memvault(["capture", "--source", "opencode"], JSON.stringify({
        session_id: id, transcript_path: file, cwd: directory, hook_event_name: "session.idle" }), 10000);
    } catch (error) {
      // Never break OpenCode: the next idle exports the whole session again.
    }
  },
  "chat.message": async (input, output) => {
    try {
      const prompt = output.parts.filter((p) => p.type === "text" && !p.synthetic).map((p) => p.text).join("\\n");
      if (!prompt.trim()) return;
      const block = (await memvault(["prompt-recall"], JSON.stringify({ prompt, cwd: directory }), 15000)).trim();
      if (block) {
        const first = output.parts[0] || {};
        output.parts.push({ ...first, id: `${first.id || "prt"}-memvault`, type: "text", text: block, synthetic: true });
      }
    } catch (error) {
      // No recall this time; the prompt goes on unchanged.
    }
  },
});
"""


def plugin_source(exe: str, home: Path) -> str:
    """The plugin's JavaScript for this executable and home (values JSON-quoted, never spliced raw)."""
    return (_TEMPLATE.replace("__EXE__", json.dumps(exe)).replace("__HOME__", json.dumps(str(home)))
            .replace("__EXPORT_DIR__", json.dumps(EXPORT_DIR)))
