package main

import (
	"encoding/binary"
	"math"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// Changelog lines straight from the row images. go-mysql decodes every value into an interface
// (strings, boxed numbers, temporal values formatted as text that linelog.go then reads back), and
// that decoding was most of the decoder's work for a changelog. A table whose every column has a
// binlog type and a render kind below is rendered here instead, value by value from the image's
// bytes, spelled exactly as go-mysql's value would have been: the same reads (signed integers,
// MySQL's binary decimals, the packed temporal types) into the same spellings (pyjson.go,
// pytime.go). A value outside what those reads give for a valid column (an impossible date, a
// fraction past six digits) makes its record fall back to go-mysql's decoding, so the answer is
// always the one go-mysql's values give (direct_test.go holds the two equal).

// directColumn is how one column's bytes are read and spelled.
type directColumn struct {
	tp     byte   // the binlog type (a CHAR's real one)
	meta   uint16 // its metadata
	length int    // a string's declared length, which sizes its length prefix
	spell  renderColumn
	name   []byte // `"name":`, spelled once
}

// directPlan renders one table map's images, or is nil where a column is not of the kinds here.
type directPlan struct {
	columns   []directColumn
	nullBytes int
}

func newDirectPlan(table *replication.TableMapEvent, spec *renderSpec) *directPlan {
	if len(table.ColumnType) != len(spec.Columns) {
		return nil
	}
	p := &directPlan{nullBytes: (len(spec.Columns) + 7) / 8}
	for i, column := range spec.Columns {
		c := directColumn{tp: table.ColumnType[i], meta: table.ColumnMeta[i], spell: column}
		c.length = int(c.meta)
		if c.tp == mysql.MYSQL_TYPE_STRING && c.meta >= 256 {
			b0, b1 := uint8(c.meta>>8), uint8(c.meta&0xFF)
			if b0&0x30 != 0x30 {
				c.length, c.tp = int(uint16(b1)|uint16((b0&0x30)^0x30)<<4), b0|0x30
			} else {
				c.length, c.tp = int(c.meta&0xFF), b0
			}
		}
		if !directKinds[c.tp][column.Kind] || c.tp == mysql.MYSQL_TYPE_BLOB && (c.meta < 1 || c.meta > 4) {
			return nil
		}
		c.name = append(appendPyString(nil, column.Name), ':')
		p.columns = append(p.columns, c)
	}
	return p
}

// directKinds are the binlog types read here, each with the render kinds it is spelled as.
var directKinds = map[byte]map[string]bool{
	mysql.MYSQL_TYPE_TINY:       integerKinds,
	mysql.MYSQL_TYPE_SHORT:      integerKinds,
	mysql.MYSQL_TYPE_INT24:      integerKinds,
	mysql.MYSQL_TYPE_LONG:       integerKinds,
	mysql.MYSQL_TYPE_LONGLONG:   integerKinds,
	mysql.MYSQL_TYPE_FLOAT:      {"float": true},
	mysql.MYSQL_TYPE_DOUBLE:     {"float": true},
	mysql.MYSQL_TYPE_NEWDECIMAL: {"decimal": true},
	mysql.MYSQL_TYPE_VARCHAR:    textKinds,
	mysql.MYSQL_TYPE_VAR_STRING: textKinds,
	mysql.MYSQL_TYPE_STRING:     textKinds,
	mysql.MYSQL_TYPE_BLOB:       textKinds,
	mysql.MYSQL_TYPE_DATE:       {"date": true},
	mysql.MYSQL_TYPE_DATETIME2:  {"datetime": true},
	mysql.MYSQL_TYPE_TIMESTAMP2: {"timestamp": true},
}

var (
	integerKinds = map[string]bool{"int": true, "uint": true, "uint64": true}
	textKinds    = map[string]bool{"text": true, "latin1": true}
)

// appendData appends the image's `column:value` pairs, or reports false (b then holds a part).
func (p *directPlan) appendData(b []byte, image []byte) ([]byte, bool) {
	if len(image) < p.nullBytes {
		return b, false
	}
	nulls, data := image[:p.nullBytes], image[p.nullBytes:]
	for i := range p.columns {
		c := &p.columns[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, c.name...)
		if nulls[i>>3]&(1<<(i&7)) != 0 {
			b = append(b, "null"...)
			continue
		}
		var n int
		var ok bool
		if b, n, ok = c.appendValue(b, data); !ok {
			return b, false
		}
		data = data[n:]
	}
	return b, len(data) == 0
}

// appendValue spells the value at the start of data and says how many bytes it took.
func (c *directColumn) appendValue(b []byte, data []byte) ([]byte, int, bool) {
	switch c.tp {
	case mysql.MYSQL_TYPE_TINY, mysql.MYSQL_TYPE_SHORT, mysql.MYSQL_TYPE_INT24, mysql.MYSQL_TYPE_LONG,
		mysql.MYSQL_TYPE_LONGLONG:
		v, n, ok := readInteger(c.tp, data)
		if !ok {
			return b, 0, false
		}
		return appendPyInteger(b, c.spell, uint64(v), false), n, true
	case mysql.MYSQL_TYPE_FLOAT:
		if len(data) < 4 {
			return b, 0, false
		}
		return appendPyFloat(b, float64(math.Float32frombits(binary.LittleEndian.Uint32(data)))), 4, true
	case mysql.MYSQL_TYPE_DOUBLE:
		if len(data) < 8 {
			return b, 0, false
		}
		return appendPyFloat(b, math.Float64frombits(binary.LittleEndian.Uint64(data))), 8, true
	case mysql.MYSQL_TYPE_NEWDECIMAL:
		return c.appendDecimal(b, data)
	case mysql.MYSQL_TYPE_DATE:
		return appendDirectDate(b, data)
	case mysql.MYSQL_TYPE_DATETIME2:
		return appendDirectDatetime(b, data, int(c.meta))
	case mysql.MYSQL_TYPE_TIMESTAMP2:
		return appendDirectTimestamp(b, data, int(c.meta))
	}
	return c.appendText(b, data)
}

// readInteger reads an integer as go-mysql does: signed, whatever the column.
func readInteger(tp byte, data []byte) (int64, int, bool) {
	switch {
	case tp == mysql.MYSQL_TYPE_TINY && len(data) >= 1:
		return int64(int8(data[0])), 1, true
	case tp == mysql.MYSQL_TYPE_SHORT && len(data) >= 2:
		return int64(int16(binary.LittleEndian.Uint16(data))), 2, true
	case tp == mysql.MYSQL_TYPE_INT24 && len(data) >= 3:
		return int64(int32(uint32(data[0])|uint32(data[1])<<8|uint32(data[2])<<16) << 8 >> 8), 3, true
	case tp == mysql.MYSQL_TYPE_LONG && len(data) >= 4:
		return int64(int32(binary.LittleEndian.Uint32(data))), 4, true
	case tp == mysql.MYSQL_TYPE_LONGLONG && len(data) >= 8:
		return int64(binary.LittleEndian.Uint64(data)), 8, true
	}
	return 0, 0, false
}

// appendText spells a string column's bytes (after their length) as linelog.go's appendPyText.
func (c *directColumn) appendText(b []byte, data []byte) ([]byte, int, bool) {
	prefix := int(c.meta) // a BLOB's length bytes
	if c.tp != mysql.MYSQL_TYPE_BLOB {
		prefix = 1
		if c.length >= 256 {
			prefix = 2
		}
	}
	if len(data) < prefix {
		return b, 0, false
	}
	length := 0
	for i := prefix - 1; i >= 0; i-- {
		length = length<<8 | int(data[i])
	}
	n := prefix + length
	if length < 0 || n > len(data) {
		return b, 0, false
	}
	text := data[prefix:n]
	if c.spell.Kind == "latin1" {
		return appendPyString(b, decodeLatin1(bytesText(text))), n, true
	}
	if !utf8.Valid(text) {
		return b, 0, false
	}
	return appendPyString(b, bytesText(text)), n, true
}

// bytesText views bytes as a string for the spelling functions, which keep no reference to it.
func bytesText(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(&b[0], len(b))
}

// appendDecimal reads MySQL's binary decimal into go-mysql's text for it, spelled by appendPyDecimal.
func (c *directColumn) appendDecimal(b []byte, data []byte) ([]byte, int, bool) {
	precision, scale := int(c.meta>>8), int(c.meta&0xFF)
	size := decimalSize(precision, scale)
	if precision > 65 || scale > 38 || precision < scale || len(data) < size || size == 0 {
		return b, 0, false
	}
	var scratch [96]byte
	text, ok := decimalText(scratch[:0], data[:size], precision-scale, scale)
	if !ok {
		return b, 0, false
	}
	if scale == c.spell.Scale && !tinyFraction(text) {
		// appendPyDecimal would give the text itself: Python writes a quantized Decimal as it
		// stands unless its leading digit is more than 6 places right of the point.
		return append(append(append(b, '"'), text...), '"'), size, true
	}
	b, err := appendPyDecimal(b, string(text), c.spell.Scale) // a copy: scratch stays on the stack
	return b, size, err == nil
}

// tinyFraction is whether a decimal's text has no integral digit and six or more leading zeros
// after its point (zero included), where Python's spelling may turn to an exponent.
func tinyFraction(text []byte) bool {
	if len(text) > 0 && text[0] == '-' {
		text = text[1:]
	}
	if len(text) < 2 || text[0] != '0' || text[1] != '.' {
		return false
	}
	zeros := 0
	for _, c := range text[2:] {
		if c != '0' {
			break
		}
		zeros++
	}
	return zeros >= 6
}

// decimalText is go-mysql's decodeDecimal text (v1.12.0): a sign, the integral digits without
// leading zeros ("0" for none), then a point and exactly scale fractional digits when scale > 0;
// false for a group holding more digits than it may (no valid DECIMAL has one).
func decimalText(text []byte, data []byte, integral, scale int) ([]byte, bool) {
	var mask byte
	if data[0]&0x80 == 0 {
		mask = 0xFF
		text = append(text, '-')
	}
	compressed := [...]int{0, 1, 1, 2, 2, 3, 3, 4, 4, 4}
	// The groups of digits, integral then fractional: (bytes, digits) each.
	var groups [16][2]int
	count := 0
	if first := compressed[integral%9]; first > 0 {
		groups[count], count = [2]int{first, integral % 9}, count+1
	}
	for range integral / 9 {
		groups[count], count = [2]int{4, 9}, count+1
	}
	fractionAt := count
	for range scale / 9 {
		groups[count], count = [2]int{4, 9}, count+1
	}
	if last := compressed[scale%9]; last > 0 {
		groups[count], count = [2]int{last, scale % 9}, count+1
	}
	pos, leading := 0, true
	for g := range count {
		if g == fractionAt {
			if leading {
				text = append(text, '0')
			}
			text, leading = append(text, '.'), false
		}
		var v uint32
		for i := range groups[g][0] {
			octet := data[pos+i] ^ mask
			if pos+i == 0 {
				octet ^= 0x80 // the sign bit
			}
			v = v<<8 | uint32(octet)
		}
		pos += groups[g][0]
		if v >= powersOfTen[groups[g][1]] {
			return text, false
		}
		if leading && v == 0 {
			continue
		}
		start := len(text)
		text = appendUint32(text, v)
		if !leading {
			text = padLeft(text, start, groups[g][1])
		}
		leading = false
	}
	if leading { // no fractional digits, and every integral group zero
		text = append(text, '0')
	}
	return text, true
}

var powersOfTen = [...]uint32{1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000}

func appendUint32(b []byte, v uint32) []byte {
	var digits [10]byte
	i := len(digits)
	for {
		i--
		digits[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	return append(b, digits[i:]...)
}

// padLeft pads the digits from start with zeros on the left to width (never cuts them).
func padLeft(b []byte, start, width int) []byte {
	missing := width - (len(b) - start)
	if missing <= 0 {
		return b
	}
	for range missing {
		b = append(b, 0)
	}
	copy(b[start+missing:], b[start:len(b)-missing])
	for i := start; i < start+missing; i++ {
		b[i] = '0'
	}
	return b
}

// appendDirectDate: go-mysql's DATE text is its three fields as stored; zero fields are NULL.
func appendDirectDate(b []byte, data []byte) ([]byte, int, bool) {
	if len(data) < 3 {
		return b, 0, false
	}
	v := int(data[0]) | int(data[1])<<8 | int(data[2])<<16
	w := wallClock{year: v / (16 * 32), month: v / 32 % 16, day: v % 32}
	if w.year > 9999 { // five digits, which readWallClock refuses before it sees a zero
		return b, 0, false
	}
	if w.year == 0 || w.month == 0 || w.day == 0 {
		return append(b, "null"...), 3, true
	}
	if !w.valid() {
		return b, 0, false
	}
	return append(appendDate(append(b, '"'), w), '"'), 3, true
}

// fraction reads a temporal value's fractional part (microseconds) of dec digits, cut to dec
// digits as go-mysql's text of it is.
func fraction(data []byte, dec int) (int, bool) {
	var micro int
	switch dec {
	case 0:
		return 0, true
	case 1, 2:
		micro = int(data[0]) * 10000
	case 3, 4:
		micro = int(binary.BigEndian.Uint16(data)) * 100
	case 5, 6:
		micro = int(data[0])<<16 | int(data[1])<<8 | int(data[2])
	default:
		return 0, false
	}
	if micro > 999999 {
		return 0, false
	}
	unit := [...]int{1000000, 100000, 10000, 1000, 100, 10, 1}[dec]
	return micro - micro%unit, true
}

// appendDirectDatetime reads a DATETIME2: a zero date is NULL, a valid one its fields.
func appendDirectDatetime(b []byte, data []byte, dec int) ([]byte, int, bool) {
	n := 5 + (dec+1)/2
	if dec > 6 || len(data) < n {
		return b, 0, false
	}
	packed := int64(data[0])<<32 | int64(binary.BigEndian.Uint32(data[1:5])) - 0x8000000000
	micro, ok := fraction(data[5:n], dec)
	if !ok || packed < 0 {
		return b, 0, false
	}
	ymd, hms := packed>>17, packed%(1<<17)
	w := wallClock{
		year: int(ymd >> 5 / 13), month: int(ymd >> 5 % 13), day: int(ymd % (1 << 5)),
		hour: int(hms >> 12), minute: int(hms >> 6 % (1 << 6)), second: int(hms % (1 << 6)), micro: micro,
	}
	if w.year > 9999 {
		return b, 0, false
	}
	if w.year == 0 || w.month == 0 || w.day == 0 {
		return append(b, "null"...), n, true
	}
	if !w.valid() {
		return b, 0, false
	}
	return appendPyWallClock(b, w, false), n, true
}

// appendDirectTimestamp reads a TIMESTAMP2 (seconds since the epoch, as UTC): 0 is NULL.
func appendDirectTimestamp(b []byte, data []byte, dec int) ([]byte, int, bool) {
	n := 4 + (dec+1)/2
	if dec > 6 || len(data) < n {
		return b, 0, false
	}
	seconds := int64(binary.BigEndian.Uint32(data))
	micro, ok := fraction(data[4:n], dec)
	if !ok {
		return b, 0, false
	}
	if seconds == 0 {
		return append(b, "null"...), n, true
	}
	t := time.Unix(seconds, 0).UTC()
	year, month, day := t.Date()
	hour, minute, second := t.Clock()
	w := wallClock{year: year, month: int(month), day: day, hour: hour, minute: minute, second: second, micro: micro}
	if w.year > 9999 {
		return b, 0, false
	}
	return appendPyWallClock(b, w, true), n, true
}

// valid is whether readWallClock would read the fields back from their text.
func (w wallClock) valid() bool {
	return w.year <= 9999 && w.month <= 12 && w.day <= daysIn(w.year, w.month) &&
		w.hour <= 23 && w.minute <= 59 && w.second <= 59
}
