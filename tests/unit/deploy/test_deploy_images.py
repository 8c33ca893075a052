"""The image build files agree with the project: versions, base images, users, entry points.

These read the Dockerfiles as text; tests/container runs the images they build.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from deploy_support import CHART, IMAGES, project_version, pyspark_pin, values

from sparkcdc.api.spec import DEFAULT_SPARK_IMAGE
from sparkcdc.controller.builders import SPARK_UID
from sparkcdc.options import EngineOptions
from sparkcdc.spark.session import delta_conf, delta_version
from sparkcdc.testing.containers import pins_of

DRIVER = IMAGES / "driver" / "Dockerfile"
OPERATOR = IMAGES / "operator" / "Dockerfile"
ENTRYPOINT = IMAGES / "driver" / "entrypoint.sh"
IMAGES_SCRIPT = IMAGES.parent / "hack" / "images.sh"
# The one image pulled from a registry (CI seeds it from Debian's packages: hack/images.sh).
BASE = "debian:bookworm-slim"


def arg_default(text: str, name: str) -> str:
    """The default of a global ``ARG name=value`` (before the first FROM)."""
    head = text.split("\nFROM ", 1)[0]
    match = re.search(rf"^ARG {name}=(\S+)$", head, re.M)
    assert match, f"no global ARG {name}=... before the first FROM"
    return str(match.group(1))


def stages(text: str) -> list[str]:
    return re.findall(r"^FROM (\S+)", text, re.M)


def stage_names(text: str) -> list[str]:
    return re.findall(r"^FROM \S+ AS (\S+)$", text, re.M)


def shared_prefix(text: str) -> str:
    """The stages up to the runtime (pybase, requirements, deps, wheel), which both images share."""
    start = text.index("\nFROM ")
    end = text.index("\n# -- ", text.index("\nFROM pybase AS wheel"))
    return text[start:end]


def last_user(text: str) -> str:
    users = re.findall(r"^USER (\S+)$", text, re.M)
    assert users, "no USER instruction"
    return str(users[-1])


def test_driver_image_versions_match_pyproject() -> None:
    text = DRIVER.read_text()
    assert arg_default(text, "SPARK_VERSION") == pyspark_pin()
    assert arg_default(text, "SPARKCDC_VERSION") == project_version()
    # Every stage redeclares the ARGs it uses without a default of its own (one source of truth).
    assert text.count("SPARK_VERSION=") == 1 and text.count("SPARKCDC_VERSION=") == 1


@pytest.mark.parametrize("dockerfile", [DRIVER, OPERATOR], ids=["driver", "operator"])
def test_images_start_from_debian_only(dockerfile: Path) -> None:
    """Every FROM is Debian bookworm-slim or an earlier stage: the only image a build pulls is one
    that CI can seed from Debian's packages."""
    text = dockerfile.read_text()
    names = stage_names(text)
    for i, base in enumerate(stages(text)):
        assert base == BASE or base in names[:i], base
    assert stages(text)[-1] == "deps"
    assert f"BASE=docker.io/library/{BASE}" in IMAGES_SCRIPT.read_text()


def test_both_images_share_their_python_and_dependency_stages() -> None:
    """Instruction for instruction the same, so podman builds these layers once for both images."""
    assert shared_prefix(DRIVER.read_text()) == shared_prefix(OPERATOR.read_text())
    prefix = shared_prefix(DRIVER.read_text())
    assert "python3 python3-venv" in prefix  # Python 3.11 from Debian
    assert "FROM pybase AS deps" in prefix and "pip install --no-cache-dir -r /tmp/requirements.txt" in prefix


def test_driver_image_installs_the_wheel_and_checks_versions() -> None:
    text = DRIVER.read_text()
    assert "pip wheel" in text
    assert 'sparkcdc-${SPARKCDC_VERSION}-py3-none-any.whl"' in text
    assert "pyspark.__version__ == '${SPARK_VERSION}'" in text
    assert "pip check" in text
    assert "openjdk-17-jre-headless" in text


def test_driver_image_runs_as_the_uid_the_operator_expects() -> None:
    text = DRIVER.read_text()
    assert last_user(text) == str(SPARK_UID) == "185"
    assert f"useradd --system --uid {SPARK_UID} " in text


def test_driver_image_starts_executors_like_sparks_image() -> None:
    """Spark on Kubernetes runs executor containers with the args ``executor``: the entry point turns
    the SPARK_* variables into Spark's executor command line (tests/container runs it)."""
    text = DRIVER.read_text()
    assert 'ENTRYPOINT ["/opt/entrypoint.sh"]' in text
    assert "COPY spark_images/driver/entrypoint.sh /opt/entrypoint.sh" in text
    assert ENTRYPOINT.stat().st_mode & 0o111 == 0o111
    script = ENTRYPOINT.read_text()
    assert "org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend" in script
    for var in ("SPARK_DRIVER_URL", "SPARK_EXECUTOR_ID", "SPARK_EXECUTOR_CORES", "SPARK_APPLICATION_ID",
                "SPARK_EXECUTOR_POD_IP", "SPARK_RESOURCE_PROFILE_ID", "SPARK_EXECUTOR_POD_NAME",
                "SPARK_EXECUTOR_MEMORY"):  # fmt: skip
        assert f'"${var}"' in script, var
    ignore = (IMAGES / "driver" / "Dockerfile.dockerignore").read_text().splitlines()
    assert "!spark_images/driver/entrypoint.sh" in ignore


