package main

import (
	"fmt"
	"runtime"
	"strconv"
	"sync"

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
// as its row, or as its changelog lines (linelog.go), which every core renders a part of.
func (r *reduced) renderLog(flavor string, out *tableOut) error {
	chunks := r.logChunks()
	if out.lines != nil {
		return r.renderLines(flavor, chunks, out.lines)
	}
	for _, span := range chunks {
		err := r.renderChunk(flavor, span, func(c change, before, after []interface{}, types []byte) error {
			return r.appendChange(&out.changes, c, before, after, types)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// logChunks cuts the kept changes into runs of one table map and about chunkBytes of images.
func (r *reduced) logChunks() [][2]int {
	var chunks [][2]int
	for start := 0; start < len(r.changes); {
		end, size := start, 0
		for ; end < len(r.changes) && r.changes[end].table == r.changes[start].table && (size < chunkBytes || end == start); end++ {
			size += len(r.changes[end].before) + len(r.changes[end].after)
		}
		chunks = append(chunks, [2]int{start, end})
		start = end
	}
	return chunks
}

// renderChunk decodes the images of the changes in span and hands each change its values; they
// are used before the next chunk is decoded (imageDecoder reuses its buffer).
func (r *reduced) renderChunk(flavor string, span [2]int, each func(c change, before, after []interface{}, types []byte) error) error {
	changes := r.changes[span[0]:span[1]]
	d, err := newImageDecoder(flavor, changes[0].table, nil)
	if err != nil {
		return err
	}
	images := make([][]byte, 0, 2*len(changes))
	for _, c := range changes {
		for _, image := range [][]byte{c.before, c.after} {
			if image != nil {
				images = append(images, image)
			}
		}
	}
	rows, err := d.decode(images)
	if err != nil {
		return err
	}
	for _, c := range changes {
		var before, after []interface{}
		if c.before != nil {
			before, rows = rows[0], rows[1:]
		}
		if c.after != nil {
			after, rows = rows[0], rows[1:]
		}
		if err := each(c, before, after, d.types); err != nil {
			return err
		}
	}
	return nil
}

// renderLines renders the chunks' lines into l, a run of chunks per core, each run into lines of
// its own, joined in order.
func (r *reduced) renderLines(flavor string, chunks [][2]int, l *lineLog) error {
	workers := min(runtime.GOMAXPROCS(0), len(chunks))
	parts, failures := make([]*lineLog, workers), make([]error, workers)
	var done sync.WaitGroup
	for w := range workers {
		parts[w] = newLineLog(r.spec.Render)
		done.Add(1)
		go func(part *lineLog, run [][2]int) {
			defer done.Done()
			for _, span := range run {
				if err := r.renderSpan(flavor, span, part); err != nil {
					failures[w] = err
					return
				}
			}
		}(parts[w], chunks[w*len(chunks)/workers:(w+1)*len(chunks)/workers])
	}
	done.Wait()
	for w, part := range parts {
		if failures[w] != nil {
			return failures[w]
		}
		l.absorb(part)
	}
	return nil
}

// renderSpan renders the changes of span into part: straight from their images where the table
// allows (direct.go), with go-mysql's values for the others.
func (r *reduced) renderSpan(flavor string, span [2]int, part *lineLog) error {
	viaValues := func(span [2]int) error {
		return r.renderChunk(flavor, span, func(c change, before, after []interface{}, _ []byte) error {
			return r.appendRecords(part, c, before, after)
		})
	}
	_, _, table, err := parseTableMap(flavor, r.changes[span[0]].table)
	if err != nil {
		return err
	}
	plan := newDirectPlan(table, r.spec.Render)
	if plan == nil {
		return viaValues(span)
	}
	for i := span[0]; i < span[1]; i++ {
		if !part.appendDirect(plan, r.changes[i]) {
			if err := viaValues([2]int{i, i + 1}); err != nil {
				return err
			}
		}
	}
	return nil
}

// appendDirect renders a change's records from its images (appendRecords' lines), or nothing
// when plan cannot spell one of them.
func (l *lineLog) appendDirect(plan *directPlan, c change) bool {
	type record struct {
		op    string
		image []byte
		index int
	}
	records := [2]record{{"+I", c.after, 2 * c.index}}
	count := 1
	switch c.op {
	case 'D':
		records[0] = record{"-D", c.before, 2 * c.index}
	case 'U':
		records = [2]record{{"-U", c.before, 2 * c.index}, {"+U", c.after, 2*c.index + 1}}
		count = 2
	}
	b := l.lines.pieceFor()
	for _, rec := range records[:count] {
		var ok bool
		if b, ok = plan.appendData(l.appendHead(b, rec.op), rec.image); !ok {
			l.lines.rows--
			return false
		}
		b = l.appendTail(b, rec.op, c.at, rec.index)
	}
	l.lines.rows += count - 1
	l.lines.done(b)
	for _, rec := range records[:count] {
		l.counted(rec.op, &c.at)
	}
	return true
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

// appendRecords renders a change as the changelog's records: an insert or a delete one, an update
// two (-U, +U), numbered as the Python reader numbers them (two per row of the event).
func (r *reduced) appendRecords(l *lineLog, c change, before, after []interface{}) error {
	switch c.op {
	case 'I':
		return r.appendRecord(l, "+I", after, c.at, 2*c.index)
	case 'D':
		return r.appendRecord(l, "-D", before, c.at, 2*c.index)
	}
	if err := r.appendRecord(l, "-U", before, c.at, 2*c.index); err != nil {
		return err
	}
	return r.appendRecord(l, "+U", after, c.at, 2*c.index+1)
}
