package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/replication"
)

// Follow mode: the live binlog stream of a pipeline, decoded here and answered in batches.
//
// Request: the catch-up request without "stop", with
//
//	"follow": {"batchEvents": N, "batchMillis": T, "heartbeatSeconds": H}
//
// Answer: one JSON line per batch (and one per DDL statement, see onDDL), each the reduction of whole transactions (the last image per key
// of every requested table), ending at a transaction boundary:
//
//	{"end": {"file", "pos", "gtid"}, "newest": S, "events": N, "tables": [...as in a range answer...]}
//
// ("newest": the latest event time of its rows, Unix seconds; 0 without rows; "gtid": MariaDB's
// GTID position at "end", given "startGtid", as gtid.go keeps it; every "end" and "at" has it).
//
// A batch closes at the first boundary after N row events, or T milliseconds after the previous one
// (also while the source is idle, when the stream moved past other tables' transactions); a
// heartbeat of the source answers a batch without rows at the same end. When the
// stream holds something this decoder does not handle exactly (see decode), the batches up to the
// last boundary before it are answered, then
//
//	{"unsupported": "why", "end": {"file", "pos"}}
//
// and the decoder exits 0: the caller reads on from "end" with python-mysql-replication. The answer
// is written as it is made; a caller that reads slowly slows the decoder (the pipe fills), which
// bounds the memory of both.
type followSpec struct {
	BatchEvents      int  `json:"batchEvents"`
	BatchMillis      int  `json:"batchMillis"`
	HeartbeatSeconds int  `json:"heartbeatSeconds"`
	Changes          bool `json:"changes"` // every change in order, not reduced (changelog.go)
}

// follower is the state of a followed stream: what is reduced since the last answered batch, and
// where the stream stands.
type follower struct {
	req     request
	d       *decoding
	out     *bufio.Writer
	file    string
	last    position // the last transaction boundary read (with the GTID position there)
	emitted position // the end of the last batch answered
	gtids   *gtidPosition
	open    bool // rows read since the last boundary: a batch cannot close here
	since   time.Time
	newest  uint32 // the newest event time (Unix seconds) of the batch's rows, for the caller's lag
}

// outBuffer is the size of the answer's buffer: small parts gather in it, blocks of lines
// (pieceBytes) pass it by.
const outBuffer = 64 << 10

func follow(req request, w io.Writer) error {
	syncer, streamer, err := startSync(req)
	if err != nil {
		return err
	}
	defer syncer.Close()
	f := &follower{
		req: req, d: newDecoding(req), out: bufio.NewWriterSize(w, outBuffer),
		file: req.Start.File, since: time.Now(), gtids: newGTIDPosition(req.StartGTID),
	}
	f.last = f.gtids.at(req.Start)
	f.emitted = f.last
	wait := time.Duration(max(1, req.Follow.BatchMillis)) * time.Millisecond
	for {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		raw, err := streamer.GetEvent(ctx)
		cancel()
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			err = f.emitIfDue(true)
		case err == nil:
			err = f.onRaw(raw.RawData)
		default:
			return err
		}
		if err != nil {
			var u unsupported
			if errors.As(err, &u) {
				return f.stop(u)
			}
			return err
		}
	}
}

// onRaw handles one event of the stream.
func (f *follower) onRaw(data []byte) error {
	ev, err := f.d.reader.parser.Parse(data)
	if err != nil {
		return err
	}
	if rotate, ok := ev.Event.(*replication.RotateEvent); ok {
		f.file = string(rotate.NextLogName)
		f.d.file = f.file
		return nil
	}
	if g, ok := ev.Event.(*replication.MariadbGTIDEvent); ok {
		// Each transaction (and DDL statement) begins with its GTID: the position after it has it.
		f.gtids.add(g.GTID)
	}
	if t := ev.Header.EventType; t == replication.HEARTBEAT_EVENT || t == replication.HEARTBEAT_LOG_EVENT_V2 {
		if f.open {
			return nil
		}
		// The source has nothing more: an empty batch tells the caller it has applied everything
		// (its lag is 0), as the Python reader's heartbeat boundaries do.
		return f.emit()
	}
	if err := f.d.onEvent(ev); err != nil {
		return err
	}
	if _, ok := ev.Event.(*replication.RowsEvent); ok {
		f.open, f.newest = true, max(f.newest, ev.Header.Timestamp)
		return nil
	}
	if outsideTransactions[ev.Header.EventType] && !f.open && ev.Header.LogPos != 0 {
		// Only ever between transactions: the position after one is a boundary (a rotated binlog
		// ends in them), as for the Python reader (mysql/binlog/reader.py OUTSIDE_TRANSACTIONS).
		if err := f.d.onEvent(ev); err != nil {
			return err
		}
		f.advance(f.gtids.at(position{File: f.file, Pos: ev.Header.LogPos}))
		return f.emitIfDue(false)
	}
	if q, ok := ev.Event.(*replication.QueryEvent); ok && isDDL(q) && ev.Header.LogPos != 0 {
		return f.onDDL(q, f.gtids.at(position{File: f.file, Pos: ev.Header.LogPos}))
	}
	boundary, err := isBoundary(ev)
	if err != nil || !boundary || ev.Header.LogPos == 0 {
		return err
	}
	f.advance(f.gtids.at(position{File: f.file, Pos: ev.Header.LogPos}))
	f.open = false
	return f.emitIfDue(false)
}

