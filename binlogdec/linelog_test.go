package main

import "testing"

// A line's source and id are kept from the previous line of the same rows event: every line must
// still read as one rendered by a log that saw nothing before it.
func TestAKeptSourceIsTheLinesOwn(t *testing.T) {
	spec := &renderSpec{Table: "db.t"}
	kept := newLineLog(spec)
	places := []eventAt{
		{"mariadb-bin.000001", 400, 1700000000}, {"mariadb-bin.000001", 400, 1700000000},
		{"mariadb-bin.000001", 900, 1700000000}, {"mariadb-bin.000002", 900, 1700000000},
		{"mariadb-bin.000002", 900, 1700000001}, {"mariadb-bin.000002", 900, 1700000001},
	}
	for i, at := range places {
		for _, op := range lineOps {
			got := string(kept.appendTail(nil, op, at, i*7))
			want := string(newLineLog(spec).appendTail(nil, op, at, i*7))
			if got != want {
				t.Fatalf("line %d %s at %+v:\n got %s\nwant %s", i, op, at, got, want)
			}
		}
	}
	if got, want := string(newLineLog(spec).appendTail(nil, "+U", places[0], 3)),
		`},"source":{"file":"mariadb-bin.000001","pos":400,"ts_ms":1700000000000},"id":"`; got[:len(want)] != want {
		t.Fatalf("source: %s", got)
	}
}
