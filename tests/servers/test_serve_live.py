"""`memvault serve` on the live path: it answers like the CLI, and it drains what hooks spool
as soon as they spool it, with an index handle that sees every drain's rows.

A real uvicorn process on a free loopback port; the hook is the `memvault` executable with
the payload on stdin, as Claude Code runs it.
"""

import json
import subprocess
import threading
import time
from pathlib import Path

import httpx

from memvault.live import spool
from memvault.ops.capture_paths import register_agent_folder
from tests.helpers import MEMVAULT, SAMPLES, append_turn, child_env, free_port, wait_for
from tests.servers.test_http import wait_healthy

SAMPLE = SAMPLES / "claude-code" / "-Users-sam-src-lisbon-2027" / "691563ff-3759-5e7d-a1c8-46e36e4e06f0.jsonl"
QUERIES = ("how long are postgres backups kept on the NAS", "which NOAA station does tidepool use by default?",
           "sourdough starter feeding ratio")


def start_serve(home: Path, spawn, log: Path) -> tuple[str, subprocess.Popen]:
    port = free_port()
    with log.open("w") as err:
        proc = spawn([MEMVAULT, "--home", str(home), "serve", "--port", str(port)],
                     stdout=subprocess.DEVNULL, stderr=err)
    base = f"http://127.0.0.1:{port}"
    wait_healthy(base, proc, log)
    return base, proc



def test_a_served_recall_returns_what_the_cli_recall_returns(doors_home: Path, spawn, tmp_path: Path) -> None:
    base, _ = start_serve(doors_home, spawn, tmp_path / "serve.log")
    with httpx.Client(base_url=base, timeout=120) as client:
        for query in QUERIES:
            # The CLI's project prior comes from its working directory; the server's from `cwd`.
            cli = subprocess.run([MEMVAULT, "--home", str(doors_home), "recall", query, "--json"], cwd=tmp_path,
                                 capture_output=True, text=True, timeout=240, env=child_env())
            assert cli.returncode == 0, cli.stderr
            expected = json.loads(cli.stdout)["hits"]
            served = client.get("/recall", params={"q": query, "cwd": str(tmp_path)}).json()["hits"]
            assert expected and [h["id"] for h in served] == [h["id"] for h in expected], query
            # Scores to within the recency prior's drift over the seconds between the two calls.
            assert all(abs(s["score"] - e["score"]) < 1e-5 for s, e in zip(served, expected)), query
            assert [s["text"] for s in served] == [e["text"] for e in expected]



def test_serve_stopped_by_sigterm_withdraws_its_announcement(home: Path, spawn, tmp_path: Path) -> None:
    # launchd and systemd stop a server with SIGTERM: hooks must not keep finding its serve.json.
    _, proc = start_serve(home, spawn, tmp_path / "serve.log")
    announced = home / ".memvault" / "serve.json"
    assert json.loads(announced.read_text())["pid"] == proc.pid
    proc.terminate()
    assert proc.wait(timeout=120) == 143
    assert not announced.exists()


def test_a_second_serve_on_a_busy_port_leaves_the_live_servers_announcement(home: Path, spawn,
                                                                            tmp_path: Path) -> None:
    base, proc = start_serve(home, spawn, tmp_path / "serve.log")
    announced = home / ".memvault" / "serve.json"
    port = base.rsplit(":", 1)[1]
    second = subprocess.run([MEMVAULT, "--home", str(home), "serve", "--port", port], capture_output=True, text=True,
                            timeout=240, env=child_env())
    assert second.returncode == 1 and f"cannot listen on 127.0.0.1:{port}" in second.stderr
    assert json.loads(announced.read_text())["pid"] == proc.pid  # only its writer removes it
    assert proc.poll() is None


def stop_hook(home: Path, transcript: Path) -> None:
    payload = {"session_id": SAMPLE.stem, "transcript_path": str(transcript), "cwd": "/Users/sam/src/lisbon-2027",
               "hook_event_name": "Stop"}
    out = subprocess.run([MEMVAULT, "--home", str(home), "capture"], input=json.dumps(payload), capture_output=True,
                         text=True, timeout=60, env=child_env())
    assert out.returncode == 0 and out.stdout == ""


def test_serve_drains_a_capture_at_once_and_its_next_recall_sees_the_rows(home: Path, spawn, tmp_path: Path) -> None:
    # A check of the spool once an hour: only the spool's notification can drain in time.
    settings_file = home / "memvault.toml"
    settings_file.write_text(settings_file.read_text() + "\n[live]\nserve_drain_s = 3600\n")
    transcript = tmp_path / "projects" / SAMPLE.name
    transcript.parent.mkdir(parents=True)
    transcript.write_text(SAMPLE.read_text())
    register_agent_folder(home / ".memvault", "claude-code", transcript.parent)  # as agent-setup does
    base, proc = start_serve(home, spawn, tmp_path / "serve.log")
    state = home / ".memvault"
    wait_for(lambda: (state / spool.SERVE_INFO).is_file(), 60, "serve.json")

    with httpx.Client(base_url=base, timeout=120) as client:
        for n, (fact, query, word) in enumerate((
                ("Decision: the Sintra day trip moves to the 17th, the sitter is Marta.",
                 "who is the dog sitter for the Sintra trip?", "Marta"),
                ("We booked the Alfama tram tour for the 14th at 10:00, tickets from Quiosque Zebedeu.",
                 "where do we get the Alfama tram tour tickets?", "Zebedeu"))):
            append_turn(transcript, fact)
            stop_hook(home, transcript)
            # The entry leaves the spool only once its rows are committed to the index.
            wait_for(lambda: spool.pending(state) == 0, 240, f"serve to drain capture {n + 1}")
            assert (state / spool.DRAIN_LOCK).read_text().strip() == str(proc.pid)  # serve drained it
            log = state / spool.LIVE_LOG
            assert not log.exists() or "drain failed" not in log.read_text()
            # The very next recall reads the rows that drain wrote (the first through a handle
            # opened when the index appeared, the second through the same, long-open handle).
            hits = client.get("/recall", params={"q": query}).json()["hits"]
            assert any(word in h["text"] for h in hits), hits
            search = client.get("/search", params={"q": word}).json()["hits"]
            assert search and search[0]["doc"].startswith("conv:")


def test_spool_wakeups_come_with_a_new_entry_and_with_each_interval(tmp_path: Path) -> None:
    from memvault.servers.drain_loop import spool_wakeups  # new in the loop that watches the spool
    
    folder = spool.spool_dir(tmp_path)
    folder.mkdir()
    stop, woken = threading.Event(), threading.Event()

    def listen() -> None:
        # An hour's interval: after the one check made once the watch is armed (an entry that
        # landed while it was being set up raises no event), only an entry wakes it.
        wakeups = spool_wakeups(folder, 3600, stop)
        next(wakeups)
        for _ in wakeups:
            woken.set()
            return

    threading.Thread(target=listen, daemon=True).start()
    deadline = time.monotonic() + 60
    while not woken.is_set() and time.monotonic() < deadline:
        spool.append(tmp_path, {"op": "transcript", "path": "/x.jsonl"})  # until the watch is up
        woken.wait(0.5)
    stop.set()
    assert woken.is_set()

    ticks = spool_wakeups(folder, 0.05, threading.Event())
    next(ticks)  # nothing added: the interval alone wakes it
    next(ticks)
