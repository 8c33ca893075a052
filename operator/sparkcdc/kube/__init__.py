"""The Kubernetes API as both programs use it: the operator and the driver pod.

``client.KubeClient`` is every call either program makes (objects travel as plain dicts), and
the one place that patches a CdcPipeline's status; ``status_store.StatusCheckpointStore`` keeps the
driver's checkpoint in that status, fenced by the epoch the operator gave the driver.
"""
