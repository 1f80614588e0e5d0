"""Planted secrets never reach the ledger, the node index or the vault: after a real nightly
flow run, the raw bytes of every file under the home (and every git object) are searched."""

import json
import subprocess
import zlib
from pathlib import Path

import pytest

from tests.helpers import cc_line, run_flow

RSA_BODY = [
    "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun",
    "VTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK",
    "LxoS2tFczGkPLPgizskuemMghRniWaoLcyehkd3qqGElvW/VDL5AaWTg0nLVkjRo",
]
SECRETS = {
    "aws": "AKIAQ3EGRTW5ZX7NB2KD",
    "anthropic": "sk-ant-api03-" + "Xb7kQ2mN9pR4sT6vW8yZ1aC3dE5fG7hJ9kL2mN4pQ6rS8tU0vW2xY4zA6bC8dE0fG2hJ4kL6mN8pQ0rS2tU4vW6xY8zAA",
    "github": "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5",
    "postgres": "s3cretpw",
    "rsa": RSA_BODY[1],
}
MARKER = "quokkazanzibar"  # ordinary text beside the secrets: proves the search sees stored text


def _transcript(folder: Path) -> Path:
    key_block = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(RSA_BODY) + "\n-----END RSA PRIVATE KEY-----"
    texts = [
        f"Deploy the {MARKER} service. My AWS key is {SECRETS['aws']} and the db is "
        "postgres://admin:s3cretpw@db:5432/app",
        f"Set ANTHROPIC_API_KEY={SECRETS['anthropic']} in the {MARKER} env file, then push with {SECRETS['github']}.",
        f"Here is the deploy key for {MARKER}:\n{key_block}\nInstall it on the runner.",
        f"Done: the {MARKER} runner now authenticates with that key and the token {SECRETS['github']}.",
    ]
    # Two sessions on the same topic, so clustering forms a bucket and an article is written.
    for session in ("secrets-a", "secrets-b"):
        parent = None
        with (folder / f"{session}.jsonl").open("w") as fh:
            for n, text in enumerate(texts):
                fh.write(cc_line(session, n, "user" if n % 2 == 0 else "assistant", text, parent))
                parent = f"{session}-u{n}"
    return folder


def _git_history(home: Path) -> bytes:
    """Every object git holds, decompressed, plus the full patch history."""
    out = [subprocess.run(["git", "log", "-p", "--all"], cwd=home, capture_output=True, check=True).stdout]
    for obj in (home / ".git" / "objects").rglob("*"):
        if obj.is_file() and len(obj.parent.name) == 2:
            out.append(zlib.decompress(obj.read_bytes()))
    return b"\n".join(out)


@pytest.mark.usefixtures("prefect")
def test_planted_secrets_never_reach_disk(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMVAULT_ENGINE", "none")
    src = tmp_path / "src"
    src.mkdir()
    _transcript(src)
    report = run_flow(home, paths=[str(src)])
    assert report["status"] == "completed", report
    ingest = report["stages"]["ingest"]
    assert ingest["messages_new"] == 8
    assert {"aws_access_key_id", "anthropic_api_key", "github_token", "url_password", "private_key"} <= set(ingest["redactions"])
    assert report["stages"]["index"]["nodes_written"] > 0

    files = [p for p in home.rglob("*") if p.is_file()]
    blobs = {str(p.relative_to(home)): p.read_bytes() for p in files}
    blobs["git history"] = _git_history(home)
    for name, secret in SECRETS.items():
        leaks = [where for where, data in blobs.items() if secret.encode() in data]
        assert leaks == [], f"{name} secret found in {leaks}"
    # The search is not vacuous: the ledger, the index and the vault all hold the session's text.
    holders = {where.split("/")[0] if "/" in where else where for where, data in blobs.items() if MARKER.encode() in data}
    assert any(h.startswith(".memvault") for h in holders) and "articles" in holders, holders
    assert any("nodes.lance" in where for where, data in blobs.items() if MARKER.encode() in data)
    assert any("ledger.duckdb" in where for where, data in blobs.items() if MARKER.encode() in data)
    # The redacted shape stays readable: scheme, user and host survive, the password does not.
    ledger_bytes = b"".join(data for where, data in blobs.items() if "ledger.duckdb" in where)
    assert b"postgres://admin:[REDACTED:url_password]@db:5432/app" in ledger_bytes
    assert json.dumps(report, default=str).find(SECRETS["aws"]) == -1
