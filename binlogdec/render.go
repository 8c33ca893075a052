package main

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// chunkBytes bounds the images decoded at once (one synthetic rows event each).
const chunkBytes = 1 << 20

// imageDecoder decodes cut images with go-mysql's own RowsEvent decoding, so the values are exactly
// those it would have produced while streaming: the images of one table map are wrapped in a write
// rows event of their own and parsed after the format description and table map events they were
// read under.
type imageDecoder struct {
	parser   *replication.BinlogParser
	format   *replication.FormatDescriptionEvent
	tableID  uint64
	columns  int
	types    []byte
	template []byte // the synthetic event up to its images
	event    []byte // reused: the values of a chunk are rendered before the next is decoded
}

// newImageDecoder decodes images of m's table, or of the given columns of it alone.
func newImageDecoder(flavor string, m *tableMap, columns []int) (*imageDecoder, error) {
	parser, format, table, err := parseTableMap(flavor, m)
	if err != nil {
		return nil, err
	}
	if columns != nil {
		narrow(table, columns)
	}
	d := &imageDecoder{
		parser:  parser,
		format:  format,
		tableID: table.TableID,
		columns: int(table.ColumnCount),
		types:   table.ColumnType,
	}
	return d, d.buildTemplate()
}

// parseTableMap is m's table map event as a parser reads it after m's format description, with
// that parser (which then decodes rows events of the table) and the format description.
func parseTableMap(flavor string, m *tableMap) (
	*replication.BinlogParser, *replication.FormatDescriptionEvent, *replication.TableMapEvent, error,
) {
	parser := newParser(flavor)
	fde, err := parser.Parse(m.format)
	if err != nil {
		return nil, nil, nil, err
	}
	tm, err := parser.Parse(m.raw)
	if err != nil {
		return nil, nil, nil, err
	}
	return parser, fde.Event.(*replication.FormatDescriptionEvent), tm.Event.(*replication.TableMapEvent), nil
}

// narrow makes a table map describe the given columns alone. go-mysql decodes a rows event with
// the very *TableMapEvent its parser returned for the table id, so images of those columns alone
// then decode as the full table's would, column by column.
func narrow(table *replication.TableMapEvent, columns []int) {
	types, metas := make([]byte, len(columns)), make([]uint16, len(columns))
	for j, c := range columns {
		types[j], metas[j] = table.ColumnType[c], table.ColumnMeta[c]
	}
	table.ColumnCount, table.ColumnType, table.ColumnMeta = uint64(len(columns)), types, metas
}

// buildTemplate lays out a WRITE_ROWS_EVENTv1 header and post-header for the table (every column
// present), leaving the header's event size to fill in per chunk.
func (d *imageDecoder) buildTemplate() error {
	lengths := d.format.EventTypeHeaderLengths
	if len(lengths) < int(replication.WRITE_ROWS_EVENTv1) {
		return fmt.Errorf("the format description event has no write rows event")
	}
	idSize := 6
	if lengths[replication.WRITE_ROWS_EVENTv1-1] == 6 {
		idSize = 4
	}
	b := make([]byte, replication.EventHeaderSize, replication.EventHeaderSize+idSize+16)
	b[4] = byte(replication.WRITE_ROWS_EVENTv1)
	for i := 0; i < idSize; i++ {
		b = append(b, byte(d.tableID>>(8*i)))
	}
	b = append(b, 0, 0) // flags: not the statement's end, so the parser keeps the table map
	b = append(b, mysql.PutLengthEncodedInt(uint64(d.columns))...)
	for i := 0; i < (d.columns+7)/8; i++ {
		bits := byte(0xFF)
		if rest := d.columns - 8*i; rest < 8 {
			bits = byte(1<<rest - 1)
		}
		b = append(b, bits)
	}
	d.template = b
	return nil
}

