"""The Go decoder's dates kept as they are when they are MySQL's text already (binlog/native.py):
only where ``rendered_text`` would print them again unchanged, for every temporal type and
fractional precision, zero and partly-zero dates included."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sparkcdc.mysql.binlog.native_values import _printed_as_mysql
from sparkcdc.mysql.columns import Column
from sparkcdc.mysql.zero_dates import rendered_text

TYPES = [("date", None)] + [(t, p) for t in ("datetime", "timestamp") for p in range(7)]


def column(data_type: str, precision: int | None) -> Column:
    return Column("d", 1, data_type, data_type, datetime_precision=precision, zero_dates=True)


@st.composite
def rendered(draw: st.DrawFn) -> str:
    """Dates as a decoder might print them: any fields, any number of fractional digits."""
    date = f"{draw(st.integers(0, 9999)):04d}-{draw(st.integers(0, 12)):02d}-{draw(st.integers(0, 31)):02d}"
    if draw(st.booleans()):
        return date
    clock = ":".join(f"{draw(st.integers(0, 59)):02d}" for _ in range(3))
    digits = draw(st.integers(0, 7))
    fraction = "." + "".join(str(draw(st.integers(0, 9))) for _ in range(digits)) if digits else ""
    return f"{date} {clock}{fraction}"


@given(st.sampled_from(TYPES), rendered())
def test_kept_text_is_what_rendered_text_prints(kind: tuple[str, int | None], value: str) -> None:
    col = column(*kind)
    if _printed_as_mysql(col)(value):
        assert rendered_text(col, value) == value


def test_the_common_forms_are_kept() -> None:
    assert _printed_as_mysql(column("datetime", 0))("2024-01-01 00:00:01")
    assert _printed_as_mysql(column("datetime", 3))("0000-00-00 00:00:00.000")
    assert _printed_as_mysql(column("date", None))("2024-00-10")
    assert not _printed_as_mysql(column("datetime", 3))("2024-01-01 00:00:01.000000")  # reprinted
