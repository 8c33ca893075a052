// sparkcdc-binlogdec decodes one binlog range for sparkcdc's parallel catch-up and reduces it to the
// last row image per key, so Python only converts the rows that survive (operator/sparkcdc/mysql/
// binlog/native.py is its only caller and documents the protocol). With "follow" it reads the live
// stream instead and answers one reduced batch per line (follow.go).
//
// Request (JSON on stdin, so the password never appears in a process list):
//
//	{"host", "port", "user", "password", "tls": {"mode", "ca": PEM} (tls.go), "serverId",
//	 "flavor": "mariadb"|"mysql",
//	 "start": {"file", "pos"}, "stop": {"file", "pos"},
//	 "tables": [{"db", "table", "columns": N, "key": [column positions], "text": [column positions]}]}
//
// Answer (JSON on stdout): {"events": N, "tables": [{"db", "table", "upserts": [[v...]], "deletes": [[k...]]}]}
// or, when the range holds something this decoder does not handle exactly (a table whose binlog column
// count differs from the request, a partial row image, a DDL statement), {"unsupported": "why"}: the caller
// then decodes the range with python-mysql-replication. Values are the binlog's own: integers as signed
// numbers, BIT as an unsigned number, ENUM index, SET bitmask, DECIMAL and temporal values as the text the
// decoder renders (TIMESTAMP in UTC), strings of the "text" (UTF-8) columns as JSON strings, every other
// string or byte value base64-encoded. Errors go to stderr with exit code 1. In follow mode a table
// may ask for "render": the changelog's own lines instead of values (linelog.go), or "load": the
// upserts' LOAD DATA text beside them (loadtext.go).
//
// Most images of a backlog are superseded by a later one for the same key, so images are not decoded
// while streaming: they are cut out of their rows event by the column widths, keyed by their raw key
// bytes (image.go, reduce.go), and only the last image per key is decoded, by go-mysql's own row
// decoding (render.go), so the values are those go-mysql gives.
//
// SPARKCDC_BINLOGDEC_CPUPROFILE=path writes a CPU profile (go tool pprof) for tuning.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/pprof"
	"strconv"
)

type position struct {
	File string `json:"file"`
	Pos  uint32 `json:"pos"`
	GTID string `json:"gtid,omitempty"` // MariaDB's GTID position there, where known (gtid.go)
}

type tableSpec struct {
	DB      string `json:"db"`
	Table   string `json:"table"`
	Columns int    `json:"columns"`
	Key     []int  `json:"key"`
	// Columns in a UTF-8 character set: their strings are sent as JSON strings, not base64.
	Text []int `json:"text"`
	// The columns' names in order: a table map must carry the same (binlog_row_metadata=FULL),
	// else its rows were written under another definition of the same width.
	Names []string `json:"names"`
	// Set in log mode: the changelog's lines rendered here (linelog.go).
	Render *renderSpec `json:"render"`
	// Set in follow mode, reduced: the upserts' load text as well (loadtext.go).
	Load *renderSpec `json:"load"`
}

type request struct {
	Host     string      `json:"host"`
	Port     uint16      `json:"port"`
	User     string      `json:"user"`
	Password string      `json:"password"`
	TLS      tlsSpec     `json:"tls"`
	ServerID uint32      `json:"serverId"`
	Flavor   string      `json:"flavor"`
	Start    position    `json:"start"`
	Stop     position    `json:"stop"`
	Tables   []tableSpec `json:"tables"`
	// Set: follow the binlog from Start with no end (follow.go) instead of decoding Start..Stop.
	Follow *followSpec `json:"follow"`
	// MariaDB's GTID position at Start, when the caller knows it: followed batches then end with
	// their own (follow.go, gtid.go).
	StartGTID string `json:"startGtid"`
	// Not 0: the @@server_id the source must have (a failover behind its address is an error).
	ExpectServerID uint32 `json:"expectServerId"`
}

type unsupported struct{ why string }

func (u unsupported) Error() string { return u.why }

