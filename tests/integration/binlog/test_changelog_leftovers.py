"""Through ``sparkcdc run``: the temporary files a killed run left in the changelog (a split or a
binlog batch half written) are gone after the next run, the files a user keeps there are not, and
the changelog still replays to the source table with every snapshot row once."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from binlog_support import Case, changelog_records, replay_changelog

# What a run killed mid-write leaves: the final name, hidden, with the writer's pid; cut short.
_HALF_WRITTEN = '{"op":"+I","table":"x","data":{"id":1,"v":'


def _leave(directory: Path, *names: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        (directory / name).write_text(_HALF_WRITTEN, encoding="utf-8")


def _temporaries(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.glob(".*.tmp"))


def test_a_run_removes_what_a_killed_run_left(case: Case) -> None:
    case.execute(f"CREATE TABLE `{case.db}`.t (id INT PRIMARY KEY, v INT)")
    case.execute(f"INSERT INTO `{case.db}`.t SELECT seq, seq FROM `{case.db}`.seq_1_to_300")
    manifest = case.manifest("leftovers.yaml", case.pipeline("leftovers", ["t"], sink="changelog"))
    table_dir = case.changelog_dir("leftovers") / f"{case.db}.t"
    uncaptured = case.changelog_dir("leftovers") / f"{case.db}.not_captured"
    mine = [".snapshot-000000.jsonl.31337.tmp", ".snapshot-000001.jsonl.31337.tmp"]
    _leave(table_dir, *mine, ".user-notes.tmp")
    _leave(uncaptured, ".snapshot-000000.jsonl.31337.tmp")

    case.run_ok(manifest)
    assert _temporaries(table_dir) == [".user-notes.tmp"]

    case.execute(f"UPDATE `{case.db}`.t SET v = -v WHERE id <= 10")
    case.execute(f"DELETE FROM `{case.db}`.t WHERE id > 290")
    position = case.position()
    _leave(table_dir, f".binlog-{position.file}-{position.pos:012d}.jsonl.31338.tmp")
    case.run_ok(manifest)

    assert _temporaries(table_dir) == [".user-notes.tmp"]
    assert _temporaries(uncaptured) == [".snapshot-000000.jsonl.31337.tmp"]  # not this pipeline's table
    snapshot_keys = Counter(
        r["data"]["id"] for r in changelog_records(table_dir) if r["source"].get("snapshot")
    )
    assert sorted(snapshot_keys) == list(range(1, 301)) and set(snapshot_keys.values()) == {1}
    replayed = replay_changelog(table_dir, key=lambda d: d["id"])
    source = {int(r[0]): int(r[1]) for r in case.execute(f"SELECT id, v FROM `{case.db}`.t")}
    assert {k: d["v"] for k, d in replayed.items()} == source
