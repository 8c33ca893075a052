"""Pieces of ``sparkcdc driver`` that are not the main sequence: secrets, resnapshot, termination."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from pydantic import SecretStr

from sparkcdc.api.base import SecretKeyRef
from sparkcdc.api.errors import SecretRefError
from sparkcdc.api.resource import CdcPipeline
from sparkcdc.controller.builders import secret_env_name
from sparkcdc.core.checkpoint import Checkpoint
from sparkcdc.core.tables import TableId
from sparkcdc.engine.runtime import SecretResolver

if TYPE_CHECKING:  # sparkcdc run watches its spec with these helpers too, without the kube client
    from sparkcdc.kube.status_store import StatusCheckpointStore

log = logging.getLogger("sparkcdc.driver")
RESNAPSHOT_KEY = "resnapshotNonce"  # carried in the checkpoint document: the nonce already applied
TERMINATION_LOG = "/dev/termination-log"


def env_secrets(env: Mapping[str, str]) -> SecretResolver:
    """Resolve a secret reference from the env var the pod builder mapped it to."""

    def resolve(ref: SecretKeyRef, field_path: str) -> SecretStr:
        name = secret_env_name(field_path)
        if name not in env:
            raise SecretRefError(
                f"{field_path}: no value in ${name}: the driver pod was not given Secret "
                f"{ref.name!r} key {ref.key!r} (was the spec changed without restarting the driver?)",
                field_path=field_path,
                secret=ref.name,
                key=ref.key,
            )
        return SecretStr(env[name])

    return resolve


def with_assigned_server_ids(pipeline: CdcPipeline) -> CdcPipeline:
    """The operator's ``status.serverIdRange`` as the spec's serverId when the spec names none."""
    assigned = pipeline.status.server_id_range if pipeline.status else None
    source = pipeline.spec.source
    if source.server_id is not None or not assigned:
        return pipeline
    spec = pipeline.spec.model_copy(update={"source": source.model_copy(update={"server_id": assigned})})
    return pipeline.model_copy(update={"spec": spec})


def apply_resnapshot(store: StatusCheckpointStore, pipeline: CdcPipeline) -> None:
    """A new ``spec.resnapshotNonce``: forget the chosen tables' snapshot progress, once.

    The nonce goes into the same checkpoint write, so a crash either re-does or keeps the reset,
    and a restart after it never resets again. The snapshot phase then plans the tables anew.
    """
    nonce = pipeline.spec.resnapshot_nonce
    if nonce is None:
        return
    checkpoint = store.load()
    applied = store.carried(RESNAPSHOT_KEY)
    store.carry(RESNAPSHOT_KEY, nonce)
    if checkpoint is None or applied == nonce:
        return  # a first run snapshots everything anyway
    chosen = pipeline.spec.resnapshot_tables
    tables = [TableId.parse(t) for t in chosen] if chosen else list(checkpoint.plans)
    log.info("resnapshot %s requested: snapshotting %s again", nonce, ", ".join(map(str, tables)))
    store.save(drop_tables(checkpoint, tables))
    store.flush()


def drop_tables(checkpoint: Checkpoint, tables: Sequence[TableId]) -> Checkpoint:
    gone = set(tables)
    return replace(
        checkpoint,
        tables={t: s for t, s in checkpoint.tables.items() if t not in gone},
        plans={t: p for t, p in checkpoint.plans.items() if t not in gone},
        finished={t: f for t, f in checkpoint.finished.items() if t not in gone},
        snapshot_done=checkpoint.snapshot_done and not gone,
    )


def write_termination_message(text: str) -> None:
    """What ``kubectl describe`` and the operator show as the reason the driver ended: the file at
    the pod's ``terminationMessagePath`` (the default). Outside a pod there is none: only logged."""
    try:
        with open(TERMINATION_LOG, "w", encoding="utf-8") as out:
            out.write(text[-4000:])
    except OSError:
        log.warning("could not write the termination message to %s", TERMINATION_LOG)
