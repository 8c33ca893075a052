"""Keeping credentials out of the spec: object-store credentials by Secret reference, and URLs
refused when they carry a password, a key or a token.

A CdcPipeline is stored in plain text in etcd, in Git and in ``kubectl get -o yaml``; anything
secret in it is readable by everyone who may read the resource. So the sink's credentials are
``secretKeyRef``s (the driver turns them into Hadoop options, ``spark/credentials.py``) and a
URL that embeds one is refused both here and by the CRD's CEL rules, which share the regular
expressions below, so ``sparkcdc validate`` and ``kubectl apply`` refuse the same manifests.
Messages name the offending part (a parameter's name, ``user:password@``) but never its value.
"""

from __future__ import annotations

import re
from typing import Annotated
from urllib.parse import unquote

from pydantic import Field, StringConstraints, field_validator
from pydantic.config import JsonDict

from sparkcdc.api.base import ApiModel, SecretKeyRef, SpecError, cel, cel_string

__all__ = [
    "CREDENTIALS_DESCRIPTION",
    "CREDENTIAL_QUERY",
    "HADOOP_CREDENTIAL_KEY",
    "JDBC_URL_RULE",
    "Credentials",
    "ObjectPath",
    "ObjectStoreCredential",
    "check_object_path",
    "check_unique_keys",
    "credential_param",
]

# Query parameter names that carry a credential (case-insensitive): the user and password a JDBC
# driver would take from the URL, and the parts of signed or SAS URLs (sig, sv, X-Amz-Signature,
# X-Amz-Credential, X-Amz-Security-Token, ...). Deliberately broad: a parameter refused by mistake
# costs an edit, a secret accepted by mistake sits in etcd and Git.
_CREDENTIAL_NAME = (
    r"(user|username|uid|pass|sig|sv|key|[-_.a-z0-9]*(password|passwd|passphrase|pwd|secret|token"
    r"|credential|signature|accesskey|access_key|access-key|apikey|api_key|api-key)[-_.a-z0-9]*)"
)
# RE2 (CEL) and Python read this alike. Only names count: a value containing "token" is fine.
CREDENTIAL_QUERY = rf"(?i)^[^?#]*[?]([^#]*[&;])?{_CREDENTIAL_NAME}(=|[&;#]|$)"
# user:password@ in the authority, or any user@ except Azure's container@account form.
_HAS_USERINFO = r"^[A-Za-z][-A-Za-z0-9+.]*://[^/?#]*@"
_AZURE_CONTAINER = r"^(?i:wasbs?|abfss?)://[^/?#:@]*@"
_HAS_USERINFO_RX = re.compile(_HAS_USERINFO)
_AZURE_CONTAINER_RX = re.compile(_AZURE_CONTAINER)
_QUERY_NAME_RX = re.compile(rf"(?i)^{_CREDENTIAL_NAME}$")

JDBC_URL_RULE = cel(
    f"!self.matches({cel_string(CREDENTIAL_QUERY)})",
    "must not carry credentials in query parameters (user, password, token, ...): give the user in "
    "user and the password in passwordSecretRef",
)
_PATH_RULES = [
    cel(
        f"!self.matches({cel_string(_HAS_USERINFO)}) || self.matches({cel_string(_AZURE_CONTAINER)})",
        "must not carry credentials (user:secret@ or key@): give them in credentials as secretKeyRefs, "
        "or use a workload identity",
    ),
    cel(
        f"!self.matches({cel_string(CREDENTIAL_QUERY)})",
        "must not carry credentials in query parameters (sig, sv, password, token, ...): give them in "
        "credentials as secretKeyRefs, or use a workload identity",
    ),
]
_PATH_EXTRA: JsonDict = {"x-kubernetes-validations": list(_PATH_RULES)}

