"""Sink table names and collisions (core/routing.py), and the spec fields that configure them."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.api.spec import CdcPipelineSpec
from sparkcdc.core.routing import Route, Routing, check_template, excluded, find_collisions
from sparkcdc.core.tables import TableId

A, B = TableId("tenant_a", "orders"), TableId("tenant_b", "orders")


def test_template_names_each_table() -> None:
    routing = Routing("{db}_{table}")
    assert routing.target(A).name == "tenant_a_orders" and not routing.target(A).merged
    assert find_collisions(routing.targets([A, B])) == []


def test_same_named_tables_collide_under_the_bare_table_name() -> None:
    collisions = find_collisions(Routing("{table}").targets([A, B]))
    assert len(collisions) == 1
    message = collisions[0].message()
    assert "tenant_a.orders and tenant_b.orders" in message and "'orders'" in message
    assert "spec.sink.tableName" in message and "spec.routes" in message


def test_names_that_differ_only_in_case_collide() -> None:
    upper = TableId("tenant_b", "ORDERS")
    assert find_collisions(Routing("{table}").targets([A, upper]))


def test_a_pattern_route_merges_with_source_columns() -> None:
    routing = Routing("{table}", (Route(r"tenant_.*\.orders", "all_orders"),))
    target = routing.target(B)
    assert target.name == "all_orders" and target.route == 0
    assert target.scope == (("_source_db", "tenant_b"), ("_source_table", "orders"))
    assert find_collisions(routing.targets([A, B])) == []


def test_a_plain_route_renames_without_source_columns_and_first_match_wins() -> None:
    routing = Routing("{table}", (Route("tenant_a.orders", "a_{table}"), Route(r".*\.orders", "rest")))
    assert routing.target(A).name == "a_orders" and not routing.target(A).merged
    assert routing.target(B).name == "rest" and routing.target(B).merged


def test_a_merged_target_may_not_also_receive_an_unmerged_table() -> None:
    routing = Routing("{table}", (Route(r"tenant_a\.orders_[0-9]+", "orders"),))
    shard = TableId("tenant_a", "orders_0")
    assert find_collisions(routing.targets([shard, B]))  # tenant_b.orders lands there by template


def test_excluded_names_and_patterns() -> None:
    assert excluded(A, ["tenant_a.orders"]) and excluded(B, [r"tenant_b\..*"])
    assert not excluded(A, [r"tenant_b\..*", "tenant_a.order"])


@pytest.mark.parametrize("template", ["{schema}", "{table", "{0}"])
def test_bad_templates_are_refused(template: str) -> None:
    with pytest.raises(ValueError):
        check_template(template)


names = st.text(alphabet="abcXY_0", min_size=1, max_size=4)


@given(
    st.lists(st.tuples(names, names), min_size=1, max_size=12, unique=True),
    st.sampled_from(["{table}", "{db}_{table}", "x"]),
)
def test_collisions_are_exactly_the_shared_unmerged_names(
    pairs: list[tuple[str, str]], template: str
) -> None:
    tables = [TableId(db, table) for db, table in pairs]
    targets = Routing(template).targets(tables)
    collided = {t for c in find_collisions(targets) for t in c.tables}
    for table in tables:
        others = [o for o in tables if o != table and targets[o].name.lower() == targets[table].name.lower()]
        assert (table in collided) == bool(others)


def _spec(**extra: Any) -> dict[str, Any]:
    ref = {"name": "s", "key": "k"}
    spec: dict[str, Any] = {
        "source": {"host": "h", "user": "u", "passwordSecretRef": ref, "tables": ["a.orders", "b.orders"]},
        "sink": {"type": "jdbc", "url": "mysql://h/replica", "user": "u", "passwordSecretRef": ref},
    }
    for key, value in extra.items():
        spec[key] = {**spec.get(key, {}), **value} if isinstance(value, dict) else value
    return spec


def test_spec_refuses_plain_names_that_collide() -> None:
    with pytest.raises(
        ValueError, match=re.escape("a.orders and b.orders would both be written to the sink table 'orders'")
    ):
        CdcPipelineSpec.model_validate(_spec())


def test_spec_accepts_a_template_an_exclusion_or_a_merging_route() -> None:
    CdcPipelineSpec.model_validate(_spec(sink={"tableName": "{db}_{table}"}))
    CdcPipelineSpec.model_validate(_spec(source={"excludeTables": ["b.orders"]}))
    spec = CdcPipelineSpec.model_validate(
        _spec(routes=[{"sourceTables": r"(a|b)\.orders", "sinkTable": "orders"}])
    )
    assert spec.routing().target(TableId("b", "orders")).merged


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"sink": {"tableName": "{schema}"}}, "only {db} and {table}"),
        ({"sink": {"tableName": "x/{table}"}}, "without /"),
        ({"sink": {"type": "changelog", "path": "/tmp/log", "tableName": ".."}}, "'..' path segments"),
        ({"sink": {"type": "delta", "path": "/tmp/lake", "tableName": "a//{table}"}}, "empty"),
        ({"routes": [{"sourceTables": r"(a|b)\.orders", "sinkTable": "{db}"}]}, "cannot depend on {db}"),
        (
            {
                "routes": [
                    {
                        "sourceTables": r".*",
                        "sinkTable": "t",
                        "sourceColumns": {"database": "x", "table": "X"},
                    }
                ]
            },
            "must be different columns",
        ),
    ],
)
def test_spec_refuses_bad_naming(extra: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        CdcPipelineSpec.model_validate(_spec(**extra))
