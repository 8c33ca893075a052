"""What the chart's alert rules and dashboard may query: the series the driver and the operator export.

The names come from the registries themselves (``DriverMetrics``, ``OperatorMetrics``), never from a
list kept by hand, so a renamed or removed series fails the rules' and the dashboard's tests.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from prometheus_client import CollectorRegistry

from sparkcdc.controller.metrics import OperatorMetrics
from sparkcdc.driver.metrics import DriverMetrics

# The sample names prometheus_client exposes for each kind of metric family.
_SUFFIXES = {
    "counter": ("_total", "_created"),
    "gauge": ("",),
    "histogram": ("_bucket", "_count", "_sum", "_created"),
    "summary": ("", "_count", "_sum", "_created"),
}
# A PromQL identifier of ours: every series of the project starts with "sparkcdc_".
_SPARKCDC_NAME = re.compile(r"\bsparkcdc_[a-zA-Z0-9_:]*")


def sample_names(registry: CollectorRegistry) -> set[str]:
    """Every sample name a scrape of ``registry`` may show, labelled series included before any
    label value was set."""
    return {f"{family.name}{suffix}" for family in registry.collect() for suffix in _SUFFIXES[family.type]}


def exported_names() -> set[str]:
    """The sample names of the driver's and the operator's registries."""
    return sample_names(DriverMetrics().registry) | sample_names(OperatorMetrics().registry)


def unknown_names(expressions: Iterable[str]) -> dict[str, set[str]]:
    """Per expression, the ``sparkcdc_*`` names it uses that neither registry exports; an
    expression without any of ours counts as using the unknown name ``""``."""
    known, problems = exported_names(), {}
    for expr in expressions:
        used = set(_SPARKCDC_NAME.findall(expr))
        missing = (used - known) if used else {""}
        if missing:
            problems[expr] = missing
    return problems
