"""The built images run: what the Dockerfiles promise is checked inside real containers (podman).

Every run uses the pods' conditions by default: a read-only root filesystem with a tmpfs on /tmp and
the image's own user.
"""

from __future__ import annotations

import re
import socket

from sparkcdc.controller.builders import SPARK_UID
from sparkcdc.testing.containers import Images, image_config, run_image
from unit.deploy.deploy_support import project_version, pyspark_pin, values


def _closed_port() -> int:
    """A loopback port nothing listens on (it was free a moment ago): connecting to it is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_spark_image_runs_the_sparkcdc_cli(images: Images) -> None:
    result = run_image(images.spark, ["sparkcdc", "--help"])
    assert result.returncode == 0, result.stderr
    assert "usage: sparkcdc" in result.stdout and "driver" in result.stdout


def test_spark_image_python_side_matches_the_jvm_side(images: Images) -> None:
    """sparkcdc, pyspark, delta and deltalake (delta-rs) import; the Delta jars in
    $SPARK_HOME/jars are the installed delta-spark release and the Spark jars the pyspark release."""
    script = (
        "import os, delta, deltalake, pyspark, sparkcdc\n"
        "from importlib.metadata import version\n"
        "from sparkcdc.options import EngineOptions\n"
        "from sparkcdc.spark.session import delta_conf\n"
        "print(sparkcdc.__version__, pyspark.__version__, version('delta-spark'))\n"
        "print(' '.join(sorted(os.listdir(os.environ['SPARK_HOME'] + '/jars'))))\n"
        "print(sorted(delta_conf(EngineOptions.from_environment())))\n"
    )
    result = run_image(images.spark, ["python3", "-c", script])
    assert result.returncode == 0, result.stderr
    versions, jars, conf = result.stdout.splitlines()
    ours, spark, delta = versions.split()
    assert (ours, spark) == (project_version(), pyspark_pin())
    names = set(jars.split())
    assert {f"delta-spark_2.13-{delta}.jar", f"delta-storage-{delta}.jar"} <= names
    assert f"spark-core_2.13-{spark}.jar" in names and f"spark-kubernetes_2.13-{spark}.jar" in names
    # With the jars in place the driver resolves nothing from Maven at start.
    assert "spark.jars" not in conf and "spark.jars.packages" not in conf


def test_spark_image_carries_the_go_decoder(images: Images) -> None:
    """The decoder is where the engine's options (from the image's environment) find it, and it runs
    here (it reads its request first)."""
    script = (
        "from sparkcdc.mysql.binlog.native import decoder_path\n"
        "from sparkcdc.options import EngineOptions\n"
        "options = EngineOptions.from_environment()\n"
        "found = decoder_path(options.binlog_decoder, options.cache_dir); print(found)\n"
        "import subprocess\n"
        "p = subprocess.run([str(found)], input=b'not json', capture_output=True)\n"
        "print(p.returncode, p.stderr.decode().strip())\n"
    )
    result = run_image(images.spark, ["python3", "-c", script])
    assert result.returncode == 0, result.stderr
    path, answer = result.stdout.splitlines()
    assert path == "/usr/local/bin/sparkcdc-binlogdec"
    code, _, message = answer.partition(" ")
    assert int(code) != 0 and "reading the request" in message, answer


def test_spark_image_has_java_17(images: Images) -> None:
    result = run_image(images.spark, ["sh", "-c", 'echo "$JAVA_HOME"; "$JAVA_HOME/bin/java" -version'])
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "/usr/lib/jvm/java-17"
    assert re.search(r'version "17\.', result.stderr), result.stderr


def test_spark_image_runs_as_spark_with_a_read_only_root(images: Images) -> None:
    assert image_config(images.spark, "{{.Config.User}}") == str(SPARK_UID) == "185"
    script = "id -u; id -un; touch /opt/spark/work-dir/x 2>&1 || true; touch /tmp/x && echo tmp-writable"
    result = run_image(images.spark, ["sh", "-c", script])
    assert result.returncode == 0, result.stderr
    uid, name, refused, tmp = result.stdout.splitlines()
    assert (uid, name) == ("185", "spark")
    assert "Read-only file system" in refused
    assert tmp == "tmp-writable"


def test_entrypoint_starts_a_spark_executor_like_sparks_image(images: Images) -> None:
    """``executor`` with the SPARK_* variables Spark's Kubernetes backend sets on executor pods: the JVM
    starts Spark's KubernetesExecutorBackend with Spark's and Delta's jars on its class path and the
    SPARK_JAVA_OPT_n options in numeric order, then tries the driver (none here: refused)."""
    port = _closed_port()
    env = {
        "SPARK_DRIVER_URL": f"spark://CoarseGrainedScheduler@127.0.0.1:{port}",
        "SPARK_EXECUTOR_ID": "7",
        "SPARK_EXECUTOR_CORES": "1",
        "SPARK_APPLICATION_ID": "spark-0123456789",
        "SPARK_EXECUTOR_POD_IP": "127.0.0.1",
        "SPARK_RESOURCE_PROFILE_ID": "0",
        "SPARK_EXECUTOR_POD_NAME": "pipeline-exec-7",
        "SPARK_EXECUTOR_MEMORY": "256m",
        "SPARK_JAVA_OPT_0": "-XshowSettings:properties",
        "SPARK_JAVA_OPT_2": "-Dsparkcdc.probe=two",
        "SPARK_JAVA_OPT_10": "-Dsparkcdc.probe=ten",  # after _2: a numeric sort, not a lexical one
    }
    result = run_image(images.spark, ["executor"], env=env, timeout=180)
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    assert "sparkcdc.probe = ten" in out, out
    assert "java.specification.version = 17" in out, out
    assert "user.name = spark" in out, out
    for jar in ("/opt/spark/jars/spark-kubernetes_2.13-", "/opt/spark/jars/delta-spark_2.13-"):
        assert jar in out, f"{jar} not on the class path"
    # Spark's executor main ran, parsed its arguments and went for the driver.
    assert "org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend" in out, out
    assert f"127.0.0.1:{port}" in out and "Connection refused" in out, out


def test_entrypoint_runs_other_commands_as_given(images: Images) -> None:
    result = run_image(images.spark, ["echo", "pass-through"])
    assert (result.returncode, result.stdout) == (0, "pass-through\n"), result.stderr


def test_operator_image_runs_the_operator_cli(images: Images) -> None:
    security = values()["podSecurityContext"]
    user = f"{security['runAsUser']}:{security['runAsGroup']}"
    assert image_config(images.operator, "{{.Config.User}}") == user
    assert image_config(images.operator, "{{.Config.Entrypoint}}") == "[sparkcdc]"
    result = run_image(images.operator, ["--help"])
    assert result.returncode == 0, result.stderr
    assert "usage: sparkcdc" in result.stdout and "operator" in result.stdout
    script = "import kopf, sparkcdc, sparkcdc.controller.main, os; print(sparkcdc.__version__, os.getuid())"
    result = run_image(images.operator, ["-c", script], entrypoint="python3")
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [project_version(), str(security["runAsUser"])]