// outsideTransactions are the events only ever written between transactions.
var outsideTransactions = map[replication.EventType]bool{
	replication.FORMAT_DESCRIPTION_EVENT:        true,
	replication.STOP_EVENT:                      true,
	replication.MARIADB_GTID_LIST_EVENT:         true,
	replication.MARIADB_BINLOG_CHECKPOINT_EVENT: true,
	replication.PREVIOUS_GTIDS_EVENT:            true,
}

// advance moves the last boundary forward, never back: the source opens a stream with the format
// description of the start's file, whose position lies before the start.
func (f *follower) advance(p position) {
	if p.File == f.last.File && p.Pos <= f.last.Pos {
		return
	}
	f.last = p
}

// emitIfDue answers the batch up to the last boundary when it is big or old enough (idle: the
// wait for the next event timed out).
func (f *follower) emitIfDue(idle bool) error {
	if f.open || f.last == f.emitted {
		return nil
	}
	age := time.Since(f.since) >= time.Duration(f.req.Follow.BatchMillis)*time.Millisecond
	if !idle && !age && f.d.events < f.req.Follow.BatchEvents {
		return nil
	}
	return f.emit()
}

func (f *follower) emit() error {
	open, err := appendJSON([]byte(`{"end":`), f.last)
	if err != nil {
		return err
	}
	open = append(append(append(open, `,"newest":`...), strconv.FormatUint(uint64(f.newest), 10)...), `,"events":`...)
	pieces, err := answerWith(open, f.d.tables, f.d.events, f.req.Flavor)
	if err != nil {
		// Nothing of the batch is written yet: the caller reads it again the Python way (stop).
		return unsupported{fmt.Sprintf("rendering the batch after %s:%d: %v", f.emitted.File, f.emitted.Pos, err)}
	}
	for _, p := range pieces {
		if len(p) > outBuffer && f.out.Buffered() > 0 {
			// Emptied first, the buffer passes a block of lines straight to the pipe, uncopied.
			if err := f.out.Flush(); err != nil {
				return err
			}
		}
		if _, err := f.out.Write(p); err != nil {
			return err
		}
	}
	if err := f.out.Flush(); err != nil {
		return err
	}
	recyclePieces(pieces)
	f.d.reset(f.req.Tables)
	f.emitted, f.since, f.newest = f.last, time.Now(), 0
	return nil
}

// isDDL tells a statement other than a transaction's BEGIN, COMMIT, XA or savepoints (as
// isBoundary does).
func isDDL(q *replication.QueryEvent) bool {
	head := strings.ToUpper(strings.TrimSpace(string(q.Query)))
	return !strings.HasPrefix(head, "BEGIN") && !strings.HasPrefix(head, "COMMIT") &&
		!strings.HasPrefix(head, "XA") && !withinTransaction(head)
}

// withinTransaction tells the statements logged inside a transaction between its rows: savepoints
// (SAVEPOINT, ROLLBACK [WORK] TO, RELEASE SAVEPOINT), which applications use and a JDBC sink on the
// source's server writes (sinks/jdbc/bulk_load.py). They neither change a table nor end anything.
func withinTransaction(head string) bool {
	words := strings.Fields(head)
	if len(words) > 0 && words[0] == "ROLLBACK" && len(words) > 1 && words[1] == "WORK" {
		words = append(words[:1], words[2:]...)
	}
	switch {
	case len(words) == 0:
		return false
	case words[0] == "SAVEPOINT":
		return true
	case words[0] == "RELEASE" || words[0] == "ROLLBACK":
		return len(words) > 1 && (words[1] == "SAVEPOINT" || words[1] == "TO")
	}
	return false
}

// onDDL answers the batch before a DDL statement, then the statement itself, for the caller to
// judge (it may concern none of its tables: the sink's own DDL when it shares the server): its
// "at" is the boundary before it, its "end" the one after it, where the stream goes on. The next
// batch ends past "end" (without rows, if the stream is idle, once the batch interval passed): a
// caller that reads on checkpoints past the statement then, not at the next heartbeat.
func (f *follower) onDDL(q *replication.QueryEvent, end position) error {
	if f.open {
		return unsupported{"a DDL statement inside a transaction"}
	}
	if f.last != f.emitted {
		if err := f.emit(); err != nil {
			return err
		}
	}
	line, err := appendJSON([]byte(`{"ddl":`), string(q.Query))
	if err != nil {
		return err
	}
	if line, err = appendJSON(append(line, `,"schema":`...), string(q.Schema)); err != nil {
		return err
	}
	if line, err = appendJSON(append(line, `,"at":`...), f.emitted); err != nil {
		return err
	}
	if line, err = appendJSON(append(line, `,"end":`...), end); err != nil {
		return err
	}
	if _, err := f.out.Write(append(line, "}\n"...)); err != nil {
		return err
	}
	f.last, f.since = end, time.Now()
	return f.out.Flush()
}

// stop answers what is reduced up to the last boundary, then where the decoder stops and why.
func (f *follower) stop(u unsupported) error {
	if !f.open && f.last != f.emitted {
		if err := f.emit(); err != nil {
			// A batch that cannot be rendered is the reason then, and the caller reads it again.
			if !errors.As(err, &u) {
				return err
			}
		}
	}
	// Rows read after the last boundary belong to a transaction the caller reads again.
	line, err := appendJSON([]byte(`{"unsupported":`), u.why)
	if err != nil {
		return err
	}
	if line, err = appendJSON(append(line, `,"end":`...), f.emitted); err != nil {
		return err
	}
	if _, err := f.out.Write(append(line, "}\n"...)); err != nil {
		return err
	}
	return f.out.Flush()
}
