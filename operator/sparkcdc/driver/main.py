"""``sparkcdc driver``: the driver pod's entry point.

Reads its CdcPipeline, resolves secrets from the env vars the pod builder mapped them to, and runs
the pipeline on Spark with the checkpoint in ``status.checkpoint``, fenced by ``$SPARKCDC_EPOCH``.
Meanwhile it polls its CdcPipeline (``driver/pipeline_poll.py``): a background thread answers
``spec.verifyNonce`` (``driver/verify_loop.py``), and the streamer follows edits of the table
selection and new ``resnapshotNonce`` values without a restart (``driver/spec_watch.py``).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
from collections.abc import Mapping, MutableMapping
from dataclasses import replace
from types import FrameType

from sparkcdc.api.resource import CdcPipeline
from sparkcdc.controller.builders import (
    DEFAULT_SPARK_MASTER,
    DRIVER_METRICS_PORT,
    ENV_DRIVER_METRICS_PORT,
    ENV_EPOCH,
    ENV_PIPELINE_NAME,
    ENV_PIPELINE_NAMESPACE,
    ENV_SPARK_MASTER,
)
from sparkcdc.controller.spark_pods import (
    EXECUTOR_TEMPLATE_PATH,
    driver_spark_conf,
    executor_pod_template,
    in_cluster_master,
    runs_executors,
)
from sparkcdc.core.fence import Fence, FencedError, pipeline_key
from sparkcdc.driver.pipeline_poll import PipelinePoll
from sparkcdc.driver.reporting import (
    DriverMetrics,
    DriverProgress,
)
from sparkcdc.driver.retention import start_retention_watch
from sparkcdc.driver.spec_watch import cluster_spec_watch
from sparkcdc.driver.support import (
    apply_resnapshot,
    env_secrets,
    with_assigned_server_ids,
    write_termination_message,
)
from sparkcdc.driver.verify_loop import DriverVerifier
from sparkcdc.engine.enumerator import SplitEnumerator
from sparkcdc.engine.runtime import PipelineRuntime, build_runtime
from sparkcdc.errors import USER_ERRORS
from sparkcdc.kube.client import KubeClient, load_config
from sparkcdc.kube.status_store import StatusCheckpointStore
from sparkcdc.options import EngineOptions
from sparkcdc.sinks.base import start_driver_session_with, start_fenced, writes_in_driver
from sparkcdc.sinks.jdbc.fence import fenced_message
from sparkcdc.spark.credentials import sink_credentials
from sparkcdc.spark.lazy_session import LazySession
from sparkcdc.spark.session import create_session, delta_conf, merge_conf

log = logging.getLogger("sparkcdc.driver")
EXIT_FAILED, EXIT_USER_ERROR, EXIT_FENCED = 1, 2, 3


def run_pipeline(enumerator: SplitEnumerator) -> None:
    """The engine's phases in order: the one place the driver pod runs them."""
    enumerator.run(exit_when_caught_up=False)


def driver_main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # Pod deletion sends SIGTERM: unwind through the finally blocks so the last checkpoint is flushed
    # (the epoch is still ours until the pod is gone).
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        _run()
    except FencedError as err:
        log.warning("%s", err)
        write_termination_message(f"fenced: {err}")
        return EXIT_FENCED
    except USER_ERRORS as err:
        log.error("%s", err)
        write_termination_message(str(err))
        return EXIT_USER_ERROR
    except Exception as err:
        if (fenced := fenced_message(err)) is not None:  # a Spark task's refused sink write
            log.warning("%s", fenced)
            write_termination_message(f"fenced: {fenced}")
            return EXIT_FENCED
        log.exception("the driver failed")
        write_termination_message(f"{type(err).__name__}: {err}")
        return EXIT_FAILED
    write_termination_message("finished")
    return 0


