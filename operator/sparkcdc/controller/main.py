"""``sparkcdc operator``: run the kopf operator until SIGTERM/SIGINT."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import kopf

from sparkcdc.controller.handlers import Operator, register
from sparkcdc.controller.settings import parse_settings


def operator_main(argv: Sequence[str] | None = None) -> int:
    settings = parse_settings(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    registry = kopf.OperatorRegistry()
    operator = Operator(settings)
    register(registry, operator)
    liveness = f"http://0.0.0.0:{settings.liveness_port}/healthz" if settings.liveness_port else None
    kopf.run(
        registry=registry,
        standalone=True,  # one replica (Recreate); no peering objects needed
        clusterwide=not settings.namespaces,
        namespaces=settings.namespaces,
        liveness_endpoint=liveness,
    )
    return 0
