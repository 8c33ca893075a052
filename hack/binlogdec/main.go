// sparkcdc-binlogdec decodes one binlog range for sparkcdc's parallel catch-up and reduces it to the
// last row image per key, so Python only converts the rows that survive (operator/sparkcdc/mysql/
// binlog_native.py is its only caller and documents the protocol).
//
// Request (JSON on stdin, so the password never appears in a process list):
//
//	{"host", "port", "user", "password", "serverId", "flavor": "mariadb"|"mysql",
//	 "start": {"file", "pos"}, "stop": {"file", "pos"},
//	 "tables": [{"db", "table", "columns": N, "key": [column positions]}]}
//
// Answer (JSON on stdout): {"events": N, "tables": [{"db", "table", "upserts": [[v...]], "deletes": [[k...]]}]}
// or, when the range holds something this decoder does not handle exactly (a table whose binlog column
// count differs from the request, a partial row image, a DDL statement), {"unsupported": "why"}: the caller
// then decodes the range with python-mysql-replication. Values are the binlog's own: integers as signed
// numbers, BIT as an unsigned number, ENUM index, SET bitmask, DECIMAL and temporal values as the text the
// decoder renders (TIMESTAMP in UTC), every string or byte value base64-encoded. Errors go to stderr with
// exit code 1.
package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

type position struct {
	File string `json:"file"`
	Pos  uint32 `json:"pos"`
}

type tableSpec struct {
	DB      string `json:"db"`
	Table   string `json:"table"`
	Columns int    `json:"columns"`
	Key     []int  `json:"key"`
}

type request struct {
	Host     string      `json:"host"`
	Port     uint16      `json:"port"`
	User     string      `json:"user"`
	Password string      `json:"password"`
	ServerID uint32      `json:"serverId"`
	Flavor   string      `json:"flavor"`
	Start    position    `json:"start"`
	Stop     position    `json:"stop"`
	Tables   []tableSpec `json:"tables"`
}

// reduced is one table's net effect: the last image of every key whose last change left a row, and
// the keys whose last change removed it (disjoint, as core/merge.py's BackfillChanges).
type reduced struct {
	spec    tableSpec
	upserts map[string][]json.RawMessage
	deletes map[string][]json.RawMessage
}

type unsupported struct{ why string }

func (u unsupported) Error() string { return u.why }

// encodeValue renders one decoded value; textual is true for CHAR/VARCHAR columns, whose strings are
// raw bytes in the column's charset (base64, like BLOB and TEXT bytes), while the decoder's own
// renderings (DECIMAL, temporal values) are ASCII text.
func encodeValue(v interface{}, textual bool) (json.RawMessage, error) {
	switch x := v.(type) {
	case nil:
		return json.RawMessage("null"), nil
	case []byte:
		return json.Marshal(base64.StdEncoding.EncodeToString(x))
	case string:
		if textual {
			return json.Marshal(base64.StdEncoding.EncodeToString([]byte(x)))
		}
		return json.Marshal(x)
	case float32:
		return json.Marshal(float64(x))
	case int8, int16, int32, int64, int, uint8, uint16, uint32, uint64, float64:
		return json.Marshal(x)
	default:
		return nil, unsupported{fmt.Sprintf("value of Go type %T", v)}
	}
}

func (r *reduced) key(row []json.RawMessage) string {
	parts := make([]string, len(r.spec.Key))
	for i, k := range r.spec.Key {
		parts[i] = string(row[k])
	}
	return strings.Join(parts, "\x1f")
}

func (r *reduced) keyValues(row []json.RawMessage) []json.RawMessage {
	out := make([]json.RawMessage, len(r.spec.Key))
	for i, k := range r.spec.Key {
		out[i] = row[k]
	}
	return out
}

func (r *reduced) upsert(row []json.RawMessage) {
	k := r.key(row)
	r.upserts[k] = row
	delete(r.deletes, k)
}

func (r *reduced) remove(row []json.RawMessage) {
	k := r.key(row)
	delete(r.upserts, k)
	r.deletes[k] = r.keyValues(row)
}

func isText(columnType byte) bool {
	switch columnType {
	case mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING, mysql.MYSQL_TYPE_STRING:
		return true
	}
	return false
}

func encodeRow(values []interface{}, skipped []int, types []byte) ([]json.RawMessage, error) {
	if len(skipped) > 0 || len(values) != len(types) {
		return nil, unsupported{"a partial row image (binlog_row_image is not FULL)"}
	}
	row := make([]json.RawMessage, len(values))
	for i, v := range values {
		if bits, ok := v.(int64); ok && types[i] == mysql.MYSQL_TYPE_BIT {
			v = uint64(bits) // BIT(64) with its top bit set is not a negative number
		}
		enc, err := encodeValue(v, isText(types[i]))
		if err != nil {
			return nil, err
		}
		row[i] = enc
	}
	return row, nil
}

