"""The operator's in-memory index of server-id ranges in use per source host."""

from __future__ import annotations

from typing import Any

from sparkcdc.controller.server_ids import ServerIdIndex, range_of


def obj(uid: str, host: str, spec_ids: str | None = None, assigned: str | None = None) -> dict[str, Any]:
    source: dict[str, Any] = {"host": host}
    if spec_ids:
        source["serverId"] = spec_ids
    status = {"serverIdRange": assigned} if assigned else {}
    return {"metadata": {"uid": uid}, "spec": {"source": source}, "status": status}


def test_range_of_prefers_the_spec() -> None:
    assert range_of(obj("a", "db1", "5400-5403", "9-10")) == ("db1", (5400, 5403))
    assert range_of(obj("a", "db1", None, "9-10")) == ("db1", (9, 10))
    assert range_of(obj("a", "db1", "12", None)) == ("db1", (12, 12))
    assert range_of(obj("a", "db1")) is None
    assert range_of(obj("a", "db1", "not-a-range")) is None


def test_loaded_once_then_kept_current_without_listing() -> None:
    lists = []

    def list_all() -> list[dict[str, Any]]:
        lists.append(1)
        return [obj("a", "db1", assigned="100-104"), obj("b", "db2", assigned="100-104"), obj("c", "db1")]

    index = ServerIdIndex(list_all)
    index.observe(obj("z", "db1", assigned="1-2"))  # before the first use: the list will see it
    assert index.in_use("db1", "c") == ((100, 104),)
    index.reserve("c", "db1", "105-109")  # assigned, its status patch not seen yet
    index.observe(obj("c", "db1"))  # an older read of c must not drop the reservation
    assert index.in_use("db1", "new") == ((100, 104), (105, 109))
    assert index.in_use("db1", "a") == ((105, 109),)  # a pipeline's own range is not "in use"
    index.observe(obj("d", "db1", spec_ids="200-201"))
    index.observe(obj("a", "db3", assigned="100-104"))  # its host changed
    assert index.in_use("db1", "new") == ((105, 109), (200, 201))
    index.forget("c")
    assert index.in_use("db1", "new") == ((200, 201),)
    assert len(lists) == 1