// decode returns the values of the images, in order.
func (d *imageDecoder) decode(images [][]byte) ([][]interface{}, error) {
	size := len(d.template) + 4
	for _, image := range images {
		size += len(image)
	}
	if cap(d.event) < size {
		d.event = make([]byte, 0, size)
	}
	event := append(d.event[:0], d.template...)
	for _, image := range images {
		event = append(event, image...)
	}
	if d.format.ChecksumAlgorithm == replication.BINLOG_CHECKSUM_ALG_CRC32 {
		event = append(event, 0, 0, 0, 0) // sized first: the checksum covers the header
	}
	binary.LittleEndian.PutUint32(event[9:], uint32(len(event)))
	if d.format.ChecksumAlgorithm == replication.BINLOG_CHECKSUM_ALG_CRC32 {
		binary.LittleEndian.PutUint32(event[len(event)-4:], crc32.ChecksumIEEE(event[:len(event)-4]))
	}
	ev, err := d.parser.Parse(event)
	if err != nil {
		return nil, err
	}
	rows := ev.Event.(*replication.RowsEvent).Rows
	if len(rows) != len(images) {
		return nil, fmt.Errorf("decoded %d row images of %d", len(rows), len(images))
	}
	return rows, nil
}

// pieceBytes is the size of the blocks output is built in, so it is never copied to grow.
const pieceBytes = 1 << 20

// freePieces are blocks of answers already written, for the next batch's lines: a new block is
// large, and the runtime zeroes it. A few batches' worth are kept; the rest go to the collector.
var freePieces struct {
	sync.Mutex
	blocks [][]byte
}

const keptFreePieces = 32

func newPiece() []byte {
	freePieces.Lock()
	defer freePieces.Unlock()
	if n := len(freePieces.blocks); n > 0 {
		b := freePieces.blocks[n-1]
		freePieces.blocks = freePieces.blocks[:n-1]
		return b
	}
	return make([]byte, 0, pieceBytes)
}

// recyclePieces hands back the blocks of an answer once it is written: nothing may use them after.
func recyclePieces(pieces [][]byte) {
	freePieces.Lock()
	defer freePieces.Unlock()
	for _, b := range pieces {
		if cap(b) == pieceBytes && len(freePieces.blocks) < keptFreePieces {
			freePieces.blocks = append(freePieces.blocks, b[:0])
		}
	}
}

// rowList is a JSON array's rows (without the brackets), in blocks of about pieceBytes.
type rowList struct {
	pieces [][]byte
	rows   int
}

// next returns the block to append a row to, with the separator from the previous row.
func (l *rowList) next() []byte {
	b := l.pieceFor()
	if l.rows > 1 {
		b = append(b, ',')
	}
	return b
}

func (l *rowList) done(b []byte) { l.pieces[len(l.pieces)-1] = b }

// tableOut collects one table's answer.
type tableOut struct {
	upserts, deletes rowList
	load             rowList  // the upserts' load text, with "load" (loadtext.go)
	changes          rowList  // log mode (changelog.go)
	lines            *lineLog // log mode, rendered (linelog.go)
}

// render decodes the table's surviving images, a chunk of one table map at a time, into out.
func (r *reduced) render(flavor string, out *tableOut) error {
	if r.log && r.spec.Render != nil {
		out.lines = newLineLog(r.spec.Render)
	}
	if r.log {
		return r.renderLog(flavor, out)
	}
	upserts, deletes, order := r.survivors()
	for _, m := range order {
		if err := r.renderImages(flavor, m, false, upserts[m], &out.upserts, &out.load); err != nil {
			return err
		}
		if err := r.renderImages(flavor, m, true, deletes[m], &out.deletes, nil); err != nil {
			return err
		}
	}
	return nil
}

// survivors groups the last images by table map: the upserts' images, and for the deletes images
// of their key columns alone, made from the keys.
func (r *reduced) survivors() (upserts, deletes map[*tableMap][][]byte, order []*tableMap) {
	upserts, deletes = map[*tableMap][][]byte{}, map[*tableMap][][]byte{}
	var block []byte // key images share blocks: one allocation per many keys
	for _, e := range r.entries {
		if upserts[e.table] == nil && deletes[e.table] == nil {
			order = append(order, e.table)
		}
		if !e.deleted {
			upserts[e.table] = append(upserts[e.table], e.image)
			continue
		}
		size := len(e.image) + (len(e.table.layout.keyColumns)+7)/8 // at least the key image's
		if cap(block)-len(block) < size {
			block = make([]byte, 0, max(size, 1<<16))
		}
		image := e.table.layout.keyImage(block[len(block):len(block)], e.image)
		deletes[e.table] = append(deletes[e.table], image)
		block = block[:len(block)+len(image)]
	}
	return upserts, deletes, order
}

