"""What ``spec.spark.conf`` may not set, in one place for the pydantic model and the CRD's CEL rules.

Whoever may create a CdcPipeline runs a driver pod as that pipeline's ServiceAccount. The operator
decides that pod's shape: its image (checked against the operator's allow-list), where Spark runs,
the executor pod template, how driver and executors authenticate each other. Spark reads most of
those decisions from its own configuration, so a free ``spec.spark.conf`` would undo them: another
image or service account for executors (``spark.kubernetes.*``), code from anywhere
(``spark.jars``, ``extraClassPath``, plugins, listeners, Python workers), commands run by the JVM
(``-XX:OnOutOfMemoryError`` in ``extraJavaOptions``), or traffic without authentication. Those keys
are refused, and so are keys that look like credentials: a value in the spec is readable by
everyone who may read the pipeline, so credentials go into Secrets.

The patterns are RE2 as well as Python regular expressions: the API server evaluates them in the
CRD's ``x-kubernetes-validations`` (a ``kubectl apply`` is refused there), the models evaluate
them for ``sparkcdc validate``, ``sparkcdc run`` and the operator. Keys the product needs users to
set stay open: ``spark.sql.*`` (shuffle partitions, extensions), ``spark.executor.*`` and
``spark.driver.*`` resources, ``spark.hadoop.*`` (object-store endpoints), ``spark.dynamicAllocation.*``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from pydantic.config import JsonValue

from sparkcdc.api.base import SpecError, cel, cel_string

__all__ = [
    "CREDENTIAL_KEY",
    "JAVA_OPTIONS_KEY",
    "JVM_TUNING",
    "PROVIDER_KEY",
    "REFUSED_KEY",
    "REFUSED_KEYS",
    "check_spark_conf",
    "conf_rules",
]

# (pattern of refused keys, why). Anchored at the start: a key refused here is refused whatever follows.
REFUSED_KEYS: tuple[tuple[str, str], ...] = (
    (r"spark\.kubernetes\.", "the operator decides the pods' image, account, template and namespace"),
    (r"spark\.master$", "set spec.spark.master instead"),
    (r"spark\.remote$", "the pipeline's Spark runs where spec.spark.master says"),
    (r"spark\.submit\.", "the operator starts Spark in client mode"),
    (r"spark\.jars", "the image's code runs, nothing fetched at start"),
    (r"spark\.(files|archives)$", "the image's code runs, nothing fetched at start"),
    (r"spark\.(.+\.)?extra(ClassPath|LibraryPath)$", "the image's code runs, nothing added to its paths"),
    (r"spark\.(.+\.)?plugins", "plugins run code of the operator's choosing only"),
    (r"spark\.extraListeners$", "listeners run code of the operator's choosing only"),
    (r"spark\.sql\.(queryExecutionListeners|streaming\.streamingQueryListeners)$", "listeners run code"),
    (r"spark\.(.+\.)?discoveryScript$", "a resource discovery script runs a command"),
    (r"spark\.executorEnv\.", "executor environment variables can load code (LD_PRELOAD, JAVA_TOOL_OPTIONS)"),
    (r"spark\.(pyspark|r)\.", "the image's Python runs the workers"),
    (r"spark\.sql\.execution\.pyspark\.python$", "the image's Python runs the workers"),
    (r"spark\.python\.(daemon|worker)\.module$", "the image's Python runs the workers"),
    (r"spark\.sql\.hive\.metastore\.jars", "the image's code runs, nothing fetched at start"),
    (r"spark\.metrics\.conf", "metrics sinks load classes; the driver serves its metrics itself"),
    (r"spark\.driver\.(host|bindAddress|port|blockManager\.port)$", "the operator sets the driver's network"),
    (r"spark\.blockManager\.port$", "the operator sets the driver's network"),
    (r"spark\.local\.dir$", "the operator mounts Spark's scratch space"),
    (r"spark\.ui\.", "the Spark UI would serve the pipeline's jobs without authentication"),
    (r"spark\.(sql\.)?redaction\.", "redaction keeps secrets out of Spark's logs"),
    (r"spark\.authenticate", "the operator keys Spark's authentication per pipeline"),
    (r"spark\.network\.crypto\.", "the operator encrypts Spark's traffic"),
    (r"spark\.ssl\.", "the operator secures Spark's traffic"),
    (r"spark\.kerberos\.", "credentials belong in Secrets"),
)
REFUSED_KEY = "^(" + "|".join(pattern for pattern, _ in REFUSED_KEYS) + ")"

# Credentials by their usual names (Hadoop's S3A, ABFS, WASB and GCS connectors, JDBC). A key
# naming a provider class (fs.s3a.aws.credentials.provider, fs.azure.sas.token.provider.type)
# holds a class name, not a secret.
CREDENTIAL_KEY = (
    r"(?i)(passw(or)?d|secret|token|access[._-]?key|account\.key|private[._-]?key|encryption[._-]?key"
    r"|fs\.azure\.sas\.)"
)
PROVIDER_KEY = r"(?i)provider"

# The JVM's options may only tune it: -XX:+Flag, -XX:-Flag and -XX:Flag=<number>. Options naming
# a file or a command (-javaagent:, -XX:OnOutOfMemoryError=, -XX:Flags=, -D..., @argfiles) are
# refused, since they load code or run commands.
JAVA_OPTIONS_KEY = r"^spark\.(driver|executor)\.(extra|default)JavaOptions$"
JVM_TUNING = r"^\s*(-XX:([+-][A-Za-z][A-Za-z0-9]*|[A-Za-z][A-Za-z0-9]*=[0-9]+(\.[0-9]+)?[kKmMgGtT]?)\s*)*$"

_REFUSED = [(re.compile(pattern), why) for pattern, why in REFUSED_KEYS]
_CREDENTIAL_RX = re.compile(CREDENTIAL_KEY)
_PROVIDER_RX = re.compile(PROVIDER_KEY)
_JAVA_OPTIONS_RX = re.compile(JAVA_OPTIONS_KEY)
_JVM_TUNING_RX = re.compile(JVM_TUNING)

REFUSED_MESSAGE = (
    "must not set spark.kubernetes.*, spark.master, spark.submit.*, spark.jars*, extraClassPath, "
    "extraLibraryPath, plugins, listeners, Python or R executables, executorEnv, the driver's network, "
    "spark.ui.*, redaction, spark.authenticate*, spark.ssl.* or spark.network.crypto.*: the operator sets "
    "where and how the pipeline's pods run and what code they load (docs/install.md, Security model)"
)
CREDENTIAL_MESSAGE = (
    "must not hold credentials (keys naming a password, secret, token, access key or account key): put "
    "them in a Secret and name it in spec.sink.credentials (secretKeyRef)"
)
JVM_MESSAGE = (
    "spark.driver.extraJavaOptions, spark.executor.extraJavaOptions and their defaultJavaOptions may only "
    "hold JVM tuning flags (-XX:+Flag, -XX:-Flag, -XX:Flag=number): other options load code or run commands"
)


def check_spark_conf(conf: Mapping[str, str]) -> None:
    """Raise SpecError, located at the key, for the first key ``conf`` may not set.

    The location names the key; messages never show its value, which may be a credential.
    """
    for key, value in conf.items():
        refused = next((why for rx, why in _REFUSED if rx.match(key)), None)
        if refused is not None:
            raise SpecError(
                f"not allowed in spec.spark.conf: {refused} (docs/install.md, Security model)",
                loc=(key,),
            )
        if _CREDENTIAL_RX.search(key) and not _PROVIDER_RX.search(key):
            raise SpecError(
                "looks like a credential, which spec.spark.conf must not hold (anyone who may read "
                "the pipeline reads it): put it in a Secret and name it in spec.sink.credentials "
                "(secretKeyRef)",
                loc=(key,),
            )
        if _JAVA_OPTIONS_RX.match(key) and not _JVM_TUNING_RX.match(value):
            raise SpecError(
                "may only hold JVM tuning flags (-XX:+Flag, -XX:-Flag, -XX:Flag=number): other "
                "options load code or run commands (-javaagent:, -XX:OnOutOfMemoryError=, -D...)",
                loc=(key,),
            )


def conf_rules() -> list[JsonValue]:
    """The CEL rules of ``spec.spark.conf`` (a map: ``self.all`` runs over its keys)."""
    return [
        cel(f"self.all(k, !k.matches({cel_string(REFUSED_KEY)}))", REFUSED_MESSAGE),
        cel(
            f"self.all(k, !k.matches({cel_string(CREDENTIAL_KEY)}) || k.matches({cel_string(PROVIDER_KEY)}))",
            CREDENTIAL_MESSAGE,
        ),
        cel(
            f"self.all(k, !k.matches({cel_string(JAVA_OPTIONS_KEY)})"
            f" || self[k].matches({cel_string(JVM_TUNING)}))",
            JVM_MESSAGE,
        ),
    ]
