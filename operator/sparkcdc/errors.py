"""The errors that mean "the input or the environment is wrong", shown without a traceback
(exit code ``exit_codes.EXIT_USER_ERROR``)."""

from __future__ import annotations

from sparkcdc.api.errors import SecretRefError
from sparkcdc.core.jsoncodec import CheckpointError
from sparkcdc.mysql.connection import SourceError
from sparkcdc.sinks.base import SinkError
from sparkcdc.state.base import StateError

USER_ERRORS: tuple[type[Exception], ...] = (
    SourceError,
    SinkError,
    StateError,
    SecretRefError,
    CheckpointError,
)