def test_default_spark_image_is_this_image_at_the_project_version() -> None:
    assert f"ghcr.io/sparkcdc/sparkcdc-spark:{project_version()}" == DEFAULT_SPARK_IMAGE
    readme = (IMAGES / "README.md").read_text()
    assert "-t ghcr.io/sparkcdc/sparkcdc-spark:$VERSION" in readme
    assert f"ghcr.io/sparkcdc/sparkcdc-spark:{project_version()}" in DRIVER.read_text()


def test_operator_image_versions_and_user() -> None:
    text = OPERATOR.read_text()
    assert arg_default(text, "SPARKCDC_VERSION") == project_version()
    assert text.count("SPARKCDC_VERSION=") == 1
    user = last_user(text)
    assert re.fullmatch(r"\d+:\d+", user) and not user.startswith("0:"), user
    uid, gid = (int(x) for x in user.split(":"))
    security = values()["podSecurityContext"]
    assert (uid, gid) == (security["runAsUser"], security["runAsGroup"])
    assert 'ENTRYPOINT ["sparkcdc"]' in text and 'CMD ["operator"]' in text


def test_images_script_tags_what_the_chart_and_the_crd_expect() -> None:
    """``make images`` tags the images with the references the CRD's default spec.spark.image and the
    chart's default image use, so a locally built image is the one a pipeline or the chart runs."""
    script = IMAGES_SCRIPT.read_text()
    assert 'VERSION=$(sed -n \'s/^version = "\\(.*\\)"$/\\1/p\' "$ROOT/pyproject.toml"' in script
    spark = DEFAULT_SPARK_IMAGE.replace(project_version(), "$VERSION")
    operator = f"{values()['image']['repository']}:$VERSION"
    assert f'"{spark}" spark_images/driver/Dockerfile' in script
    assert f'"{operator}" spark_images/operator/Dockerfile' in script
    makefile = (IMAGES.parent / "Makefile").read_text()
    assert "\nimages:\n\t@bash hack/images.sh\n" in makefile
    ci = (IMAGES.parent / ".ci" / "run").read_text().splitlines()
    assert ci.index("make images") < ci.index("make test")


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
    conf = delta_conf(EngineOptions(spark_home=tmp_path))
    assert "spark.jars" not in conf and "spark.jars.packages" not in conf


def test_driver_image_carries_the_go_binlog_decoder() -> None:
    text = DRIVER.read_text()
    go_mod = (IMAGES.parent / "binlogdec" / "go.mod").read_text()
    directive = re.search(r"^go (\d+\.\d+\.\d+)$", go_mod, re.M)
    assert directive and arg_default(text, "GO_VERSION") == directive.group(1)
    # Go itself comes from the Go module proxy (the toolchain module), checked by sha256.
    assert "https://proxy.golang.org/golang.org/toolchain/@v/v0.0.1-go${GO_VERSION}.linux-${arch}.zip" in text
    for arch in ("AMD64", "ARM64"):
        assert re.fullmatch(r"[0-9a-f]{64}", arg_default(text, f"GO_SHA256_{arch}"))
    assert "FROM debian:bookworm-slim AS binlogdec" in text
    assert "bash binlogdec/build.sh" in text
    assert "COPY --from=binlogdec /sparkcdc-binlogdec /usr/local/bin/sparkcdc-binlogdec" in text
    assert "ENV SPARKCDC_BINLOG_DECODER=/usr/local/bin/sparkcdc-binlogdec" in text
    ignore = (IMAGES / "driver" / "Dockerfile.dockerignore").read_text().splitlines()
    assert {"!binlogdec/", "!hack/cache-dir.sh"} <= set(ignore)


@pytest.mark.parametrize("dockerfile", [DRIVER, OPERATOR], ids=["driver", "operator"])
def test_images_script_hashes_every_file_the_build_copies(dockerfile: Path) -> None:
    """An image is rebuilt when anything it copies from the context changes (its inputs hash), and
    the .dockerignore lets all of it through."""
    relative = dockerfile.relative_to(IMAGES.parent).as_posix()
    line = re.search(rf"{re.escape(relative)} \\\n\s+(.+)$", IMAGES_SCRIPT.read_text(), re.M)
    assert line, f"hack/images.sh does not build {relative}"
    inputs = line.group(1).split()
    ignore = set((dockerfile.parent / f"{dockerfile.name}.dockerignore").read_text().splitlines())
    copies = re.findall(r"^COPY (?!--)(.+) \S+$", dockerfile.read_text(), re.M)
    sources = [src.rstrip("/") for group in copies for src in group.split()]
    assert sources
    for src in sources:
        assert any(src == i or src.startswith(f"{i}/") for i in inputs), f"{src}: not an input of {relative}"
        assert f"!{src}" in ignore or f"!{src}/" in ignore, f"{dockerfile.name}.dockerignore leaves out {src}"


def test_pruning_a_sessions_pins_never_touches_the_built_images_tags() -> None:
    # podman lists every name of an image its reference filter matches: the e2e lane's pin of the
    # spark image also lists the ghcr.io tag the container lane's tests run at the same time.
    listed = [
        "ghcr.io/sparkcdc/sparkcdc-spark:0.1.0",
        "localhost/sparkcdc-e2e-spark:8ae9213254dc2ea2",
        "localhost/sparkcdc-e2e-spark:22b75f59a767cf20",
        "localhost/sparkcdc-e2e-spark-other:1",
    ]
    assert pins_of(listed, "localhost/sparkcdc-e2e-spark") == {
        "localhost/sparkcdc-e2e-spark:8ae9213254dc2ea2",
        "localhost/sparkcdc-e2e-spark:22b75f59a767cf20",
    }
