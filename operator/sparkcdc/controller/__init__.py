"""The operator: a kopf controller that turns each CdcPipeline into a healthy driver pod.

``handlers.py`` maps every kopf trigger to one ``Reconciler.reconcile``; ``reconciler.py`` observes
through the API (``observe.py``), decides with the pure ``core.reconcile`` and acts. The objects it
creates come from pure builders (``builders.py``, ``spark_pods.py``) tested without a cluster. The
operator never connects to a database and never reads a Secret.
"""