func fail(err error) {
	out := json.NewEncoder(os.Stdout)
	if u, ok := err.(unsupported); ok {
		_ = out.Encode(map[string]string{"unsupported": u.why})
		os.Exit(0)
	}
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

// answer renders {"events": N, "tables": [...]} as encoding/json would the struct it once was, in
// pieces to write one after the other.
func answer(tables map[string]*reduced, events int, flavor string) ([][]byte, error) {
	return answerWith([]byte(`{"events":`), tables, events, flavor)
}

// answerWith is answer with the object's opening (a followed batch puts its end first).
func answerWith(open []byte, tables map[string]*reduced, events int, flavor string) ([][]byte, error) {
	head := append(open, strconv.Itoa(events)...)
	if len(tables) == 0 {
		return [][]byte{append(head, `,"tables":null}`+"\n"...)}, nil
	}
	out := [][]byte{append(head, `,"tables":[`...)}
	var after [][]byte // rendered lines, after the answer's line
	for _, t := range tables {
		var rows tableOut
		if err := t.render(flavor, &rows); err != nil {
			return nil, err
		}
		b := []byte(`{"db":`)
		if len(out) > 1 {
			b = []byte(`,{"db":`)
		}
		b, err := appendJSON(b, t.spec.DB)
		if err != nil {
			return nil, err
		}
		if b, err = appendJSON(append(b, `,"table":`...), t.spec.Table); err != nil {
			return nil, err
		}
		if t.log && rows.lines != nil {
			b, err = rows.lines.appendSummary(b)
			if err != nil {
				return nil, err
			}
			out, after = append(out, b), append(after, rows.lines.lines.pieces...)
			continue
		} else if t.log {
			out = append(append(out, append(b, `,"changes":[`...)), rows.changes.pieces...)
		} else if t.spec.Load != nil {
			b = strconv.AppendInt(append(b, `,"load":`...), int64(rows.load.size()), 10)
			b = strconv.AppendInt(append(b, `,"rows":`...), int64(rows.load.rows), 10)
			b = strconv.AppendInt(append(b, `,"json":`...), int64(rows.upserts.size()), 10)
			out = append(append(out, append(b, `,"deletes":[`...)), rows.deletes.pieces...)
			after = append(append(after, rows.load.pieces...), rows.upserts.pieces...)
		} else {
			out = append(append(out, append(b, `,"upserts":[`...)), rows.upserts.pieces...)
			out = append(append(out, []byte(`],"deletes":[`)), rows.deletes.pieces...)
		}
		out = append(out, []byte("]}"))
	}
	return append(append(out, []byte("]}\n")), after...), nil
}

// profileCPU writes a CPU profile to $SPARKCDC_BINLOGDEC_CPUPROFILE when it is set (for go tool pprof
// while tuning the decoder); the returned function ends it.
func profileCPU() func() {
	path := os.Getenv("SPARKCDC_BINLOGDEC_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fail(fmt.Errorf("creating the CPU profile: %w", err))
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fail(fmt.Errorf("starting the CPU profile: %w", err))
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}

func main() {
	stopProfile := profileCPU()
	defer stopProfile()
	var req request
	dec := json.NewDecoder(os.Stdin)
	if err := dec.Decode(&req); err != nil {
		fail(fmt.Errorf("reading the request: %w", err))
	}
	if req.Follow != nil {
		// The caller keeps stdin open while it follows: its end (the caller closed it, or died)
		// ends the decoder, so no replica connection outlives the pipeline's process.
		go func() {
			_, _ = io.Copy(io.Discard, io.MultiReader(dec.Buffered(), os.Stdin))
			stopProfile() // os.Exit skips the deferred call
			os.Exit(0)
		}()
		if err := follow(req, os.Stdout); err != nil {
			fail(err)
		}
		return
	}
	tables, events, err := decode(req)
	if err != nil {
		fail(err)
	}
	out, err := answer(tables, events, req.Flavor)
	if err != nil {
		fail(err)
	}
	buffers := net.Buffers(out)
	if _, err := buffers.WriteTo(os.Stdout); err != nil {
		fail(err)
	}
}
