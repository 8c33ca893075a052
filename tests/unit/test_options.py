"""The engine's options: read from the environment only at the composition roots, with errors that
name the variable, and documented in docs/configuration.md (generated, checked here)."""

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
    configuration_markdown,
)

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"


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


def test_docs_configuration_is_generated_from_the_options() -> None:
    assert DOC.read_text() == configuration_markdown(), (
        "run: python -m sparkcdc.options > docs/configuration.md"
    )
