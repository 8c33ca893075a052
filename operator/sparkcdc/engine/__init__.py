"""The engine: one pipeline's life from discovery to the live binlog stream.

``enumerator.SplitEnumerator`` (Flink CDC's split enumerator role) discovers the tables, plans
their snapshot splits, hands waves of splits to the split readers (Spark tasks, or threads of the
driver while Spark is not worth starting: ``wave_runner.py``), checkpoints each finished split's
high watermark, and then runs the binlog phase (``streaming.py``): one reader from the smallest
high watermark, parallel catch-up while far behind (``catchup.py``), schema changes, referential
actions, a source that changed under the pipeline, a binlog that is gone, a table that fails alone.

The engine decides; it reads nothing from the environment (its switches arrive as
``sparkcdc.options.EngineOptions`` in ``runtime.PipelineRuntime``) and reports through
``listener.PipelineListener``. What runs on executors lives in ``sparkcdc.spark``.
"""
