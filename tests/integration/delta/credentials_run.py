"""``sparkcdc run``'s composition (``driver/local.py`` ``run_local``) in a process of its own, every
Python logger at DEBUG, reporting where the pipeline's object-store credentials ended up.

Usage: ``credentials_run.py MANIFEST STATE_DIR``. The session ``run_local`` creates is kept (the
real ``create_session`` runs; this only holds on to what it returns) so that, after the run,
its Hadoop configuration can still be read. The last line on stdout is JSON: per credential key
the SHA-256 of the value the Hadoop configuration holds (never the value: the test scans this
process's output for it), whether any value is in the JVM's command line or in its SparkConf, and
the run's exit code.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sys
from pathlib import Path
from typing import Any

from sparkcdc.api.manifest import load_manifests
from sparkcdc.api.sinks import DeltaSink
from sparkcdc.driver import local
from sparkcdc.driver.local import run_local


def main(manifest_path: str, state_dir: str) -> None:
    logging.basicConfig(level=logging.DEBUG, stream=sys.stderr)
    logging.getLogger().setLevel(logging.DEBUG)
    manifest = load_manifests([manifest_path])
    values: dict[str, str] = {}
    for loaded in manifest.pipelines:
        sink = loaded.pipeline.spec.sink
        assert isinstance(sink, DeltaSink)
        for credential in sink.credentials:
            ref = credential.secret_key_ref
            values[credential.key] = manifest.resolve_secret(ref, "test").get_secret_value()

    seen: dict[str, Any] = {}
    create_session = local.create_session

    def keep(*args: Any, **kwargs: Any) -> Any:
        session = create_session(*args, **kwargs)
        context = session.sparkContext
        seen["hadoop"] = context._jsc.hadoopConfiguration()
        spark_conf = "\n".join(f"{k}={v}" for k, v in context.getConf().getAll())
        with open(f"/proc/{context._gateway.proc.pid}/cmdline", "rb") as cmdline:
            argv = cmdline.read().decode(errors="replace")
        seen["in_spark_conf"] = any(v in spark_conf for v in values.values())
        seen["in_jvm_argv"] = any(v in argv for v in values.values())
        return session

    setattr(local, "create_session", keep)  # noqa: B010 (a spy: the real create_session runs)
    code = run_local(manifest, Path(state_dir), exit_when_caught_up=True)
    hadoop = seen["hadoop"]
    digests = {}
    for key in values:
        held = hadoop.get(key)
        digests[key] = None if held is None else hashlib.sha256(str(held).encode()).hexdigest()
    report = {
        "code": code,
        "hadoop": digests,
        "in_spark_conf": seen["in_spark_conf"],
        "in_jvm_argv": seen["in_jvm_argv"],
    }
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