// apply reduces one rows event into its table, as core/merge.py's collapse does: an update that
// changes the key is a delete of the old key and an insert of the new one.
func (r *reduced) apply(ev *replication.RowsEvent) (int, error) {
	rows := make([][]json.RawMessage, len(ev.Rows))
	for i, values := range ev.Rows {
		var skipped []int
		if i < len(ev.SkippedColumns) {
			skipped = ev.SkippedColumns[i]
		}
		row, err := encodeRow(values, skipped, ev.Table.ColumnType)
		if err != nil {
			return 0, err
		}
		rows[i] = row
	}
	switch ev.Type() {
	case replication.EnumRowsEventTypeInsert:
		for _, row := range rows {
			r.upsert(row)
		}
		return len(rows), nil
	case replication.EnumRowsEventTypeDelete:
		for _, row := range rows {
			r.remove(row)
		}
		return len(rows), nil
	case replication.EnumRowsEventTypeUpdate:
		for i := 0; i+1 < len(rows); i += 2 {
			if r.key(rows[i]) != r.key(rows[i+1]) {
				r.remove(rows[i])
			}
			r.upsert(rows[i+1])
		}
		return len(rows) / 2, nil
	}
	return 0, unsupported{fmt.Sprintf("rows event type %v", ev.Type())}
}

func isBoundary(ev *replication.BinlogEvent) (bool, error) {
	switch e := ev.Event.(type) {
	case *replication.XIDEvent:
		return true, nil
	case *replication.QueryEvent:
		head := strings.ToUpper(strings.TrimSpace(string(e.Query)))
		if strings.HasPrefix(head, "BEGIN") {
			return false, nil
		}
		if strings.HasPrefix(head, "COMMIT") || strings.HasPrefix(head, "XA") {
			return true, nil
		}
		return false, unsupported{"a DDL statement inside the range"}
	}
	return false, nil
}

func decode(req request) (map[string]*reduced, int, error) {
	tables := map[string]*reduced{}
	for _, t := range req.Tables {
		tables[t.DB+"\x00"+t.Table] = &reduced{t, map[string][]json.RawMessage{}, map[string][]json.RawMessage{}}
	}
	cfg := replication.BinlogSyncerConfig{
		ServerID:                req.ServerID,
		Flavor:                  req.Flavor,
		Host:                    req.Host,
		Port:                    req.Port,
		User:                    req.User,
		Password:                req.Password,
		TimestampStringLocation: time.UTC,
		MaxReconnectAttempts:    1,
		DisableRetrySync:        true,
		Logger:                  slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	syncer := replication.NewBinlogSyncer(cfg)
	defer syncer.Close()
	streamer, err := syncer.StartSync(mysql.Position{Name: req.Start.File, Pos: req.Start.Pos})
	if err != nil {
		return nil, 0, err
	}
	file, events := req.Start.File, 0
	ctx := context.Background()
	for {
		ev, err := streamer.GetEvent(ctx)
		if err != nil {
			return nil, 0, err
		}
		switch e := ev.Event.(type) {
		case *replication.RotateEvent:
			file = string(e.NextLogName)
			continue
		case *replication.RowsEvent:
			if t := tables[string(e.Table.Schema)+"\x00"+string(e.Table.Table)]; t != nil {
				if int(e.ColumnCount) != t.spec.Columns {
					return nil, 0, unsupported{fmt.Sprintf("%s.%s has %d columns in the binlog, %d in its definition",
						e.Table.Schema, e.Table.Table, e.ColumnCount, t.spec.Columns)}
				}
				n, err := t.apply(e)
				if err != nil {
					return nil, 0, err
				}
				events += n
			}
			continue
		}
		boundary, err := isBoundary(ev)
		if err != nil {
			return nil, 0, err
		}
		if ev.Header.LogPos == 0 || file != req.Stop.File {
			continue
		}
		if ev.Header.LogPos > req.Stop.Pos {
			return nil, 0, fmt.Errorf("passed the range end %s:%d without a commit there", req.Stop.File, req.Stop.Pos)
		}
		if boundary && ev.Header.LogPos == req.Stop.Pos {
			return tables, events, nil
		}
	}
}

type tableOut struct {
	DB      string              `json:"db"`
	Table   string              `json:"table"`
	Upserts [][]json.RawMessage `json:"upserts"`
	Deletes [][]json.RawMessage `json:"deletes"`
}

func main() {
	var req request
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		fmt.Fprintln(os.Stderr, "reading the request:", err)
		os.Exit(1)
	}
	tables, events, err := decode(req)
	out := json.NewEncoder(os.Stdout)
	if u, ok := err.(unsupported); ok {
		_ = out.Encode(map[string]string{"unsupported": u.why})
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	answer := struct {
		Events int        `json:"events"`
		Tables []tableOut `json:"tables"`
	}{Events: events}
	for _, t := range tables {
		o := tableOut{DB: t.spec.DB, Table: t.spec.Table, Upserts: [][]json.RawMessage{}, Deletes: [][]json.RawMessage{}}
		for _, row := range t.upserts {
			o.Upserts = append(o.Upserts, row)
		}
		for _, key := range t.deletes {
			o.Deletes = append(o.Deletes, key)
		}
		answer.Tables = append(answer.Tables, o)
	}
	if err := out.Encode(answer); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