// renderImages decodes images of one table map, of the key columns alone if keyOnly, in chunks,
// and appends their rows (or keys) to out, and with "load" their load text to load.
func (r *reduced) renderImages(
	flavor string, m *tableMap, keyOnly bool, images [][]byte, out *rowList, load *rowList,
) error {
	if len(images) == 0 {
		return nil
	}
	columns, at := r.all, r.all
	var narrow []int
	if keyOnly {
		columns, at, narrow = r.spec.Key, m.layout.keyAt, m.layout.keyColumns
	}
	d, err := newImageDecoder(flavor, m, narrow)
	if err != nil {
		return err
	}
	for start := 0; start < len(images); {
		end, size := start, 0
		for ; end < len(images) && (size < chunkBytes || end == start); end++ {
			size += len(images[end])
		}
		rows, err := d.decode(images[start:end])
		if err != nil {
			return err
		}
		for _, values := range rows {
			if err := r.appendRow(out, values, d.types, columns, at); err != nil {
				return err
			}
			if load != nil && r.spec.Load != nil {
				if err := appendLoadRow(load, r.spec.Load, values); err != nil {
					return err
				}
			}
		}
		start = end
	}
	return nil
}

// appendRow adds a row to out: the values at places at of columns.
func (r *reduced) appendRow(out *rowList, values []interface{}, types []byte, columns, at []int) error {
	b := append(out.next(), '[')
	for j, c := range columns {
		if j > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = r.appendValue(b, c, values[at[j]], types[at[j]]); err != nil {
			return err
		}
	}
	out.done(append(b, ']'))
	return nil
}

func isText(columnType byte) bool {
	switch columnType {
	case mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING, mysql.MYSQL_TYPE_STRING:
		return true
	}
	return false
}

// appendValue renders one decoded value: integers as numbers (BIT unsigned), strings of UTF-8 columns
// as text, other strings and bytes base64-encoded, except the decoder's own renderings (DECIMAL,
// temporal values), which are ASCII text.
func (r *reduced) appendValue(b []byte, i int, v interface{}, columnType byte) ([]byte, error) {
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
			return appendString(b, str)
		}
	}
	switch x := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case []byte:
		return appendBase64(b, x), nil
	case string:
		if isText(columnType) {
			return appendBase64(b, []byte(x)), nil
		}
		return appendString(b, x)
	case int8:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int16:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int32:
		return strconv.AppendInt(b, int64(x), 10), nil
	case int64:
		return strconv.AppendInt(b, x, 10), nil
	case int:
		return strconv.AppendInt(b, int64(x), 10), nil
	case uint8:
		return strconv.AppendUint(b, uint64(x), 10), nil
	case uint16:
		return strconv.AppendUint(b, uint64(x), 10), nil
	case uint32:
		return strconv.AppendUint(b, uint64(x), 10), nil
	case uint64:
		return strconv.AppendUint(b, x, 10), nil
	case float32:
		return appendJSON(b, float64(x))
	case float64:
		return appendJSON(b, x)
	}
	return nil, unsupported{fmt.Sprintf("value of Go type %T", v)}
}

func appendBase64(b []byte, raw []byte) []byte {
	b = append(b, '"')
	b = base64.StdEncoding.AppendEncode(b, raw)
	return append(b, '"')
}

// appendString quotes s as encoding/json does; the common plain ASCII takes a shortcut.
func appendString(b []byte, s string) ([]byte, error) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7F || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return appendJSON(b, s)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"'), nil
}

func appendJSON(b []byte, v interface{}) ([]byte, error) {
	enc, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, enc...), nil
}
