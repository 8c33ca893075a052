"""``make demo``: a local MariaDB with a sample shop, replicated by sparkcdc, with live changes.

Starts a throwaway MariaDB under ``.demo/`` that accepts only TLS (a CA and certificate of its own,
verified by the pipeline: spec.source.tls and spec.sink.tls), fills ``shop`` with a few hundred thousand rows,
snapshots it into ``shop_replica`` with progress shown, then streams while a writer changes
orders, customers and items, and finally compares source and replica table by table.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

from sparkcdc.api.manifest import load_manifests
from sparkcdc.demo_data import SHOP_SCHEMA, shop_data_statements
from sparkcdc.driver.local import runtimes_of
from sparkcdc.driver.progress import RichProgress
from sparkcdc.engine.enumerator import SplitEnumerator
from sparkcdc.options import EngineOptions
from sparkcdc.spark.session import create_session, local_master
from sparkcdc.state.file_store import FileCheckpointStore
from sparkcdc.testing.mariadb import MariaDBServer, tls_options
from sparkcdc.testing.mariadb_install import ensure_mariadb_installed
from sparkcdc.testing.pki import make_server_pki

TABLES = ("customers", "products", "orders", "order_items")

PIPELINE = """\
apiVersion: v1
kind: Secret
metadata: {{name: demo-cdc}}
stringData: {{password: "{password}"}}
---
apiVersion: v1
kind: Secret
metadata: {{name: demo-ca}}
stringData: {{ca.crt: {ca}}}
---
apiVersion: sparkcdc.io/v1alpha1
kind: CdcPipeline
metadata: {{name: shop-replica}}
spec:
  source:
    host: 127.0.0.1
    port: {port}
    user: cdc
    passwordSecretRef: {{name: demo-cdc, key: password}}
    tables: ["shop\\\\..*"]
    tls: {{mode: verify-identity, caSecretRef: {{name: demo-ca, key: ca.crt}}}}
  startup: {{mode: initial}}
  snapshot: {{chunkSize: 8096, parallelism: 2}}
  binlog: {{batchIntervalMs: 200}}
  sink:
    type: jdbc
    url: mysql://127.0.0.1:{port}/shop_replica
    user: cdc
    passwordSecretRef: {{name: demo-cdc, key: password}}
    tls: {{mode: verify-identity, caSecretRef: {{name: demo-ca, key: ca.crt}}}}
"""


def start_source(base: Path, console: Console, orders: int) -> tuple[MariaDBServer, str]:
    ensure_mariadb_installed()
    shutil.rmtree(base, ignore_errors=True)
    # TLS only, with a CA of its own: the pipeline verifies the server as it would in production,
    # and every reader (ConnectorX, the Go decoder) runs over TLS.
    pki = make_server_pki(base / "pki")
    server = MariaDBServer(base / "mariadb", extra_options=tls_options(pki.ca, pki.cert, pki.key)).start()
    password = server.create_cdc_user("cdc")
    console.log(
        f"MariaDB (TLS only, CA {pki.ca}) started on 127.0.0.1:{server.port} (data in {base / 'mariadb'})"
    )
    for statement in SHOP_SCHEMA.split(";"):
        if statement.strip():
            server.execute(statement)
    for statement in shop_data_statements(customers=orders // 5, products=2_000, orders=orders):
        server.execute(statement)
    counts = ", ".join(f"{t} {server.execute(f'SELECT COUNT(*) FROM shop.{t}')[0][0]:,}" for t in TABLES)
    console.log(f"sample shop loaded: {counts}")
    return server, password


def live_writer(server: MariaDBServer, seconds: float, console: Console) -> None:
    """A few changes per second of every kind, including a primary-key change."""
    rng = random.Random(7)
    deadline = time.monotonic() + seconds
    top = server.execute("SELECT MAX(id) FROM shop.orders")[0][0]
    done = 0
    while time.monotonic() < deadline:
        order = rng.randint(1, top)
        statements = [
            f"UPDATE shop.orders SET status = 'shipped', total = total + 1 WHERE id = {order}",
            f"INSERT INTO shop.orders VALUES ({top + 1}, 1, 'new', 9.99, CURDATE(), 'live 🛒')",
            f"DELETE FROM shop.order_items WHERE order_id = {rng.randint(1, top)}",
            f"UPDATE shop.customers SET tier = 'gold', last_seen = NOW(3) WHERE id = {rng.randint(1, 1000)}",
            f"UPDATE shop.orders SET id = {top + 2} WHERE id = {top + 1}",
        ]
        for statement in statements:
            server.execute(statement)
        top += 2
        done += len(statements)
        time.sleep(0.2)
    console.log(f"writer: {done} live changes made")


def compare(server: MariaDBServer, console: Console) -> bool:
    table = Table(title="source vs replica (CHECKSUM TABLE)")
    for column in ("table", "rows", "source checksum", "replica checksum", "equal"):
        table.add_column(column)
    all_equal = True
    for name in TABLES:
        rows = server.execute(f"SELECT COUNT(*) FROM shop.{name}")[0][0]
        src = server.execute(f"CHECKSUM TABLE shop.{name}")[0][1]
        dst = server.execute(f"CHECKSUM TABLE shop_replica.{name}")[0][1]
        all_equal &= src == dst
        table.add_row(name, f"{rows:,}", str(src), str(dst), "✅" if src == dst else "❌")
    console.print(table)
    return all_equal


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="sparkcdc-demo", description=__doc__)
    parser.add_argument("--dir", default=".demo", help="where the demo keeps its database and state")
    parser.add_argument("--orders", type=int, default=100_000, help="orders in the sample shop")
    parser.add_argument("--stream-seconds", type=float, default=20.0, help="how long live changes run")
    args = parser.parse_args(argv)
    base = Path(args.dir).resolve()
    console = Console(stderr=True)
    server, password = start_source(base, console, args.orders)
    try:
        manifest_path = base / "pipeline.yaml"
        ca = json.dumps((base / "pki" / "ca.crt").read_text())  # a JSON string is a YAML string
        manifest_path.write_text(PIPELINE.format(port=server.port, password=password, ca=ca))
        console.log(f"pipeline manifest: {manifest_path}")
        options = EngineOptions.from_environment()
        (runtime,) = runtimes_of(load_manifests([str(manifest_path)]), options)
        spark = create_session("sparkcdc-demo", local_master(2), options)
        try:
            equal = _replicate(runtime, base, spark, server, args.stream_seconds, console)
        finally:
            spark.stop()
    finally:
        server.stop()
    return 0 if equal else 1


def _replicate(
    runtime: object, base: Path, spark: object, server: MariaDBServer, seconds: float, console: Console
) -> bool:
    from sparkcdc.engine.runtime import PipelineRuntime

    assert isinstance(runtime, PipelineRuntime)
    with RichProgress(console) as display:
        enumerator = SplitEnumerator(
            runtime, FileCheckpointStore(base / "state", runtime.name), spark, display.listener(runtime.name)
        )
        enumerator.run_snapshot()
        writer = threading.Thread(target=live_writer, args=(server, seconds, console), daemon=True)
        writer.start()
        finished: list[float] = []

        def should_stop() -> bool:
            if writer.is_alive():
                return False
            finished.append(finished[0] if finished else time.monotonic())
            return time.monotonic() - finished[0] > 3.0  # let the last changes arrive

        enumerator.run(exit_when_caught_up=False, should_stop=should_stop)
    return compare(server, console)


if __name__ == "__main__":
    raise SystemExit(main())
