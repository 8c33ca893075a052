"""The pure core: the algorithm's decisions as data in, data out, with no I/O.

Everything whose correctness the replica depends on and that can be decided without a database,
Spark or the Kubernetes API lives here, so it can be tested exhaustively (hypothesis) and read
without knowing the runtime: offsets and the checkpoint (``offsets``, ``checkpoint``), splits and
their assignment (``chunking``, ``splits``, ``assigner``, ``waves``), the snapshot-binlog merge and
the high-watermark filter (``merge``, ``event_filter``, ``microbatch``, ``catchup``), sink routing
and column rules (``routing``, ``transforms``, ``row_metadata``), fencing (``fence``), and the
operator's reconcile decision (``reconcile*``). import-linter keeps it from importing anything
that does I/O (docs/architecture.md §5).
"""
