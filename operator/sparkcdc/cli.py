"""The ``sparkcdc`` command line.

Every command exits with the codes of ``sparkcdc.errors``: 0 done, 1 verify found a difference,
2 bad input (an invalid manifest, or the input or environment stopped the command), 4 a run ended
with failed tables, 130 interrupted.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from sparkcdc.exit_codes import EXIT_INTERRUPTED, EXIT_USER_ERROR

if TYPE_CHECKING:
    from rich.console import Console

    from sparkcdc.api.manifest import Manifest


def _cmd_crd(args: argparse.Namespace) -> int:
    from sparkcdc.api.crd import render_crd_yaml

    sys.stdout.write(render_crd_yaml())
    return 0


def _load(files: Sequence[str], *, check_secrets: bool = True) -> Manifest | None:
    """The manifests in ``files``, or None after printing every problem (exit EXIT_USER_ERROR):
    the same for every command that reads manifests."""
    from sparkcdc.api.manifest import ManifestError, load_manifests

    try:
        return load_manifests(files, check_secrets=check_secrets)
    except ManifestError as err:
        for line in err.messages:
            print(line, file=sys.stderr)
        return None


def _cmd_validate(args: argparse.Namespace) -> int:
    check_secrets = args.secrets == "require"
    manifest = _load(args.files, check_secrets=check_secrets)
    if manifest is None:
        return EXIT_USER_ERROR
    # Said on every line: a pipeline "valid" without its Secrets may still not start.
    unchecked = "" if check_secrets else " (secret references not checked: --secrets=skip)"
    for loaded in manifest.pipelines:
        print(f"{loaded.location}: CdcPipeline {loaded.pipeline.metadata.name} is valid{unchecked}")
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from sparkcdc.driver.local import run_local
    from sparkcdc.errors import USER_ERRORS

    manifest = _load(args.files)
    if manifest is None:
        return EXIT_USER_ERROR
    try:
        return run_local(
            manifest,
            Path(args.state_dir),
            exit_when_caught_up=args.exit_when_caught_up,
            console=_console(args.debug),
        )
    except USER_ERRORS as err:
        print(f"sparkcdc: {err}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("sparkcdc: interrupted; rerun the same command to resume from the checkpoint", file=sys.stderr)
        return EXIT_INTERRUPTED


def _console(debug: bool) -> Console:
    """stderr for ``run`` and ``verify``; ``--debug`` adds DEBUG logging of every module and the
    source location of each line, which the plain output leaves out."""
    from sparkcdc.driver.progress import stderr_console

    if debug:
        logging.basicConfig(
            level=logging.DEBUG,
            format="%(asctime)s %(levelname)s %(name)s (%(filename)s:%(lineno)d): %(message)s",
        )
    return stderr_console(debug=debug)


def _cmd_status(args: argparse.Namespace) -> int:
    from pathlib import Path

    from sparkcdc.status_table import render_status

    return render_status(Path(args.state_dir))


def _cmd_operator(args: argparse.Namespace) -> int:
    from sparkcdc.controller.main import operator_main

    return operator_main(args.operator_args)


def _cmd_driver(args: argparse.Namespace) -> int:
    from sparkcdc.driver.main import driver_main

    return driver_main()


def _cmd_verify(args: argparse.Namespace) -> int:
    from pathlib import Path

    from sparkcdc.driver.verify_local import verify_local
    from sparkcdc.errors import USER_ERRORS
    from sparkcdc.verify.recheck import RecheckSettings
    from sparkcdc.verify.runner import VerifyOptions

    manifest = _load(args.files)
    if manifest is None:
        return EXIT_USER_ERROR
    tables = tuple(t.strip() for entry in args.tables or () for t in entry.split(",") if t.strip())
    options = VerifyOptions(
        tables=tables,
        repair=args.repair,
        chunk_size=args.chunk_size,
        recheck=RecheckSettings(wait_seconds=args.wait_seconds),
    )
    report = Path(args.report) if args.report else None
    try:
        console = _console(args.debug)
        code, _ = verify_local(manifest, Path(args.state_dir), options, report_path=report, console=console)
    except USER_ERRORS as err:
        print(f"sparkcdc: {err}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("sparkcdc: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    return code


def build_parser() -> argparse.ArgumentParser:
    from sparkcdc import __version__

    parser = argparse.ArgumentParser(prog="sparkcdc", description=__doc__)
    parser.add_argument("--version", action="version", version=f"sparkcdc {__version__}")
    parser.add_argument(
        "--debug", action="store_true", help="run/verify: debug logging, with source locations on log lines"
    )
    sub = parser.add_subparsers(dest="command", required=True)

    crd = sub.add_parser("crd", help="print the CdcPipeline CustomResourceDefinition")
    crd.set_defaults(func=_cmd_crd)

    validate = sub.add_parser(
        "validate",
        help="validate CdcPipeline manifests and their secret references",
        description="Exit code 0 when every manifest is valid, 2 otherwise (every problem on stderr).",
    )
    validate.add_argument("files", nargs="+")
    validate.add_argument(
        "--secrets",
        choices=("require", "skip"),
        default="require",
        help="require (default): every Secret key a pipeline references must be defined by a v1 Secret "
        "among the files, as `sparkcdc run` needs; skip: leave secret references unchecked, for a "
        "GitOps repository whose Secrets are sealed, external or in other files (Secret documents "
        "that are given are still validated)",
    )
    validate.set_defaults(func=_cmd_validate)

    run = sub.add_parser("run", help="run pipelines locally on Spark, checkpoints in --state-dir")
    run.add_argument("files", nargs="+")
    run.add_argument(
        "--state-dir", default=".sparkcdc-state", help="where checkpoints are kept (default %(default)s)"
    )
    run.add_argument(
        "--exit-when-caught-up",
        action="store_true",
        help="exit 0 once the snapshot is done and the binlog reader has reached the source position "
        "observed at that moment, with everything committed (4 when tables failed meanwhile: "
        "docs/operations.md)",
    )
    run.set_defaults(func=_cmd_run)

    operator = sub.add_parser(
        "operator",
        help="run the Kubernetes operator (kopf); `sparkcdc operator --help` lists its flags",
        add_help=False,  # --help goes to the operator's own parser
    )
    operator.add_argument("operator_args", nargs=argparse.REMAINDER)
    operator.set_defaults(func=_cmd_operator)

    driver = sub.add_parser(
        "driver", help="the driver pod's entry point (reads its settings from the environment)"
    )
    driver.set_defaults(func=_cmd_driver)

    verify = sub.add_parser(
        "verify",
        help="compare each captured table of the sink with its source chunk by chunk (checksums, no locks)",
        description="Exit code 0 when every chunk matches, 1 when some differ (or could not be shown to "
        "match), 2 on bad input (an invalid manifest, an unreachable source or sink).",
    )
    verify.add_argument("files", nargs="+")
    verify.add_argument(
        "--tables",
        action="append",
        metavar="TABLES",
        help="only these captured tables: db.table or a regex, comma-separated or repeated",
    )
    verify.add_argument(
        "--state-dir",
        default=".sparkcdc-state",
        help="the checkpoints of `sparkcdc run`: how far each pipeline has applied the binlog "
        "(default %(default)s)",
    )
    verify.add_argument("--report", metavar="FILE", help="also write the report as JSON to FILE")
    verify.add_argument(
        "--repair",
        action="store_true",
        help="re-snapshot the differing chunks through the split path (the pipeline may keep running), "
        "then verify them again",
    )
    verify.add_argument(
        "--wait-seconds",
        type=float,
        default=120.0,
        help="how long re-checks wait for the pipeline to apply the binlog past a chunk's read "
        "(default %(default)s)",
    )
    verify.add_argument("--chunk-size", type=int, help="rows per chunk (default: spec.snapshot.chunkSize)")
    verify.set_defaults(func=_cmd_verify)

    status = sub.add_parser("status", help="progress table of the pipelines checkpointed in --state-dir")
    status.add_argument("--state-dir", default=".sparkcdc-state")
    status.set_defaults(func=_cmd_status)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["operator"]:
        # The operator has its own parser (flags and --help); argparse's REMAINDER cannot pass
        # an option-like first argument through.
        from sparkcdc.controller.main import operator_main

        return operator_main(args_list[1:])
    args = build_parser().parse_args(args_list)
    code: int = args.func(args)
    return code
