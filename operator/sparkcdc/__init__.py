"""sparkcdc: MySQL change-data-capture pipelines on Spark, run by a Kubernetes operator.

A CdcPipeline resource becomes a driver pod (``controller/``) whose program (``driver/``) runs the
engine (``engine/``): a lock-free incremental snapshot read in parallel by Spark tasks
(``spark/``), then one binlog stream (``mysql/binlog/``) into the sink (``sinks/``), with the
checkpoint in the resource's status (``kube/``). docs/architecture.md maps the rest.
"""

__version__ = "0.1.0"
