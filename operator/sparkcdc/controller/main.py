"""``sparkcdc operator``: run the kopf operator until SIGTERM/SIGINT."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence

import kopf

from sparkcdc.controller.handlers import Operator, register
from sparkcdc.controller.settings import parse_settings
from sparkcdc.kube.client import load_config


def operator_main(argv: Sequence[str] | None = None) -> int:
    """The operator's composition root: the one place it reads its environment."""
    settings = parse_settings(argv, os.environ)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    registry = kopf.OperatorRegistry()
    operator = Operator(settings, load_config(os.environ))
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
