"""When the live reader asks the source how far behind it is: after one interval, then at most once
per interval, and "behind" only from the threshold on (engine/backlog.py)."""

from __future__ import annotations

from collections.abc import Callable

from sparkcdc.core.offsets import BinlogOffset
from sparkcdc.engine.backlog import BacklogProbe
from sparkcdc.mysql.connection import SourceConfig

AT = BinlogOffset("binlog.000001", 400)


class Probe(BacklogProbe):
    """The probe with the source's answer given by the test: bytes ahead of ``committed``."""

    def __init__(
        self, clock: list[float], backlog: list[int], report: Callable[[int], None] | None = None
    ) -> None:
        super().__init__(SourceConfig("127.0.0.1"), 1000, interval=5.0, clock=lambda: clock[0], report=report)
        self.backlog, self.looks = backlog, 0

    def measure(self, committed: BinlogOffset) -> int:
        self.looks += 1
        return self.backlog[0]


def test_the_first_look_waits_one_interval_and_looks_are_spaced() -> None:
    now, backlog = [100.0], [5000]
    probe = Probe(now, backlog)
    assert not probe.behind(AT) and probe.looks == 0  # the live reader just started
    now[0] = 105.0
    assert probe.behind(AT) and probe.looks == 1 and probe.last_backlog == 5000
    now[0] = 107.0
    assert not probe.behind(AT) and probe.looks == 1  # between looks: no query, not behind
    now[0] = 110.0
    backlog[0] = 999
    assert not probe.behind(AT) and probe.looks == 2  # under the threshold


def test_the_threshold_itself_counts_as_behind() -> None:
    now = [0.0]
    probe = Probe(now, [1000])
    now[0] = 5.0
    assert probe.behind(AT)


def test_every_look_is_reported_and_nothing_between_looks() -> None:
    now, reported = [0.0], list[int]()
    probe = Probe(now, [4096], report=reported.append)  # the streamer passes its listener's method
    probe.behind(AT)
    assert reported == []  # no look yet
    now[0] = 5.0
    probe.behind(AT)
    now[0] = 6.0
    probe.behind(AT)
    assert reported == [4096]
