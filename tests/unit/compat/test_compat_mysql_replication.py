"""The python-mysql-replication patch: written for the installed release (these fail when an upgrade
changes the code it replaces or relies on), applied by the binlog reader, and decoding as intended.

Real binlog rows through the patched methods: tests/integration/mysql (types round trip, binlog
reader, the Go decoder against the Python one) and tests/integration/binlog.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from compat_support import dependencies
from pymysqlreplication.packet import BinLogPacketWrapper
from pymysqlreplication.row_event import RowsEvent

from sparkcdc.compat import mysql_replication
from sparkcdc.compat.guard import Upstream, UpstreamChangedError, installed_version, satisfies
from sparkcdc.core.charsets import decode_mysql_latin1


def test_the_installed_release_is_the_code_the_patch_was_written_for() -> None:
    """Fails after an upgrade that touches the patched methods: review the patch against the new
    code, then record the new digests (``upstream_sources`` gives the source) and move the pin."""
    mysql_replication.check_upstream()
    assert satisfies(installed_version(mysql_replication.UPSTREAM), mysql_replication.UPSTREAM.requirement)


def test_the_patch_checks_the_pin_of_pyproject() -> None:
    assert mysql_replication.UPSTREAM.pin in dependencies()


def test_the_binlog_reader_applies_the_patch() -> None:
    import sparkcdc.mysql.binlog.reader  # noqa: F401  (applies it at import)

    for name, replacement in mysql_replication._REPLACEMENTS.items():
        assert vars(RowsEvent)[name] is replacement
    # Idempotent, and the guard still hashes upstream's code.
    mysql_replication.patch_rows_event(latin1=decode_mysql_latin1)
    mysql_replication.check_upstream()


def test_changed_upstream_code_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(mysql_replication.DIGESTS, "_RowsEvent__read_fsp", "0" * 16)
    with pytest.raises(UpstreamChangedError) as failure:
        mysql_replication.patch_rows_event(latin1=decode_mysql_latin1)
    message = str(failure.value)
    assert "mysql-replication 1.0.17" in message and "_RowsEvent__read_fsp" in message
    assert "pip install 'mysql-replication==1.0.17'" in message


def test_another_release_fails_loudly(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mysql_replication, "UPSTREAM", Upstream("mysql-replication", "==1.0.16"))
    with pytest.raises(UpstreamChangedError, match=r"mysql-replication 1\.0\.17 is installed.*==1\.0\.16"):
        mysql_replication.check_upstream()


class _Packet(BinLogPacketWrapper):  # the library's integer readers over a byte string
    def __init__(self, data: bytes) -> None:  # no super().__init__: it reads from a connection
        self._data = data

    def read(self, size: int) -> bytes:
        chunk, self._data = self._data[:size], self._data[size:]
        return chunk


class _Column:
    def __init__(self, fsp: int) -> None:
        self.fsp = fsp


def _event(data: bytes) -> Any:
    event = object.__new__(RowsEvent)  # only .packet and the library's __read_fsp are used
    event.packet = _Packet(data)
    return event


def _date(year: int, month: int, day: int) -> bytes:
    return (year << 9 | month << 5 | day).to_bytes(3, "little")


def _datetime2(ymd: tuple[int, int, int], hms: tuple[int, int, int], fraction: bytes = b"") -> bytes:
    (year, month, day), (hour, minute, second) = ymd, hms
    packed = ((year * 13 + month) << 22 | day << 17 | hour << 12 | minute << 6 | second) + (1 << 39)
    return packed.to_bytes(5, "big") + fraction


def _time2(negative: bool, hms: tuple[int, int, int], micros: int, fsp: int) -> bytes:
    fraction_bytes = (fsp + 1) // 2
    fraction = micros // (1, 10_000, 100, 1)[fraction_bytes]
    value = (hms[0] << 12 | hms[1] << 6 | hms[2]) << (8 * fraction_bytes) | fraction
    size = 3 + fraction_bytes
    return ((-value if negative else value) + (1 << (8 * size - 1))).to_bytes(size, "big")


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (_date(2024, 1, 10), dt.date(2024, 1, 10)),
        (_date(0, 0, 0), "0000-00-00"),
        (_date(2024, 0, 10), "2024-00-10"),
        (_date(2024, 2, 0), "2024-02-00"),
    ],
)
def test_dates_decode_and_zero_dates_keep_their_text(data: bytes, expected: object) -> None:
    assert mysql_replication._read_date(_event(data)) == expected


@pytest.mark.parametrize(
    ("data", "fsp", "expected"),
    [
        (
            _datetime2((2024, 5, 6), (1, 2, 3), (4560).to_bytes(2, "big")),
            3,
            dt.datetime(2024, 5, 6, 1, 2, 3, 456000),
        ),
        (_datetime2((2024, 0, 10), (12, 34, 56), (7890).to_bytes(2, "big")), 3, "2024-00-10 12:34:56.789"),
        (_datetime2((0, 0, 0), (0, 0, 0)), 0, "0000-00-00 00:00:00"),
    ],
)
def test_datetime2_decodes_and_zero_dates_keep_their_text(data: bytes, fsp: int, expected: object) -> None:
    event = _event(data)
    assert mysql_replication._read_datetime2(event, _Column(fsp)) == expected
    assert event.packet.read(1) == b""  # the fraction was read too


@pytest.mark.parametrize(
    ("negative", "hms", "micros", "fsp"),
    [(True, (838, 59, 59), 999_999, 6), (False, (838, 59, 59), 0, 0), (True, (0, 0, 1), 500_000, 1)],
)
def test_time2_decodes_negative_values_with_a_fraction(
    negative: bool, hms: tuple[int, int, int], micros: int, fsp: int
) -> None:
    event = _event(_time2(negative, hms, micros, fsp))
    found = mysql_replication._read_time2(event, _Column(fsp))
    magnitude = dt.timedelta(hours=hms[0], minutes=hms[1], seconds=hms[2], microseconds=micros)
    assert found == (-magnitude if negative else magnitude)


class _StringColumn:
    def __init__(self, charset: str | None) -> None:
        self.character_set_name = charset


def _pascal(data: bytes) -> bytes:
    return len(data).to_bytes(1, "little") + data


@pytest.mark.parametrize("charset", ["latin1", "cp1252", "LATIN1"])
def test_latin1_strings_decode_every_byte_as_the_server_reads_it(charset: str) -> None:
    """Python's strict cp1252 refuses 0x81, 0x8D, 0x8F, 0x90 and 0x9D; MySQL reads them as C1 controls."""
    every = bytes(range(256))
    mysql_replication.patch_rows_event(latin1=decode_mysql_latin1)
    event = _event(_pascal(every[:128]) + _pascal(every[128:]))
    column = _StringColumn(charset)
    text = mysql_replication._read_string(event, 1, column) + mysql_replication._read_string(event, 1, column)
    assert len(text) == 256 and text[:0x81] == every[:0x81].decode("cp1252")
    assert [text[b] for b in (0x81, 0x8D, 0x8F, 0x90, 0x9D)] == ["\x81", "\x8d", "\x8f", "\x90", "\x9d"]
    assert text[0x80] == "\u20ac" and text[0x9F] == "\u0178" and text[0xFF] == "\u00ff"


@pytest.mark.parametrize(
    ("charset", "data"), [("utf8", "h\u00e9".encode()), (None, b"plain"), ("koi8r", b"\xc1")]
)
def test_strings_of_other_charsets_decode_as_upstream_does(charset: str | None, data: bytes) -> None:
    mysql_replication.patch_rows_event(latin1=decode_mysql_latin1)
    upstream = mysql_replication._ORIGINALS["_RowsEvent__read_string"]
    column = _StringColumn(charset)
    events = [_event(_pascal(data)), _event(_pascal(data))]
    for event in events:
        event._ignore_decode_errors = False  # the stream's setting, as sparkcdc opens it
    assert mysql_replication._read_string(events[0], 1, column) == upstream(events[1], 1, column)
