"""``spec.verify`` / ``spec.verifyNonce`` and ``status.verification``: verifying a running pipeline.

A new ``verifyNonce`` asks the pipeline's driver to compare the replica with its source chunk by
chunk (``sparkcdc.verify``), lock-free while streaming goes on; ``spec.verify`` says which
tables and whether differing chunks are repaired. The driver answers in ``status.verification``
and the ``Verified`` condition. Neither field restarts the driver.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from sparkcdc.api.base import ApiModel, StatusModel
from sparkcdc.api.source import TableEntry

MAX_LISTED_CHUNKS = 10  # differing chunks listed in status; the rest are only counted


class VerifySpec(ApiModel):
    """What a verification run (a new ``verifyNonce``) checks, and whether it repairs."""

    tables: list[TableEntry] = Field(
        default_factory=list,
        max_length=1024,
        description='Tables to verify among the captured ones: "db.table" or a regular expression; '
        "empty: all.",
    )
    repair: bool = Field(
        default=False,
        description="Re-snapshot the chunks that differ through the normal split path (watermarks and "
        "an atomic range write) while streaming goes on, then verify them again.",
    )
    wait_seconds: int = Field(
        default=120,
        ge=0,
        le=86400,
        description="How long re-checks of differing chunks wait for the pipeline to apply the binlog "
        "past the chunk's source read; chunks still differing then are Unsettled.",
    )
    chunk_size: int | None = Field(
        default=None, gt=0, le=100_000_000, description="Rows per checked chunk; unset: snapshot.chunkSize."
    )


ChunkState = Literal["differ", "unsettled", "repaired"]


class VerifiedChunk(StatusModel):
    """A chunk that differed (or was repaired): its table, key range and row counts."""

    table: str = Field(max_length=512, description='"db.table".')
    chunk: int = Field(description="Index of the chunk in the table's split plan.")
    range: str = Field(max_length=1024, description="Key range [start, end) of the chunk; -∞/+∞ unbounded.")
    state: ChunkState = Field(description="differ, unsettled (could not be shown to match), or repaired.")
    source_rows: int = Field(default=0, description="Rows of the chunk in the source.")
    sink_rows: int = Field(default=0, description="Rows of the chunk in the sink.")
    differing_rows: int = Field(default=0, description="Rows found different by the re-check.")


class VerificationStatus(StatusModel):
    """The last verification run the driver answered (or is running)."""

    nonce: str | None = Field(default=None, max_length=253, description="The verifyNonce answered.")
    started_at: str | None = Field(default=None, description="RFC 3339 time the run started.")
    finished_at: str | None = Field(default=None, description="RFC 3339 time it ended; unset while running.")
    repair: bool = Field(default=False, description="Whether differing chunks were repaired.")
    tables: int = Field(default=0, description="Tables checked.")
    chunks_checked: int = Field(default=0, description="Chunks checked.")
    chunks_differing: int = Field(default=0, description="Chunks whose rows differ.")
    chunks_unsettled: int = Field(
        default=0, description="Chunks that changed too much during the run to be shown to match."
    )
    chunks_repaired: int = Field(default=0, description="Chunks repaired (they match now).")
    rows_checked: int = Field(default=0, description="Source rows checked.")
    seconds: float | None = Field(default=None, description="How long the run took.")
    chunks: list[VerifiedChunk] = Field(
        default_factory=list,
        max_length=MAX_LISTED_CHUNKS,
        description=f"Differing, unsettled and repaired chunks, at most {MAX_LISTED_CHUNKS}.",
    )
    chunks_not_listed: int = Field(default=0, description="Further such chunks, only counted.")
    error: str | None = Field(default=None, max_length=1024, description="Why the run failed.")
