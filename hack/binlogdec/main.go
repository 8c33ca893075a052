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
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"
	"unicode/utf8"

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
	// Columns in a UTF-8 character set: their strings are sent as JSON strings, not base64.
	Text []int `json:"text"`
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

// row is one decoded image, kept until the end of the range only if it is its key's last image (it
// is rendered to JSON then; most images of a busy backlog are superseded before that).
type row struct {
	values []interface{}
	types  []byte
}

// reduced is one table's net effect: the last image of every key whose last change left a row, and
// the keys whose last change removed it (disjoint, as core/merge.py's BackfillChanges).
type reduced struct {
	spec    tableSpec
	text    []bool
	upserts map[string]row
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

func isText(columnType byte) bool {
	switch columnType {
	case mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING, mysql.MYSQL_TYPE_STRING:
		return true
	}
	return false
}

func (r *reduced) encode(i int, v interface{}, columnType byte) (json.RawMessage, error) {
	if bits, ok := v.(int64); ok && columnType == mysql.MYSQL_TYPE_BIT {
		v = uint64(bits) // BIT(64) with its top bit set is not a negative number
	}
	if r.text[i] {
		if raw, ok := v.([]byte); ok {
			v = string(raw)
		}
		if str, ok := v.(string); ok {
			if !utf8.ValidString(str) {
				return nil, unsupported{"a string that is not UTF-8 in a UTF-8 column"}
			}
			return json.Marshal(str)
		}
	}
	return encodeValue(v, isText(columnType))
}

func (r *reduced) encodeRow(image row) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, len(image.values))
	for i, v := range image.values {
		enc, err := r.encode(i, v, image.types[i])
		if err != nil {
			return nil, err
		}
		out[i] = enc
	}
	return out, nil
}

func (r *reduced) keyValues(image row) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, len(r.spec.Key))
	for i, k := range r.spec.Key {
		enc, err := r.encode(k, image.values[k], image.types[k])
		if err != nil {
			return nil, err
		}
		out[i] = enc
	}
	return out, nil
}

// key identifies a row by its key columns' rendering, which is equal exactly when the values are.
func key(values []json.RawMessage) string {
	parts := make([]string, len(values))
	for i, v := range values {
		parts[i] = string(v)
	}
	return strings.Join(parts, "\x1f")
}

// retained copies what the decoder handed out as views of its packet buffer.
func retained(values []interface{}) []interface{} {
	out := make([]interface{}, len(values))
	for i, v := range values {
		switch x := v.(type) {
		case []byte:
			out[i] = bytes.Clone(x)
		case string:
			out[i] = strings.Clone(x)
		default:
			out[i] = v
		}
	}
	return out
}

// apply reduces one rows event into its table, as core/merge.py's collapse does: an update that
// changes the key is a delete of the old key and an insert of the new one.
func (r *reduced) apply(ev *replication.RowsEvent) (int, error) {
	images := make([]row, len(ev.Rows))
	keys := make([]string, len(ev.Rows))
	keyValues := make([][]json.RawMessage, len(ev.Rows))
	for i, values := range ev.Rows {
		if (i < len(ev.SkippedColumns) && len(ev.SkippedColumns[i]) > 0) || len(values) != r.spec.Columns {
			return 0, unsupported{"a partial row image (binlog_row_image is not FULL)"}
		}
		images[i] = row{values, ev.Table.ColumnType}
		kv, err := r.keyValues(images[i])
		if err != nil {
			return 0, err
		}
		keys[i], keyValues[i] = key(kv), kv
	}
	upsert := func(i int) {
		r.upserts[keys[i]] = row{retained(images[i].values), images[i].types}
		delete(r.deletes, keys[i])
	}
	remove := func(i int) {
		delete(r.upserts, keys[i])
		r.deletes[keys[i]] = keyValues[i]
	}
	switch ev.Type() {
	case replication.EnumRowsEventTypeInsert:
		for i := range images {
			upsert(i)
		}
		return len(images), nil
	case replication.EnumRowsEventTypeDelete:
		for i := range images {
			remove(i)
		}
		return len(images), nil
	case replication.EnumRowsEventTypeUpdate:
		for i := 0; i+1 < len(images); i += 2 {
			if keys[i] != keys[i+1] {
				remove(i)
			}
			upsert(i + 1)
		}
		return len(images) / 2, nil
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
		text := make([]bool, t.Columns)
		for _, i := range t.Text {
			text[i] = true
		}
		tables[t.DB+"\x00"+t.Table] = &reduced{t, text, map[string]row{}, map[string][]json.RawMessage{}}
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
		case *replication.TransactionPayloadEvent:
			// MySQL's binlog_transaction_compression: rows inside a compressed payload.
			return nil, 0, unsupported{"a compressed transaction payload"}
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

func fail(err error) {
	out := json.NewEncoder(os.Stdout)
	if u, ok := err.(unsupported); ok {
		_ = out.Encode(map[string]string{"unsupported": u.why})
		os.Exit(0)
	}
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

func render(tables map[string]*reduced, events int) (interface{}, error) {
	answer := struct {
		Events int        `json:"events"`
		Tables []tableOut `json:"tables"`
	}{Events: events}
	for _, t := range tables {
		o := tableOut{DB: t.spec.DB, Table: t.spec.Table, Upserts: [][]json.RawMessage{}, Deletes: [][]json.RawMessage{}}
		for _, image := range t.upserts {
			enc, err := t.encodeRow(image)
			if err != nil {
				return nil, err
			}
			o.Upserts = append(o.Upserts, enc)
		}
		for _, key := range t.deletes {
			o.Deletes = append(o.Deletes, key)
		}
		answer.Tables = append(answer.Tables, o)
	}
	return answer, nil
}

func main() {
	var req request
	if err := json.NewDecoder(os.Stdin).Decode(&req); err != nil {
		fail(fmt.Errorf("reading the request: %w", err))
	}
	tables, events, err := decode(req)
	if err != nil {
		fail(err)
	}
	answer, err := render(tables, events)
	if err != nil {
		fail(err)
	}
	if err := json.NewEncoder(os.Stdout).Encode(answer); err != nil {
		fail(err)
	}
}
