package main

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
)

func TestGTIDPositionFollowsEachDomainsLastTransaction(t *testing.T) {
	g := newGTIDPosition("1-2-10, 0-1-100")
	if got := g.at(position{File: "b.1", Pos: 4}).GTID; got != "0-1-100,1-2-10" {
		t.Fatalf("start: %q", got)
	}
	g.add(mysql.MariadbGTID{DomainID: 1, ServerID: 3, SequenceNumber: 11})
	g.add(mysql.MariadbGTID{DomainID: 5, ServerID: 1, SequenceNumber: 1})
	if got := g.at(position{}).GTID; got != "0-1-100,1-3-11,5-1-1" {
		t.Fatalf("after two transactions: %q", got)
	}
}

func TestAnUnknownStartStaysUnknown(t *testing.T) {
	for _, start := range []string{"", "not-a-gtid", " "} {
		g := newGTIDPosition(start)
		g.add(mysql.MariadbGTID{DomainID: 0, ServerID: 1, SequenceNumber: 7})
		if got := g.at(position{File: "b.1", Pos: 4}); got.GTID != "" {
			t.Fatalf("%q: %q", start, got.GTID)
		}
	}
}
