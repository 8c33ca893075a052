package main

import (
	"testing"

	"github.com/go-mysql-org/go-mysql/replication"
)

func TestSavepointsAreNeitherDDLNorBoundaries(t *testing.T) {
	for _, q := range []string{"SAVEPOINT `sparkcdc_bulk_load`", "rollback to savepoint x", "ROLLBACK WORK TO x",
		" RELEASE SAVEPOINT x", "ROLLBACK TO x"} {
		ev := &replication.BinlogEvent{Event: &replication.QueryEvent{Query: []byte(q)}}
		if isDDL(ev.Event.(*replication.QueryEvent)) {
			t.Fatalf("%q taken for DDL", q)
		}
		if boundary, err := isBoundary(ev); boundary || err != nil {
			t.Fatalf("%q: boundary %v, %v", q, boundary, err)
		}
	}
	for _, q := range []string{"ALTER TABLE t ADD c INT", "ROLLBACK", "RELEASE_LOCK"} {
		if !isDDL(&replication.QueryEvent{Query: []byte(q)}) {
			t.Fatalf("%q not taken for DDL", q)
		}
	}
}