# A Hadoop filesystem option, e.g. fs.s3a.secret.key or fs.azure.account.key.ACCOUNT.dfs.core.windows.net.
HADOOP_CREDENTIAL_KEY = r"^fs\.[A-Za-z0-9][-A-Za-z0-9_.]*$"
_HADOOP_CREDENTIAL_KEY_RX = re.compile(HADOOP_CREDENTIAL_KEY)
CREDENTIALS_DESCRIPTION = (
    "Object-store credentials: Hadoop filesystem options whose values are Secret keys, set on the "
    "Hadoop configuration of the driver's Spark session (which ships them to executor tasks), never "
    "in its settings or a pod spec, e.g. [{key: fs.s3a.access.key, secretKeyRef: {name: lake, key: "
    "access-key}}, {key: fs.s3a.secret.key, secretKeyRef: {name: lake, key: secret-key}}]. Empty: "
    "the connector's default provider chain (a workload identity of the pipeline's ServiceAccount, "
    "an instance profile); docs/delta.md."
)


def credential_param(url: str) -> str | None:
    """The name of the first query parameter of ``url`` that carries a credential, or None.

    Names are also compared percent-decoded (``pass%77ord``), which the CEL rule cannot do.
    """
    if "?" not in url.split("#", 1)[0]:
        return None
    query = url.split("#", 1)[0].split("?", 1)[1]
    for part in re.split(r"[&;]", query):
        name = part.split("=", 1)[0]
        if _QUERY_NAME_RX.match(name) or _QUERY_NAME_RX.match(unquote(name)):
            return unquote(name)
    return None


OBJECT_STORE_REMEDY = (
    "give them in credentials as secretKeyRefs, or leave credentials empty to use a workload identity"
)


def check_object_path(path: str, remedy: str = OBJECT_STORE_REMEDY) -> str:
    """``path`` when it carries no credential; SpecError (without the value, with ``remedy``) otherwise."""
    if _HAS_USERINFO_RX.match(path) and not _AZURE_CONTAINER_RX.match(path):
        raise SpecError(f"must not carry credentials (user:secret@ or key@ before the host): {remedy}")
    name = credential_param(path)
    if name is not None:
        raise SpecError(
            f"must not carry credentials: query parameter {name!r} is part of one (a password, token, "
            f"signature or SAS); {remedy}"
        )
    return path


ObjectPath = Annotated[
    str,
    StringConstraints(min_length=1, max_length=4096),
    Field(json_schema_extra=_PATH_EXTRA),
]


class ObjectStoreCredential(ApiModel):
    """One Hadoop filesystem option whose value is a Secret key."""

    key: Annotated[str, StringConstraints(min_length=1, max_length=253)] = Field(
        description="The Hadoop option, without spark.hadoop.: fs.s3a.access.key, fs.s3a.secret.key, "
        "fs.s3a.session.token, fs.s3a.bucket.BUCKET.secret.key, "
        "fs.azure.account.key.ACCOUNT.dfs.core.windows.net, fs.gs.auth.service.account.private.key, ...",
        json_schema_extra={"pattern": HADOOP_CREDENTIAL_KEY},
    )
    secret_key_ref: SecretKeyRef = Field(description="The Secret key holding the option's value.")

    @field_validator("key")
    @classmethod
    def _check_key(cls, value: str) -> str:
        # The key is not repeated: a value pasted into the wrong field must not reach a message.
        if value.startswith("spark.hadoop."):
            raise SpecError("write the Hadoop option without spark.hadoop. (e.g. fs.s3a.secret.key)")
        if not _HADOOP_CREDENTIAL_KEY_RX.match(value):
            raise SpecError(
                "must be a Hadoop filesystem option starting with fs., of letters, digits, '.', '-' "
                "and '_' (e.g. fs.s3a.secret.key)"
            )
        return value


def check_unique_keys(credentials: list[ObjectStoreCredential]) -> list[ObjectStoreCredential]:
    seen: set[str] = set()
    for index, credential in enumerate(credentials):
        if credential.key in seen:
            raise SpecError(
                "an option is given twice; each key may appear once in credentials", loc=(index, "key")
            )
        seen.add(credential.key)
    return credentials


Credentials = Annotated[
    list[ObjectStoreCredential],
    Field(
        max_length=32,
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["key"]},
    ),
]