def _run() -> None:
    env = os.environ
    _check_local_dirs(env)
    namespace, name = env[ENV_PIPELINE_NAMESPACE], env[ENV_PIPELINE_NAME]
    epoch = int(env[ENV_EPOCH])
    master = in_cluster_master(env.get(ENV_SPARK_MASTER) or DEFAULT_SPARK_MASTER, env)
    kube = KubeClient.from_config(load_config(env), env.get("HOSTNAME", namespace))
    obj = kube.get_pipeline(namespace, name)
    if obj is None:
        raise RuntimeError(f"CdcPipeline {namespace}/{name} does not exist (deleted?)")
    pipeline = with_assigned_server_ids(CdcPipeline.from_k8s(obj))
    if runs_executors(master):
        write_executor_template(pipeline, master)
    log.info("driver of %s/%s, epoch %d, Spark master %s", namespace, name, epoch, master)
    metrics = DriverMetrics()
    metrics.epoch.set(epoch)
    port = metrics_port(env)
    if port:
        metrics.serve(port)
    store = StatusCheckpointStore(kube, namespace, name, epoch)
    try:
        options = EngineOptions.from_environment(env)
        runtime = build_runtime(pipeline, env_secrets(env), options)
        credentials = sink_credentials(pipeline.spec.sink, env_secrets(env))
        apply_resnapshot(store, pipeline)
        progress = resumed_progress(store, metrics, pipeline.spec.binlog.heartbeat_interval_seconds)
        fence = Fence(pipeline_key(namespace, name), str(obj["metadata"].get("uid") or ""), epoch)
        runtime = replace(runtime, sink=start_fenced(runtime.sink, fence))  # claims the sink's fence
        conf = spark_conf(runtime, master, env)
        # Started on first use: a pipeline past its snapshot streams without Spark, and a small
        # snapshot is read by the driver alone (engine/wave_runner.py); on Kubernetes a started
        # session holds its executor pods for the pipeline's life. A sink that writes with Spark
        # from the driver (Delta) starts it for its first Spark write (sinks/base.py).
        app = f"sparkcdc-{namespace}-{name}"
        spark = LazySession(lambda: create_session(app, master, options, conf, credentials), master)
        start_driver_session_with(spark.get)
        # One poll of the CdcPipeline serves verification and the spec edits the streamer follows;
        # the engine's listener tells both what the store holds (what the sink committed).
        poll = PipelinePoll(kube, obj)
        watch = cluster_spec_watch(poll, pipeline, store, progress)
        verifier = DriverVerifier(poll, kube, store, progress, runtime, spark)
        poll.start()
        verifier.start()
        retention = start_retention_watch(runtime.source, progress, store.last_status())
        try:
            # Waves the driver reads itself run on its own cores (a local master is this pod).
            threads = None if master.startswith("local") else pipeline.spec.spark.driver.cores
            enumerator = SplitEnumerator(
                runtime, store, spark, progress, driver_threads=threads, capture_changes=watch
            )
            run_pipeline(enumerator)
            verifier.finish()  # only a snapshot-only pipeline gets here
        finally:
            poll.stop()
            retention.stop()
            verifier.stop()
            spark.stop()
    finally:
        store.close()


def write_executor_template(pipeline: CdcPipeline, master: str) -> None:
    """The executor pod template Spark reads (``spark.kubernetes.executor.podTemplateFile``)."""
    with open(EXECUTOR_TEMPLATE_PATH, "w") as out:
        json.dump(executor_pod_template(pipeline, master), out)


def spark_conf(runtime: PipelineRuntime, master: str, env: Mapping[str, str]) -> dict[str, str]:
    """The driver's Spark settings, with Delta's for a sink that writes from the driver. Never a
    credential: these become the JVM's command line (spark/credentials.py)."""
    conf = driver_spark_conf(runtime.pipeline, master, env)
    if writes_in_driver(runtime.sink):
        partitions = runtime.pipeline.spec.snapshot.parallelism
        conf = merge_conf(delta_conf(runtime.options, snapshot_partitions=partitions), conf)
    return conf


def metrics_port(env: Mapping[str, str]) -> int:
    """``$SPARKCDC_DRIVER_METRICS_PORT`` (default 8090); 0 serves no metrics."""
    text = env.get(ENV_DRIVER_METRICS_PORT, "").strip()
    try:
        return int(text) if text else DRIVER_METRICS_PORT
    except ValueError:
        log.warning("$%s=%r is not a port; serving no metrics", ENV_DRIVER_METRICS_PORT, text)
        return 0


def resumed_progress(
    store: StatusCheckpointStore, metrics: DriverMetrics, heartbeat_seconds: float = 30.0
) -> DriverProgress:
    """The progress listener, its counters continued from the checkpoint and the last progress."""
    checkpoint = store.load()
    previous = store.last_status().get("progress") or {}
    return DriverProgress(
        store.update_progress,
        metrics,
        checkpoint=checkpoint,
        events_applied=int(previous.get("eventsApplied") or 0),
        heartbeat_seconds=heartbeat_seconds,
    )


def _check_local_dirs(env: MutableMapping[str, str]) -> None:
    """Spark's scratch space is an emptyDir in a pod; where it cannot be created (a test node runs
    the pod as a plain process) Spark falls back to the temp directory."""
    local = env.get("SPARK_LOCAL_DIRS")
    if local:
        try:
            os.makedirs(local, exist_ok=True)
        except OSError:
            del env["SPARK_LOCAL_DIRS"]


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    sys.exit(128 + signum)
