"""Where a pipeline's checkpoint is kept between runs: a file for ``sparkcdc run``
(``file_store``), the CdcPipeline's ``status.checkpoint`` for the driver pod
(``sparkcdc.kube.status_store``, with the ConfigMap spill of large checkpoints in ``status_codec``).

Both stores write the checkpoint after the sink committed what it covers, never before, so a
process killed between the two re-reads at most what was already applied (docs/architecture.md
§1.2); the status store's writes are fenced by the driver's epoch.
"""
