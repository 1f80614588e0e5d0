"""Maintenance: the pure operations on small real LanceDB indexes, and the flow on a copy of
the demo home — recall answers the same before and after."""

from datetime import datetime
from pathlib import Path

import numpy as np

from memvault.ops import maintenance as ops
from memvault.config.settings import load_settings
from stores.nodes import NodeIndex

QUERIES = ["postgres backup retention", "tidepool release", "what port does postgres listen on",
           "when does the NAS backup run", "python packaging"]


def _row(i: str, vec: np.ndarray, text: str, doc: str = "conv:a", kind: str = "conversation",
         parent: str | None = None, created: datetime | None = None) -> dict:
    now = datetime(2026, 1, 1)
    return {"id": i, "doc": doc, "doc_kind": kind, "path": f"/{i}", "parent": parent, "kind": "turn", "title": i,
            "text": text, "ref": None, "ord": 0, "vector": (vec / np.linalg.norm(vec)).astype(float).tolist(),
            "pending": False, "content_hash": str(hash(text)), "created_at": created or now, "updated_at": now,
            "importance": 0.3, "access": 0}


def _index(tmp_path: Path, rows: list[dict]) -> NodeIndex:
    nodes = NodeIndex(str(tmp_path / "nodes.lance"), "test-model", 4)
    nodes.upsert(rows)
    nodes.ensure_fts()
    return nodes


