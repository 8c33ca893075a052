"""``sparkcdc run``: pipelines from manifest files on a local Spark, checkpoints in a directory.

Each pipeline follows edits of its manifest's table selection while it streams
(``spec_watch.ManifestWatch``): tables added are snapshotted beside the stream, tables removed stop.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import SecretStr
from rich.console import Console

from sparkcdc.api.base import SecretKeyRef
from sparkcdc.api.manifest import LoadedPipeline, Manifest
from sparkcdc.api.spec import memory_mib
from sparkcdc.core.fence import pipeline_key
from sparkcdc.driver.progress import RichProgress
from sparkcdc.driver.spec_watch import ManifestWatch, manifest_files
from sparkcdc.engine.enumerator import SplitEnumerator
from sparkcdc.engine.runtime import PipelineRuntime, build_runtime
from sparkcdc.engine.table_failures import failed_tables
from sparkcdc.exit_codes import EXIT_OK, EXIT_TABLES_FAILED
from sparkcdc.options import EngineOptions
from sparkcdc.sinks.base import start_driver_session_with, writes_in_driver
from sparkcdc.spark.credentials import HadoopCredentials, merged_credentials, sink_credentials
from sparkcdc.spark.lazy_session import LazySession
from sparkcdc.spark.session import create_context, create_session, delta_conf, local_master
from sparkcdc.state.file_store import FileCheckpointStore

log = logging.getLogger(__name__)

JVM_LOG_NAME = "spark-jvm.log"  # below the state directory


def runtimes_of(manifest: Manifest, options: EngineOptions | None = None) -> list[PipelineRuntime]:
    """The manifest's pipelines with secrets resolved and the engine's options (default: from
    this process's environment: ``sparkcdc run`` is a composition root)."""
    options = EngineOptions.from_environment() if options is None else options
    out = []
    for loaded in manifest.pipelines:
        namespace = loaded.pipeline.metadata.namespace

        def resolve(ref, path, _ns=namespace):  # type: ignore[no-untyped-def]
            return manifest.resolve_secret(ref, path, namespace=_ns)

        out.append(build_runtime(loaded.pipeline, resolve, options))
    return out


def manifest_credentials(manifest: Manifest) -> HadoopCredentials:
    """The object-store credentials of the manifest's pipelines, from its Secret documents."""

    def of(loaded: LoadedPipeline) -> HadoopCredentials:
        namespace = loaded.pipeline.metadata.namespace

        def resolve(ref: SecretKeyRef, path: str) -> SecretStr:
            return manifest.resolve_secret(ref, path, namespace=namespace)

        return sink_credentials(loaded.pipeline.spec.sink, resolve)

    return merged_credentials((loaded.name, of(loaded)) for loaded in manifest.pipelines)


def with_jvm_log(options: EngineOptions, state_dir: Path) -> EngineOptions:
    """``options`` with the local JVM's output in ``<state dir>/spark-jvm.log`` unless chosen."""
    if options.jvm_log is not None:
        return options
    return replace(options, jvm_log=state_dir / JVM_LOG_NAME)


def sink_spark_conf(
    runtimes: Sequence[PipelineRuntime], parallelism: int, options: EngineOptions
) -> dict[str, str]:
    """Session settings the pipelines' sinks need: Delta's jars and extension for a delta sink."""
    if any(writes_in_driver(r.sink) for r in runtimes):
        return delta_conf(options, snapshot_partitions=parallelism)
    return {}


def local_driver_conf(runtimes: Sequence[PipelineRuntime]) -> dict[str, str]:
    """The local JVM's heap, as a driver pod's: the largest ``spec.spark.driver.memory`` of the
    pipelines it serves (Spark's launcher reads the setting before the JVM starts)."""
    mib = max((memory_mib(r.pipeline.spec.spark.driver.memory) for r in runtimes), default=0)
    return {"spark.driver.memory": f"{mib}m"} if mib else {}


def run_local(
    manifest: Manifest,
    state_dir: Path,
    *,
    exit_when_caught_up: bool,
    options: EngineOptions | None = None,
    console: Console | None = None,
) -> int:
    """Run every pipeline of ``manifest`` side by side; returns the process exit code.
    ``options``: the engine's switches (default: from the environment); ``console``: where
    progress goes (default: stderr)."""
    engine = with_jvm_log(EngineOptions.from_environment() if options is None else options, state_dir)
    runtimes = runtimes_of(manifest, engine)
    parallelism = max(r.pipeline.spec.snapshot.parallelism for r in runtimes)
    conf = sink_spark_conf(runtimes, parallelism, engine)
    jvm = local_driver_conf(runtimes)
    credentials = manifest_credentials(manifest)
    master = local_master(parallelism)
    spark: Any
    if conf:  # a sink that writes from the driver (Delta) starts the session when it needs it
        spark = LazySession(
            lambda: create_session("sparkcdc-local", master, engine, {**jvm, **conf}, credentials), master
        )
        start_driver_session_with(spark.get)
    else:  # only RDD jobs: the context alone, started when a snapshot needs it (enumerator.py)
        spark = LazySession(
            lambda: create_context("sparkcdc-local", master, engine, jvm, credentials), master
        )
    stop = threading.Event()
    files = manifest_files(manifest)
    errors: list[BaseException] = []
    failed: list[str] = []  # "pipeline: message" of every failed table
    try:
        with RichProgress(console) as display:
            threads = [
                threading.Thread(
                    target=_run_guarded,
                    args=(r, files, state_dir, spark, display, exit_when_caught_up, stop, errors, failed),
                    name=f"pipeline-{r.name}",
                    daemon=True,
                )
                for r in runtimes
            ]
            for thread in threads:
                thread.start()
            try:
                while any(t.is_alive() for t in threads):
                    for thread in threads:
                        thread.join(timeout=0.5)
            except KeyboardInterrupt:
                stop.set()
                for thread in threads:
                    thread.join(timeout=30)
                raise
    finally:
        start_driver_session_with(None)
        spark.stop()
    if errors:
        raise errors[0]
    for line in failed:
        print(f"sparkcdc: {line}", file=sys.stderr)
    # Tables stopped while the others went on (engine/table_failures.py, unsupported DDL,
    # vanished tables): docs/operations.md.
    return EXIT_TABLES_FAILED if failed else EXIT_OK


def _run_guarded(
    runtime: PipelineRuntime,
    files: Sequence[str],
    state_dir: Path,
    spark: object,
    display: RichProgress,
    exit_when_caught_up: bool,
    stop: threading.Event,
    errors: list[BaseException],
    failed: list[str],
) -> None:
    listener = display.listener(runtime.name)
    listener.message(f"source {runtime.source.address} → sink {runtime.sink.describe()}")
    store = FileCheckpointStore(state_dir, runtime.name)
    try:
        # Each run is a new epoch of the pipeline: an older run still writing is fenced off.
        key = pipeline_key(runtime.pipeline.metadata.namespace, runtime.name)
        watch = ManifestWatch(files, runtime.pipeline, say=listener.message)
        enumerator = SplitEnumerator(
            runtime, store, spark, listener, fence=lambda: store.next_fence(key), capture_changes=watch
        )
        enumerator.run(exit_when_caught_up=exit_when_caught_up, should_stop=stop.is_set)
        listener.message("caught up" if exit_when_caught_up else "stopped")
        for table, error in sorted(failed_tables(enumerator.load_checkpoint()).items()):
            failed.append(f"pipeline {runtime.name}: {error or f'table {table} failed'}")
    except BaseException as err:
        errors.append(err)
        stop.set()


def format_failure(err: BaseException) -> str:
    return f"sparkcdc: {err}"


def pipelines_named(manifest: Manifest, names: Sequence[str]) -> Manifest:
    if not names:
        return manifest
    return Manifest([p for p in manifest.pipelines if p.name in names], manifest.secrets)
