"""Object-store credentials given by ``secretKeyRef`` reach the Spark session of ``sparkcdc run``
and nothing else: its Hadoop configuration holds them, the JVM's command line and SparkConf do
not, and no line the run writes (Python loggers at DEBUG, Py4J's included, and Spark's own log)
holds a value. The run writes its Delta table into a local path, where the options are inert,
so the same code path is proven without an object store."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import yaml
from delta_support import delta_sink

from harness.runner import pipeline_manifest, subprocess_env
from sparkcdc.testing.mariadb import MariaDBServer

HERE = Path(__file__).resolve().parent
VALUES = {
    "fs.s3a.access.key": "AKIAEXAMPLEKEY0001",
    "fs.s3a.secret.key": "s3-Secret/Value+0001",
    "fs.azure.account.key.acct.dfs.core.windows.net": "YXp1cmUta2V5LXZhbHVlLTAwMDE=",
}
SECRET_KEYS = {
    "fs.s3a.access.key": "access-key",
    "fs.s3a.secret.key": "secret-key",
    "fs.azure.account.key.acct.dfs.core.windows.net": "azure-key",
}


def test_credentials_reach_the_hadoop_configuration_and_no_output(
    mariadb: MariaDBServer, fresh_db: str, tmp_path: Path
) -> None:
    mariadb.execute(f"CREATE TABLE `{fresh_db}`.items (id INT PRIMARY KEY, name VARCHAR(20))")
    mariadb.execute(f"INSERT INTO `{fresh_db}`.items VALUES (1, 'a'), (2, 'b'), (3, 'c')")
    credentials = [
        {"key": key, "secretKeyRef": {"name": "lake-keys", "key": SECRET_KEYS[key]}} for key in VALUES
    ]
    assert mariadb.cdc_password
    manifest = pipeline_manifest(
        tmp_path / "pipeline.yaml",
        name="lake-credentials",
        host=mariadb.host,
        port=mariadb.port,
        password=mariadb.cdc_password,
        tables=[f"{fresh_db}.items"],
        sink=delta_sink(tmp_path / "lake", credentials=credentials),
    )
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "lake-keys"},
        "stringData": {SECRET_KEYS[key]: value for key, value in VALUES.items()},
    }
    with manifest.open("a", encoding="utf-8") as out:
        out.write("---\n" + yaml.safe_dump(secret))

    result = subprocess.run(
        [sys.executable, str(HERE / "credentials_run.py"), str(manifest), str(tmp_path / "state")],
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["code"] == 0, output[-4000:]
    assert report["hadoop"] == {key: hashlib.sha256(v.encode()).hexdigest() for key, v in VALUES.items()}
    assert report["in_spark_conf"] is False
    assert report["in_jvm_argv"] is False
    # The run wrote the table, with the session that holds the credentials.
    assert list((tmp_path / "lake" / fresh_db / "items" / "_delta_log").glob("*.json"))
    # DEBUG logging reached the output (so its silence about the values means something).
    assert "DEBUG" in result.stderr
    for value in VALUES.values():
        assert value not in output
