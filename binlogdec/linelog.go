package main

import (
	"encoding/hex"
	"fmt"
	"hash"
	"slices"
	"strconv"
	"unicode/utf8"

	"golang.org/x/crypto/blake2b"
)

// Rendered lines (log mode with "render" on a table): the changelog sink's lines themselves, so
// the caller writes them as they come instead of converting and rendering every value in Python.
// A table's part of a batch is then
//
//	{"db", "table", "lines": BYTES, "ops": {"+I": n, "-U": n, "+U": n, "-D": n}, "first": {"file", "pos"}}
//
// and its BYTES bytes of lines follow the batch's JSON line, table after table in the order of
// "tables". A line is what operator/sparkcdc/sinks/changelog.py ``_render`` makes of the record:
//
//	{"op","table","data":{column: value...},"source":{"file","pos","ts_ms"},"id"}
//
// with Python's spellings (pyjson.go, pytime.go) and the id blake2b-96 of
// "table|file|pos|index|op" in hex. The caller asks for it only for tables whose every column has
// a kind below; a value this cannot spell as Python would stops the decoder ("unsupported"), and
// the Python reader goes on from the last batch.

// renderSpec is how a table's lines are spelled: its name as the lines give it, and each column's
// name and kind ("int", "uint" with its bits, "uint64", "decimal" with its scale, "float", "text"
// (UTF-8), "latin1", "date", "datetime", "timestamp").
type renderSpec struct {
	Table   string         `json:"table"`
	Columns []renderColumn `json:"columns"`
}

type renderColumn struct {
	Name  string `json:"name"`
	Kind  string `json:"kind"`
	Bits  int    `json:"bits"`
	Scale int    `json:"scale"`
}

// lineOps are the operations of the lines, in the order of their counts in lineLog.ops.
var lineOps = [...]string{"+I", "-U", "+U", "-D"}

// lineLog collects one table's rendered lines.
type lineLog struct {
	lines rowList
	ops   [len(lineOps)]int // the count of each of lineOps
	first *eventAt
	table []byte // the table's name, as JSON
	hash  []byte // "table|", the event id's start
	// The lines of one rows event share their source and most of their id's input: kept from the
	// event's first line for the others (source ends with the id's opening quote, scratch with
	// the "|" after pos).
	at      eventAt
	source  []byte
	scratch []byte
	hasher  hash.Hash // blake2b-96, reset for every id
	sum     [12]byte
}

func newLineLog(spec *renderSpec) *lineLog {
	hasher, _ := blake2b.New(12, nil) // fails only for a size outside 1..64 or a long key
	l := &lineLog{table: appendPyString(nil, spec.Table), hasher: hasher}
	l.hash = append([]byte(spec.Table), '|')
	return l
}

// absorb appends part's lines (rendered after this log's) to this log.
func (l *lineLog) absorb(part *lineLog) {
	l.lines.pieces = append(l.lines.pieces, part.lines.pieces...)
	l.lines.rows += part.lines.rows
	for i, n := range part.ops {
		l.ops[i] += n
	}
	if l.first == nil {
		l.first = part.first
	}
}

// appendRecord renders one record: op ("+I", "-U", "+U", "-D"), its image and place.
func (r *reduced) appendRecord(l *lineLog, op string, image []interface{}, at eventAt, index int) error {
	spec := r.spec.Render
	if len(image) != len(spec.Columns) {
		return fmt.Errorf("decoded %d values of an image of %d columns", len(image), len(spec.Columns))
	}
	l.counted(op, &at)
	b := l.appendHead(l.lines.pieceFor(), op)
	for i, column := range spec.Columns {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(appendPyString(b, column.Name), ':')
		var err error
		if b, err = appendPyValue(b, column, image[i]); err != nil {
			return unsupported{fmt.Sprintf("column %s of %s: %v", column.Name, spec.Table, err)}
		}
	}
	l.lines.done(l.appendTail(b, op, at, index))
	return nil
}

// counted counts a record of op, the first one's place kept.
func (l *lineLog) counted(op string, at *eventAt) {
	if l.first == nil {
		first := *at // a copy: only the first record's place is kept, not every one's
		l.first = &first
	}
	for i, known := range lineOps {
		if op == known {
			l.ops[i]++
			return
		}
	}
}

// appendHead starts a record's line, up to its data's first column.
func (l *lineLog) appendHead(b []byte, op string) []byte {
	b = append(b, `{"op":"`...)
	b = append(append(append(b, op...), `","table":`...), l.table...)
	return append(b, `,"data":{`...)
}

// appendTail ends a record's line after its data's last column: its source and id.
func (l *lineLog) appendTail(b []byte, op string, at eventAt, index int) []byte {
	if at != l.at || l.source == nil {
		l.at = at
		l.source = appendPyString(append(l.source[:0], `},"source":{"file":`...), at.file)
		l.source = strconv.AppendUint(append(l.source, `,"pos":`...), uint64(at.pos), 10)
		l.source = strconv.AppendUint(append(l.source, `,"ts_ms":`...), uint64(at.ts)*1000, 10)
		l.source = append(l.source, `},"id":"`...)
		l.scratch = append(append(l.scratch[:0], l.hash...), at.file...)
		l.scratch = append(strconv.AppendUint(append(l.scratch, '|'), uint64(at.pos), 10), '|')
		l.scratch = slices.Grow(l.scratch, 24) // the index and op are appended in place below
	}
	b = append(b, l.source...)
	id := strconv.AppendInt(l.scratch, int64(index), 10)
	id = append(append(id, '|'), op...)
	l.hasher.Reset()
	l.hasher.Write(id)
	b = hex.AppendEncode(b, l.hasher.Sum(l.sum[:0]))
	return append(b, "\"}\n"...)
}

