package main

import (
	"bufio"
	"bytes"
	"errors"
	"strings"
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

// A statement that concerns no captured table is answered for the caller to judge; an idle stream
// past it is then answered with a batch without rows ending after it, so the caller checkpoints
// there at once rather than at the source's next heartbeat.
func TestAnIdleStreamIsAnsweredPastADDLStatement(t *testing.T) {
	var out bytes.Buffer
	req := request{Flavor: "mariadb", Follow: &followSpec{BatchEvents: 10, BatchMillis: 1000}}
	f := &follower{req: req, d: newDecoding(req), out: bufio.NewWriter(&out), gtids: newGTIDPosition("")}
	f.last = position{File: "binlog.000001", Pos: 100}
	f.emitted = f.last
	grant := &replication.QueryEvent{Query: []byte("GRANT SELECT ON *.* TO 'u'@'%'")}
	if err := f.onDDL(grant, position{File: "binlog.000001", Pos: 200}); err != nil {
		t.Fatal(err)
	}
	if err := f.emitIfDue(true); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], `{"ddl":"GRANT`) ||
		!strings.Contains(lines[0], `"at":{"file":"binlog.000001","pos":100}`) ||
		!strings.HasPrefix(lines[1], `{"end":{"file":"binlog.000001","pos":200},"newest":0,"events":0,`) {
		t.Fatalf("answered:\n%s", out.String())
	}
	if err := f.emitIfDue(true); err != nil || strings.Count(out.String(), "\n") != 2 {
		t.Fatalf("answered again (%v):\n%s", err, out.String())
	}
}

// A batch the decoder cannot render is not answered: the decoder stops with the reason, and the
// end it gives is the last batch's, so the caller reads the batch again the Python way.
func TestABatchThatCannotBeRenderedStopsAtTheLastEnd(t *testing.T) {
	var out bytes.Buffer
	spec := tableSpec{DB: "db", Table: "t", Columns: 1, Render: &renderSpec{Table: "db.t",
		Columns: []renderColumn{{Name: "id", Kind: "int", Bits: 32}}}}
	req := request{Flavor: "mariadb", Tables: []tableSpec{spec},
		Follow: &followSpec{BatchEvents: 10, BatchMillis: 1000, Changes: true}}
	f := &follower{req: req, d: newDecoding(req), out: bufio.NewWriter(&out), gtids: newGTIDPosition("")}
	f.emitted = position{File: "binlog.000001", Pos: 100}
	f.last = position{File: "binlog.000001", Pos: 300}
	// A change whose table map go-mysql cannot parse again at render time.
	broken := &tableMap{format: []byte{1, 2, 3}, raw: []byte{4, 5, 6}}
	r := f.d.tables["db\x00t"]
	r.changes = append(r.changes, change{op: 'I', table: broken, after: []byte{0, 1, 0, 0, 0},
		at: eventAt{file: "binlog.000001", pos: 200}})
	f.d.events = 1

	err := f.emitIfDue(true)
	var u unsupported
	if !errors.As(err, &u) || out.Len() != 0 {
		t.Fatalf("emit: %v, answered %q", err, out.String())
	}
	if err := f.stop(u); err != nil {
		t.Fatal(err)
	}
	line := strings.TrimSpace(out.String())
	if strings.Count(line, "\n") != 0 || !strings.HasPrefix(line, `{"unsupported":"rendering the batch after binlog.000001:100: `) ||
		!strings.HasSuffix(line, `,"end":{"file":"binlog.000001","pos":100}}`) {
		t.Fatalf("answered:\n%s", out.String())
	}
}
