package main

import (
	"fmt"
	"strconv"

	"github.com/go-mysql-org/go-mysql/replication"
)

// Log mode ("follow": {"changes": true}): every row change of a requested table, in binlog order,
// instead of the last image per key, for sinks that keep a log of changes (the changelog sink).
// A table's part of a batch is then
//
//	{"db", "table", "changes": [[op, file, pos, index, ts, before, after], ...]}
//
// with op "I", "U" or "D"; file and pos the position after the rows event (as the Python reader's
// offsets); index the row's place in its event; ts the event's time (Unix seconds); before and
// after the images' values as a range answer renders them (null where the op has none).

// eventAt is where a rows event ends and when it was written.
type eventAt struct {
	file string
	pos  uint32
	ts   uint32
}

// change is one row change kept in order: its images as cut from the rows event.
type change struct {
	op            byte
	table         *tableMap
	before, after []byte
	at            eventAt
	index         int
}

// logRows keeps every row of one rows event (body: its images), as applied in log mode.
func (r *reduced) logRows(kind replication.EnumRowsEventType, table *tableMap, body []byte, at eventAt) (int, error) {
	var scratch []byte
	rows := 0
	for pos := 0; pos < len(body); rows++ {
		n, k, err := table.layout.cut(body[pos:], scratch[:0])
		if err != nil {
			return 0, err
		}
		c := change{table: table, at: at, index: rows}
		image := body[pos : pos+n : pos+n]
		pos += n
		switch kind {
		case replication.EnumRowsEventTypeInsert:
			c.op, c.after = 'I', image
		case replication.EnumRowsEventTypeDelete:
			c.op, c.before = 'D', image
		default:
			m, _, err := table.layout.cut(body[pos:], k[:0])
			if err != nil {
				return 0, err
			}
			c.op, c.before, c.after = 'U', image, body[pos:pos+m:pos+m]
			pos += m
		}
		r.changes = append(r.changes, c)
		scratch = k
	}
	return rows, nil
}

// renderLog decodes the kept changes' images in chunks of one table map and renders each change
// as its row; a chunk's values are rendered before the next is decoded (imageDecoder reuses its
// buffer).
func (r *reduced) renderLog(flavor string, out *rowList) error {
	for start := 0; start < len(r.changes); {
		m := r.changes[start].table
		d, err := newImageDecoder(flavor, m, nil)
		if err != nil {
			return err
		}
		end, size := start, 0
		var images [][]byte
		for ; end < len(r.changes) && r.changes[end].table == m && (size < chunkBytes || end == start); end++ {
			for _, image := range [][]byte{r.changes[end].before, r.changes[end].after} {
				if image != nil {
					images, size = append(images, image), size+len(image)
				}
			}
		}
		rows, err := d.decode(images)
		if err != nil {
			return err
		}
		for _, c := range r.changes[start:end] {
			var before, after []interface{}
			if c.before != nil {
				before, rows = rows[0], rows[1:]
			}
			if c.after != nil {
				after, rows = rows[0], rows[1:]
			}
			if err := r.appendChange(out, c, before, after, d.types); err != nil {
				return err
			}
		}
		start = end
	}
	return nil
}

// appendChange adds [op, file, pos, index, ts, before, after] to out.
func (r *reduced) appendChange(out *rowList, c change, before, after []interface{}, types []byte) error {
	b := append(append(append(out.next(), `["`...), c.op), `",`...)
	b, err := appendJSON(b, c.at.file)
	if err != nil {
		return err
	}
	b = strconv.AppendUint(append(b, ','), uint64(c.at.pos), 10)
	b = strconv.AppendInt(append(b, ','), int64(c.index), 10)
	b = strconv.AppendUint(append(b, ','), uint64(c.at.ts), 10)
	for _, image := range [][]interface{}{before, after} {
		if b, err = r.appendImage(append(b, ','), image, types); err != nil {
			return err
		}
	}
	out.done(append(b, ']'))
	return nil
}

// appendImage renders one image's values in column order (null without an image).
func (r *reduced) appendImage(b []byte, values []interface{}, types []byte) ([]byte, error) {
	if values == nil {
		return append(b, "null"...), nil
	}
	if len(values) != len(r.all) {
		return nil, fmt.Errorf("decoded %d values of an image of %d columns", len(values), len(r.all))
	}
	b = append(b, '[')
	for i, v := range values {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = r.appendValue(b, i, v, types[i]); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}
