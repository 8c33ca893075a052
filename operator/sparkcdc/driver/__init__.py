"""The driver program: the composition roots that build a running pipeline and watch it run.

Two entry points put the same engine together: ``sparkcdc driver`` in the driver pod
(``main.py``: the pipeline from the CdcPipeline, secrets from the pod's environment, the checkpoint
in the resource's status) and ``sparkcdc run`` / ``sparkcdc verify`` on a laptop (``local.py``,
``verify_local.py``: manifests from files, checkpoints in a directory). They are the only places
that read the environment (``sparkcdc.options``); everything below gets typed options.

Also here: what the driver pod reports while it runs (``reporting.py``: ``status.progress`` and
Prometheus metrics), the terminal's progress bars (``progress.py``) and the verification loop that
answers ``spec.verifyNonce`` beside the stream (``verify_loop.py``).
"""