// appendPyValue spells one decoded value as json.dumps does its canonical Python value.
func appendPyValue(b []byte, column renderColumn, v interface{}) ([]byte, error) {
	if v == nil {
		return append(b, "null"...), nil
	}
	switch column.Kind {
	case "int", "uint", "uint64":
		if n, unsigned, ok := integer(v); ok {
			return appendPyInteger(b, column, n, unsigned), nil
		}
	case "float":
		if f, ok := decodedFloat(v); ok {
			return appendPyFloat(b, f), nil
		}
	case "decimal", "text", "latin1", "date", "datetime", "timestamp":
		if s, ok := decodedText(v); ok {
			return appendPyText(b, column, s)
		}
	}
	return nil, fmt.Errorf("value of Go type %T for a %s column", v, column.Kind)
}

// appendPyInteger writes appendInteger's integer as the changelog spells it: quoted for "uint64"
// (a Decimal in Python: its text).
func appendPyInteger(b []byte, column renderColumn, n uint64, unsigned bool) []byte {
	if column.Kind == "uint64" {
		return append(appendInteger(append(b, '"'), column, n, unsigned), '"')
	}
	return appendInteger(b, column, n, unsigned)
}

// appendInteger writes the canonical integer of a decoded value of an "int", "uint" or "uint64"
// column: go-mysql reads the bits as signed unless the binlog says the column is unsigned, and an
// unsigned column's value is never negative (operator/sparkcdc/mysql/types.py).
func appendInteger(b []byte, column renderColumn, n uint64, unsigned bool) []byte {
	switch {
	case unsigned || column.Kind == "uint64":
		return strconv.AppendUint(b, n, 10)
	case column.Kind == "uint" && int64(n) < 0:
		return strconv.AppendInt(b, int64(n)+int64(1)<<column.Bits, 10)
	default:
		return strconv.AppendInt(b, int64(n), 10)
	}
}

// decodedFloat is a decoded FLOAT's or DOUBLE's value (a FLOAT's exactly, as a double).
func decodedFloat(v interface{}) (float64, bool) {
	switch x := v.(type) {
	case float32:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// decodedText is the text go-mysql gives a string, DECIMAL or temporal value.
func decodedText(v interface{}) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case []byte:
		return string(x), true
	}
	return "", false
}

func appendPyText(b []byte, column renderColumn, s string) ([]byte, error) {
	switch column.Kind {
	case "decimal":
		return appendPyDecimal(b, s, column.Scale)
	case "date":
		return appendPyDate(b, s)
	case "datetime", "timestamp":
		return appendPyDatetime(b, s, column.Kind == "timestamp")
	}
	if column.Kind == "latin1" {
		return appendPyString(b, decodeLatin1(s)), nil
	}
	if !utf8.ValidString(s) {
		return nil, fmt.Errorf("a string that is not UTF-8 in a UTF-8 column")
	}
	return appendPyString(b, s), nil
}

// integer is a decoded integer's bits, and whether go-mysql read them as unsigned.
func integer(v interface{}) (uint64, bool, bool) {
	switch x := v.(type) {
	case int8:
		return uint64(int64(x)), false, true
	case int16:
		return uint64(int64(x)), false, true
	case int32:
		return uint64(int64(x)), false, true
	case int64:
		return uint64(x), false, true
	case int:
		return uint64(int64(x)), false, true
	case uint8:
		return uint64(x), true, true
	case uint16:
		return uint64(x), true, true
	case uint32:
		return uint64(x), true, true
	case uint64:
		return x, true, true
	}
	return 0, false, false
}

// pieceFor returns the block to append a line to (lines need no separator).
func (l *rowList) pieceFor() []byte {
	if len(l.pieces) == 0 || cap(l.pieces[len(l.pieces)-1])-len(l.pieces[len(l.pieces)-1]) < pieceBytes/16 {
		l.pieces = append(l.pieces, newPiece())
	}
	l.rows++
	return l.pieces[len(l.pieces)-1]
}

func (l *rowList) size() int {
	n := 0
	for _, p := range l.pieces {
		n += len(p)
	}
	return n
}

// appendSummary ends a table's part of the answer: the size of its lines, the count of each
// operation, where its first record is.
func (l *lineLog) appendSummary(b []byte) ([]byte, error) {
	b = strconv.AppendInt(append(b, `,"lines":`...), int64(l.lines.size()), 10)
	b = append(b, `,"ops":{`...)
	for i, op := range lineOps {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(append(append(append(b, '"'), op...), `":`...), int64(l.ops[i]), 10)
	}
	b = append(b, '}')
	if l.first != nil {
		b = appendPyString(append(b, `,"first":{"file":`...), l.first.file)
		b = strconv.AppendUint(append(b, `,"pos":`...), uint64(l.first.pos), 10)
		b = append(b, '}')
	}
	return append(b, '}'), nil
}