def test_top_similar_matches_brute_force() -> None:
    rng = np.random.default_rng(7)
    vecs = rng.normal(size=(60, 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    ids = [f"n{i}" for i in range(60)]
    parents = [None] + [f"n{i - 1}" for i in range(1, 60)]
    got = ops.top_similar(vecs, ids, parents, threshold=0.2, k=3, budget=60 * 7)  # several batches
    sims = vecs @ vecs.T
    want = []
    for a in range(60):
        cand = sorted(((float(sims[a, b]), b) for b in range(60) if b != a and (a == 0 or b != a - 1)), reverse=True)
        want += [(ids[a], ids[b], s) for s, b in cand[:3] if s >= 0.2]
    assert [(s, d) for s, d, _ in got] == [(s, d) for s, d, _ in want]
    assert np.allclose([w for *_, w in got], [w for *_, w in want], atol=1e-5)


def test_merge_keeps_the_oldest_and_repoints_edges(tmp_path: Path) -> None:
    base = np.array([1.0, 0.2, 0.0, 0.0])
    rows = [
        _row("old", base, "Backups run at 02:00 to the NAS.", doc="conv:a", created=datetime(2025, 1, 1)),
        _row("dup", base + 0.001, "Backups run at 02:00 to the  NAS.", doc="conv:b", created=datetime(2025, 6, 1)),
        _row("other", np.array([0.0, 1.0, 0.0, 0.0]), "Unrelated text about tidepools.", doc="conv:c"),
        _row("parentless", np.array([0.0, 0.0, 1.0, 0.0]), "Backups run at 02:00 to the NAS!", doc="conv:d"),
        _row("article", base, "Backups run at 02:00 to the NAS.", doc="Backups", kind="article"),
    ]
    nodes = _index(tmp_path, rows)
    nodes.set_edges([("other", "dup", 0.8), ("dup", "other", 0.8), ("dup", "old", 0.99)])
    assert ops.merge_duplicates(nodes, 0.97) == {"merged": 1}
    assert nodes.get(["dup"]) == []
    assert {r["id"] for r in nodes.get(["old", "other", "parentless", "article"])} == {"old", "other", "parentless", "article"}
    assert sorted((s, d) for s, d, _ in nodes.all_edges()) == [("old", "other"), ("other", "old")]
    assert ops.merge_duplicates(nodes, 0.97) == {"merged": 0}  # idempotent


def test_near_identical_text() -> None:
    assert ops.near_identical("Hello  World", "hello world")
    assert ops.near_identical("x" * 200 + "a", "x" * 200 + "b")
    assert not ops.near_identical("backups at two", "backups at ten past four in the morning")


def test_cold_nodes_leave_vector_search_but_stay_in_full_text(tmp_path: Path) -> None:
    rows = [_row("old", np.array([1.0, 0, 0, 0]), "pgbackrest retention fourteen days", created=datetime(2024, 1, 1)),
            _row("new", np.array([0.9, 0.1, 0, 0]), "pgbackrest differential nightly", created=datetime(2026, 1, 1)),
            _row("art", np.array([1.0, 0, 0, 0]), "pgbackrest article text", kind="article", doc="Pg",
                 created=datetime(2020, 1, 1))]
    nodes = _index(tmp_path, rows)
    assert ops.age_tiers(nodes, None) == {"cold": 0}
    assert ops.age_tiers(nodes, 180, now=datetime(2026, 2, 1)) == {"cold": 1}
    vector_hits, text_hits = nodes.recall_search(np.array([1.0, 0, 0, 0], dtype=np.float32), "retention fourteen", 5)
    assert "old" not in [r["id"] for r in vector_hits] and {"new", "art"} <= {r["id"] for r in vector_hits}
    assert "old" in [r["id"] for r in text_hits]
    assert nodes.pending_ids() == []  # cold is deliberate: the index stage must not re-embed it
    assert ops.age_tiers(nodes, 180, now=datetime(2026, 2, 1)) == {"cold": 0}


def test_compact_keeps_only_versions_inside_the_margin(tmp_path: Path) -> None:
    nodes = _index(tmp_path, [_row(f"n{i}", np.array([1.0, i, 0, 0]), f"text {i}") for i in range(5)])
    for i in range(5):
        nodes.upsert([_row(f"n{i}", np.array([1.0, i, 1, 0]), f"text {i} changed")])
    assert len(nodes.nodes.list_versions()) > 3
    kept = ops.compact(nodes, margin_hours=24)["versions_left"]
    assert kept["nodes"] > 3  # every version is younger than a day: readers keep them
    assert ops.compact(nodes, margin_hours=0)["versions_left"]["nodes"] == 1
    assert nodes.count() == 5 and nodes.get(["n3"])[0]["text"] == "text 3 changed"


def test_maintenance_flow_leaves_recall_unchanged(demo_copy: Path, embedder) -> None:
    from flows.maintenance import MaintenanceOptions, maintenance
    from memvault.ops.memory import MemoryService

    home = demo_copy
    settings = load_settings(home)

    def recall() -> list[list[tuple[str, str]]]:
        service = MemoryService(settings, embedder)
        return [[(h["id"], h["path"]) for h in service.recall(q)["hits"]] for q in QUERIES]

    before = recall()
    edges_before = len(NodeIndex.open_existing(settings).all_edges())
    report = maintenance(MaintenanceOptions(home=str(home), cleanup_after_hours=0))
    assert list(report["steps"]) == ["merge", "edges", "tiers", "compact", "retire", "checkpoint"]
    assert report["steps"]["checkpoint"]["checkpointed"] is True
    assert report["steps"]["compact"]["versions_left"]["nodes"] == 1
    assert report["steps"]["edges"]["edges_before"] == edges_before
    after = recall()
    assert all(before), "every query finds something"
    assert after == before
    assert (home / ".memvault" / "writer.lock").exists()
    from memvault.lock import holder

    assert holder(settings.state_dir) is None  # released


def test_maintenance_command_on_a_fresh_home(home: Path, prefect) -> None:
    import json

    from typer.testing import CliRunner

    from memvault.cli import app

    bad = CliRunner().invoke(app, ["--home", str(home), "maintenance", "--step", "vacuum"])
    assert bad.exit_code == 2 and "unknown step(s) vacuum" in bad.output
    result = CliRunner().invoke(app, ["--home", str(home), "maintenance", "--json"])
    assert result.exit_code == 0, result.output
    # Prefect's own log lines share the in-process runner's output; the report is the JSON object.
    report, _ = json.JSONDecoder().raw_decode(result.output[result.output.index('{\n  "home"'):])
    assert report["steps"]["edges"]["skipped"] == "no node index yet"
    assert report["steps"]["checkpoint"]["checkpointed"] in (True, False)
    assert list(report["steps"]) == ["merge", "edges", "tiers", "compact", "retire", "checkpoint"]
