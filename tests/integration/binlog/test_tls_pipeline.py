"""A whole pipeline over verified TLS on the fast paths (issue 20 item 4).

Source and sink are a MariaDB that accepts only TLS (``require_secure_transport=ON``, a certificate
for 127.0.0.1 from the test's own CA); the manifest verifies both with ``verify-identity`` and the
CA from a Secret. The snapshot must be read by ConnectorX and the stream followed by the Go
decoder — over TLS, not handed to PyMySQL or python-mysql-replication — and the replica must equal
the source after inserts, updates, key changes and deletes while it streams. Every TCP session of
that server is encrypted, so ConnectorX's own statements in the server's general log (its
``CAST(... AS CHAR)`` select list) show it read over TLS; the run's log shows the Go decoder.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from binlog_support import Case, new_case

from harness.decoder import built_decoder
from harness.mariadb import start_server
from sparkcdc.testing.mariadb import MariaDBServer, tls_options
from sparkcdc.testing.pki import ServerPki, make_server_pki

ROWS = 3000
NAME = "tls-run"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> ServerPki:
    return make_server_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def tls_only(tmp_path_factory: pytest.TempPathFactory, pki: ServerPki) -> Iterator[MariaDBServer]:
    base = tmp_path_factory.mktemp("tls-mariadb")
    general_log = [f"--general-log-file={base / 'general.log'}", "--general-log=ON"]
    server = start_server(base, extra_options=[*tls_options(pki.ca, pki.cert, pki.key), *general_log])
    try:
        yield server
    finally:
        server.cleanup()


@pytest.fixture
def tls_case(tls_only: MariaDBServer, tmp_path: Path) -> Iterator[Case]:
    created = new_case(tls_only, tmp_path)
    try:
        yield created
    finally:
        created.cleanup()


def _manifest(case: Case, pki: ServerPki) -> Path:
    tls = {"mode": "verify-identity", "caSecretRef": {"name": "tls-ca", "key": "ca.crt"}}
    pipeline = case.pipeline(NAME, ["t"], source={"tls": tls}, snapshot={"chunkSize": 500})
    pipeline["spec"]["sink"]["tls"] = copy.deepcopy(tls)  # not a YAML alias of the source's
    ca = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "tls-ca"},
        "stringData": {"ca.crt": pki.ca_pem},
    }
    return case.manifest("tls.yaml", ca, pipeline)


def test_snapshot_and_stream_over_verified_tls_on_the_fast_paths(tls_case: Case, pki: ServerPki) -> None:
    """The snapshot on Spark tasks (the suite's default): the executors' ConnectorX verifies with
    the CA that came with the pipeline's settings, the sink's writers too."""
    assert built_decoder() is not None, "build the Go decoder first: bash binlogdec/build.sh"
    db = tls_case.db
    tls_case.execute(
        f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, v VARCHAR(32), n DECIMAL(12,2), at DATETIME(6))"
    )
    values = ", ".join(f"({i}, 'row {i} ü', {i}.5, '2024-01-02 03:04:05.{i:06d}')" for i in range(ROWS))
    tls_case.execute(f"INSERT INTO `{db}`.t VALUES {values}")
    manifest = _manifest(tls_case, pki)

    run = tls_case.start(manifest)
    with run:
        tls_case.wait_offset(run, NAME, tls_case.position(), timeout=300)  # snapshot done, streaming
        # The Python reader reads through the snapshot handoff, then the Go decoder takes over.
        trickle = iter(range(ROWS, ROWS + 1000))

        def on_the_go_decoder() -> bool:
            tls_case.execute(f"INSERT INTO `{db}`.t VALUES ({next(trickle)}, 'trickle', 1, NOW(6))")
            return "with the Go decoder" in run.result().stderr

        assert run.wait_for(on_the_go_decoder, 120, interval=0.5), run.result().describe()
        for r in range(20):
            tls_case.execute(f"INSERT INTO `{db}`.t VALUES ({ROWS + 2000 + r}, 'live {r}', {r}, NOW(6))")
            tls_case.execute(f"UPDATE `{db}`.t SET n = n + 1, v = CONCAT(v, '+') WHERE id % 20 = {r}")
            tls_case.execute(f"UPDATE `{db}`.t SET id = id + 100000 WHERE id = {r * 7 + 1}")
            tls_case.execute(f"DELETE FROM `{db}`.t WHERE id = {r * 11 + 500}")
        tls_case.wait_offset(run, NAME, tls_case.position(), timeout=120)
        run.kill()
    log = run.result().stderr
    assert "with the Go decoder" in log, log[-3000:]
    assert "the Go decoder stops" not in log and "binlog decoder" not in log, log[-3000:]
    assert "ConnectorX could not read" not in log and "PyMySQL reads" not in log, log[-3000:]
    general = (Path(tls_case.server.base_dir) / "general.log").read_text(errors="replace")
    read = [
        line for line in general.splitlines() if "CAST(`v` AS CHAR) AS `v`" in line and f"`{db}`.`t`" in line
    ]
    assert read, "ConnectorX did not read the snapshot"
    tls_case.assert_replica(NAME.replace("-", "_"), "t")


@pytest.mark.parametrize("end", ["source", "sink"])
def test_a_wrong_ca_stops_the_run_naming_the_field(
    tls_case: Case, pki: ServerPki, tmp_path: Path, end: str
) -> None:
    db = tls_case.db
    tls_case.execute(f"CREATE TABLE `{db}`.t (id INT PRIMARY KEY, v VARCHAR(32), n INT, at DATETIME(6))")
    tls_case.execute(f"INSERT INTO `{db}`.t VALUES (1, 'a', 1, NOW(6))")
    wrong = make_server_pki(tmp_path / "other-pki").ca_pem
    manifest = _manifest(tls_case, pki)
    documents = list(yaml.safe_load_all(manifest.read_text()))
    documents.append({**documents[1], "metadata": {"name": "wrong-ca"}, "stringData": {"ca.crt": wrong}})
    documents[2]["spec"][end]["tls"]["caSecretRef"]["name"] = "wrong-ca"
    manifest.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    result = tls_case.run(manifest, timeout=240)
    assert result.returncode != 0, result.describe()
    output = result.stderr + result.stdout
    assert f"check spec.{end}.tls" in output and "certificate verify failed" in output, result.describe()
    assert tls_case.server.cdc_password not in output
