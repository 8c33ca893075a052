package main

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/go-mysql-org/go-mysql/replication"
)

// tableMap is one table definition as the binlog maps it, shared by every image cut with it; the
// raw events are kept to decode the surviving images with go-mysql at the end (render.go).
type tableMap struct {
	layout *layout
	format []byte // the format description event in force when the table map was read
	raw    []byte // the table map event
}

// entry is the last image of one key: its bytes as cut from the rows event (a view of the event,
// which go-mysql reads into a buffer of its own per packet), or, when it removed the row, the key
// (as cut makes it: the values a delete is answered with).
type entry struct {
	image   []byte
	table   *tableMap
	deleted bool
}

// reduced is one table's net effect: the last image of every key, whose last change either left a
// row (an upsert) or removed it (a delete: disjoint, as core/merge.py's BackfillChanges).
type reduced struct {
	spec    tableSpec
	text    []bool
	all     []int                // every column position: an upsert's values
	maps    map[string]*tableMap // by definition (mapKey), so a range's many table maps share one
	index   keyIndex             // key -> entries
	entries []entry
	keys    []byte // the block the keys of deletes are copied to (one allocation for many)
	log     bool   // every change in order instead (changelog.go)
	changes []change
}

func newReduced(spec tableSpec, log bool) *reduced {
	text := make([]bool, spec.Columns)
	for _, i := range spec.Text {
		text[i] = true
	}
	all := make([]int, spec.Columns)
	for i := range all {
		all[i] = i
	}
	return &reduced{spec: spec, text: text, all: all, maps: map[string]*tableMap{}, index: newKeyIndex(), log: log}
}

// sameNames tells whether the table map names the request's columns, in order (case aside, as
// MySQL compares column names). Without names in the binlog nothing tells two definitions of the
// same width apart: not the same then. A request without names (an older caller) skips the check.
func (r *reduced) sameNames(t *replication.TableMapEvent) bool {
	if len(r.spec.Names) == 0 {
		return true
	}
	if len(t.ColumnName) != len(r.spec.Names) {
		return false
	}
	for i, name := range t.ColumnName {
		if !strings.EqualFold(string(name), r.spec.Names[i]) {
			return false
		}
	}
	return true
}

// mapKey identifies what decoding an image depends on: the columns' types and metadata.
func mapKey(t *replication.TableMapEvent) string {
	var b bytes.Buffer
	b.Write(t.ColumnType)
	for _, m := range t.ColumnMeta {
		b.WriteByte(byte(m))
		b.WriteByte(byte(m >> 8))
	}
	return b.String()
}

// tableMap interns the definition of a table map event read under the given format description; nil
// when its column count is not the request's (the table's rows events are unsupported then).
func (r *reduced) tableMap(t *replication.TableMapEvent, format, raw []byte) (*tableMap, error) {
	if int(t.ColumnCount) != r.spec.Columns || !r.sameNames(t) {
		return nil, nil
	}
	k := mapKey(t)
	if m := r.maps[k]; m != nil && bytes.Equal(m.format, format) {
		return m, nil
	}
	l, err := newLayout(t, r.spec, r.text)
	if err != nil {
		return nil, err
	}
	m := &tableMap{layout: l, format: format, raw: raw}
	r.maps[k] = m
	return m, nil
}

func (r *reduced) put(key []byte, e entry) {
	if i, ok := r.index.find(e.table.layout, key); ok {
		r.entries[i] = e
		return
	}
	r.index.add(e.table.layout, key, len(r.entries))
	r.entries = append(r.entries, e)
}

// keep copies a key (cut's scratch space) for a delete to keep.
func (r *reduced) keep(key []byte) []byte {
	if cap(r.keys)-len(r.keys) < len(key) {
		r.keys = make([]byte, 0, max(len(key), 1<<16))
	}
	start := len(r.keys)
	r.keys = append(r.keys, key...)
	return r.keys[start:len(r.keys):len(r.keys)]
}

// apply reduces the rows of one rows event (body: the images, after the event's header) into the
// table, as core/merge.py's collapse does: an update that changes the key is a delete of the old key
// and an insert of the new one; in log mode it keeps them all (changelog.go). It returns the row
// events applied.
func (r *reduced) apply(ev *replication.RowsEvent, table *tableMap, body []byte, at eventAt) (int, error) {
	kind := ev.Type()
	if kind == replication.EnumRowsEventTypeUnknown {
		return 0, unsupported{fmt.Sprintf("rows event type %v", kind)}
	}
	columns := int(ev.ColumnCount)
	if !fullImage(ev.ColumnBitmap1, columns) ||
		(kind == replication.EnumRowsEventTypeUpdate && !fullImage(ev.ColumnBitmap2, columns)) {
		return 0, unsupported{"a partial row image (binlog_row_image is not FULL)"}
	}
	if r.log {
		return r.logRows(kind, table, body, at)
	}
	if kind == replication.EnumRowsEventTypeUpdate {
		return r.applyUpdates(table, body)
	}
	var key []byte
	rows := 0
	for pos := 0; pos < len(body); rows++ {
		n, k, err := table.layout.cut(body[pos:], key[:0])
		if err != nil {
			return 0, err
		}
		if kind == replication.EnumRowsEventTypeDelete {
			r.put(k, entry{r.keep(k), table, true})
		} else {
			r.put(k, entry{body[pos : pos+n : pos+n], table, false})
		}
		key, pos = k, pos+n
	}
	return rows, nil
}

// applyUpdates reduces an update rows event's pairs of before and after images.
func (r *reduced) applyUpdates(table *tableMap, body []byte) (int, error) {
	var before, after []byte
	rows := 0
	for pos := 0; pos < len(body); rows++ {
		n, b, err := table.layout.cut(body[pos:], before[:0])
		if err != nil {
			return 0, err
		}
		m, a, err := table.layout.cut(body[pos+n:], after[:0])
		if err != nil {
			return 0, err
		}
		if !bytes.Equal(b, a) {
			r.put(b, entry{r.keep(b), table, true})
		}
		pos += n
		r.put(a, entry{body[pos : pos+m : pos+m], table, false})
		before, after, pos = b, a, pos+m
	}
	return rows, nil
}
