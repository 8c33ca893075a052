"""The engine's options: read from the environment only at the composition roots, with errors that
name the variable, and documented in docs/configuration.md (generated; test_configuration.py checks it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sparkcdc.options import (
    BINLOG_DECODER_ENV,
    CATCHUP_IN_DRIVER_ENV,
    CHUNK_READER_ENV,
    SNAPSHOT_IN_DRIVER_ENV,
    SPARK_WORTH_SECONDS_ENV,
    EngineOptions,
    OptionsError,
    documented_variables,
)


def test_the_defaults_are_the_production_choices() -> None:
    options = EngineOptions.from_environment({"HOME": "/home/u"})
    assert options == EngineOptions(cache_dir=Path("/home/u/.cache/sparkcdc"))
    assert (options.snapshot_in_driver, options.catchup_in_driver) == (None, "auto")
    assert (options.binlog_decoder, options.chunk_reader) == ("auto", "auto")


def test_every_variable_reaches_its_field() -> None:
    env = {
        SNAPSHOT_IN_DRIVER_ENV: "never",
        CATCHUP_IN_DRIVER_ENV: "Always",
        SPARK_WORTH_SECONDS_ENV: "2.5",
        BINLOG_DECODER_ENV: "/usr/local/bin/sparkcdc-binlogdec",
        CHUNK_READER_ENV: "pymysql",
        "SPARKCDC_CACHE_DIR": "/cache",
    }
    assert EngineOptions.from_environment(env) == EngineOptions(
        snapshot_in_driver="never",
        catchup_in_driver="always",
        spark_worth_seconds=2.5,
        binlog_decoder="/usr/local/bin/sparkcdc-binlogdec",
        chunk_reader="pymysql",
        cache_dir=Path("/cache"),
    )


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        (CATCHUP_IN_DRIVER_ENV, "sometimes", "use one of auto, never, always"),
        (CHUNK_READER_ENV, "jdbc", "use one of auto, pymysql"),
        (SPARK_WORTH_SECONDS_ENV, "soon", "is not a number of seconds"),
    ],
)
def test_a_bad_value_names_the_variable(variable: str, value: str, message: str) -> None:
    with pytest.raises(OptionsError, match=rf"\${variable}='{value}'.*{message}"):
        EngineOptions.from_environment({variable: value})


def test_every_field_is_documented_with_its_variable() -> None:
    variables = [variable for variable, _, _ in documented_variables()]
    assert variables[:2] == [SNAPSHOT_IN_DRIVER_ENV, CATCHUP_IN_DRIVER_ENV]
    assert len(variables) == len(set(variables)) == len(EngineOptions.__dataclass_fields__)
    assert ("SPARKCDC_CACHE_DIR", "~/.cache/sparkcdc") in [row[:2] for row in documented_variables()]
