"""The image build files agree with the project: versions, base images, users, entry points.

Docker is not available in the test environment, so the Dockerfiles are checked as text.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from deploy_support import CHART, IMAGES, project_version, pyspark_pin, values

from sparkcdc.api.spec import DEFAULT_SPARK_IMAGE
from sparkcdc.controller.builders import SPARK_UID
from sparkcdc.spark.session import delta_conf, delta_version

DRIVER = IMAGES / "driver" / "Dockerfile"
OPERATOR = IMAGES / "operator" / "Dockerfile"


def arg_default(text: str, name: str) -> str:
    """The default of a global ``ARG name=value`` (before the first FROM)."""
    head = text.split("\nFROM ", 1)[0]
    match = re.search(rf"^ARG {name}=(\S+)$", head, re.M)
    assert match, f"no global ARG {name}=... before the first FROM"
    return str(match.group(1))


def stages(text: str) -> list[str]:
    return re.findall(r"^FROM (\S+)", text, re.M)


def last_user(text: str) -> str:
    users = re.findall(r"^USER (\S+)$", text, re.M)
    assert users, "no USER instruction"
    return str(users[-1])


def test_driver_image_versions_match_pyproject() -> None:
    text = DRIVER.read_text()
    assert arg_default(text, "SPARK_VERSION") == pyspark_pin()
    assert arg_default(text, "SPARKCDC_VERSION") == project_version()
    assert stages(text)[-1] == "apache/spark:${SPARK_VERSION}-scala2.13-java17-python3-ubuntu"
    # Every stage redeclares the ARGs it uses without a default of its own (one source of truth).
    assert text.count("SPARK_VERSION=") == 1 and text.count("SPARKCDC_VERSION=") == 1


def test_driver_image_installs_the_wheel_and_checks_versions() -> None:
    text = DRIVER.read_text()
    assert "pip wheel" in text
    assert 'sparkcdc-${SPARKCDC_VERSION}-py3-none-any.whl"' in text
    assert "pyspark.__version__ == '${SPARK_VERSION}'" in text


def test_driver_image_runs_as_the_uid_the_operator_expects() -> None:
    text = DRIVER.read_text()
    assert last_user(text) == str(SPARK_UID) == "185"
    assert "ENTRYPOINT" not in text.replace("# ENTRYPOINT", "")  # executors need the base entrypoint


def test_default_spark_image_is_this_image_at_the_project_version() -> None:
    assert f"ghcr.io/sparkcdc/sparkcdc-spark:{project_version()}" == DEFAULT_SPARK_IMAGE
    readme = (IMAGES / "README.md").read_text()
    assert "-t ghcr.io/sparkcdc/sparkcdc-spark:$VERSION" in readme
    assert f"ghcr.io/sparkcdc/sparkcdc-spark:{project_version()}" in DRIVER.read_text()


def test_operator_image_versions_and_user() -> None:
    text = OPERATOR.read_text()
    assert arg_default(text, "SPARKCDC_VERSION") == project_version()
    python_image = arg_default(text, "PYTHON_IMAGE")
    match = re.fullmatch(r"python:3\.(\d+)-slim-\w+", python_image)
    assert match and int(match.group(1)) >= 10, python_image  # requires-python >= 3.10
    assert stages(text) == ["${PYTHON_IMAGE}", "${PYTHON_IMAGE}"]
    user = last_user(text)
    assert re.fullmatch(r"\d+:\d+", user) and not user.startswith("0:"), user
    uid, gid = (int(x) for x in user.split(":"))
    security = values()["podSecurityContext"]
    assert (uid, gid) == (security["runAsUser"], security["runAsGroup"])
    assert 'ENTRYPOINT ["sparkcdc"]' in text and 'CMD ["operator"]' in text


def test_chart_points_at_the_operator_image() -> None:
    readme = (IMAGES / "README.md").read_text()
    repository = values()["image"]["repository"]
    assert f"-t {repository}:$VERSION" in readme
    assert f"{repository}:{project_version()}" in OPERATOR.read_text()
    deployment = (CHART / "templates" / "deployment.yaml").read_text()
    assert 'command: ["sparkcdc", "operator"]' in deployment


def test_ports_match_the_chart() -> None:
    v = values()
    assert f"EXPOSE {v['metrics']['port']} {v['health']['port']}" in OPERATOR.read_text()


def test_driver_image_ships_the_delta_jars_where_the_driver_looks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The Dockerfile copies the Ivy-cached jars into /opt/spark/jars without their ``io.delta_``
    prefix; with jars named so in $SPARK_HOME/jars the driver resolves nothing at start."""
    text = DRIVER.read_text()
    assert "python3 -m sparkcdc.spark.session fetch-delta-jars" in text
    assert "sed 's/^io\\.delta_//'" in text and 'cp "$jar" "/opt/spark/jars/' in text
    cached = [Path(f"/cache/ivy/jars/io.delta_delta-spark_2.13-{delta_version()}.jar"),
              Path(f"/cache/ivy/jars/io.delta_delta-storage-{delta_version()}.jar")]  # fmt: skip
    jars = tmp_path / "jars"
    jars.mkdir()
    for jar in cached:
        (jars / jar.name.removeprefix("io.delta_")).write_bytes(b"")
    monkeypatch.setenv("SPARK_HOME", str(tmp_path))
    conf = delta_conf()
    assert "spark.jars" not in conf and "spark.jars.packages" not in conf


def test_driver_image_carries_the_go_binlog_decoder() -> None:
    text = DRIVER.read_text()
    go_mod = (IMAGES.parent / "hack" / "binlogdec" / "go.mod").read_text()
    directive = re.search(r"^go (\d+\.\d+)", go_mod, re.M)
    assert directive and arg_default(text, "GO_VERSION") == directive.group(1)
    assert "golang:${GO_VERSION}-bookworm AS binlogdec" in text
    assert "bash hack/binlogdec.sh" in text
    assert "COPY --from=binlogdec /sparkcdc-binlogdec /usr/local/bin/sparkcdc-binlogdec" in text
    assert "ENV SPARKCDC_BINLOG_DECODER=/usr/local/bin/sparkcdc-binlogdec" in text
    ignore = (IMAGES / "driver" / "Dockerfile.dockerignore").read_text().splitlines()
    assert {"!hack/binlogdec.sh", "!hack/binlogdec/"} <= set(ignore)
