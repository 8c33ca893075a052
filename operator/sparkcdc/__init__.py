"""sparkcdc: MySQL change-data-capture pipelines on Spark, run by a Kubernetes operator."""

__version__ = "0.1.0"
