package main

import (
	"encoding/binary"
	"fmt"
	"unicode/utf8"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// width is how a column's value is laid out in a row image: fixed bytes, or a little-endian length of
// prefix bytes followed by that many bytes.
type width struct {
	fixed  int
	prefix int
}

// columnWidth mirrors the sizes go-mysql's RowsEvent.decodeValue (v1.12.0) reads. Images are only cut
// here; the ones that survive the reduction are decoded by go-mysql itself (render.go), so a width
// that disagreed with it would fail that decoding rather than change a value.
func columnWidth(tp byte, meta uint16) (width, error) {
	length := 0
	if tp == mysql.MYSQL_TYPE_STRING {
		// CHAR, ENUM and SET share this type code; the real one is in the metadata.
		length = int(meta)
		if meta >= 256 {
			b0, b1 := uint8(meta>>8), uint8(meta&0xFF)
			if b0&0x30 != 0x30 {
				length = int(uint16(b1) | uint16((b0&0x30)^0x30)<<4)
				tp = b0 | 0x30
			} else {
				length = int(meta & 0xFF)
				tp = b0
			}
		}
	}
	switch tp {
	case mysql.MYSQL_TYPE_NULL:
		return width{}, nil
	case mysql.MYSQL_TYPE_TINY, mysql.MYSQL_TYPE_YEAR:
		return width{fixed: 1}, nil
	case mysql.MYSQL_TYPE_SHORT:
		return width{fixed: 2}, nil
	case mysql.MYSQL_TYPE_INT24, mysql.MYSQL_TYPE_TIME, mysql.MYSQL_TYPE_DATE:
		return width{fixed: 3}, nil
	case mysql.MYSQL_TYPE_LONG, mysql.MYSQL_TYPE_FLOAT, mysql.MYSQL_TYPE_TIMESTAMP:
		return width{fixed: 4}, nil
	case mysql.MYSQL_TYPE_LONGLONG, mysql.MYSQL_TYPE_DOUBLE, mysql.MYSQL_TYPE_DATETIME:
		return width{fixed: 8}, nil
	case mysql.MYSQL_TYPE_NEWDECIMAL:
		return width{fixed: decimalSize(int(meta>>8), int(meta&0xFF))}, nil
	case mysql.MYSQL_TYPE_BIT:
		return width{fixed: int((meta>>8)*8+(meta&0xFF)+7) / 8}, nil
	case mysql.MYSQL_TYPE_TIMESTAMP2:
		return width{fixed: int(4 + (meta+1)/2)}, nil
	case mysql.MYSQL_TYPE_DATETIME2:
		return width{fixed: int(5 + (meta+1)/2)}, nil
	case mysql.MYSQL_TYPE_TIME2:
		return width{fixed: int(3 + (meta+1)/2)}, nil
	case mysql.MYSQL_TYPE_ENUM:
		if l := meta & 0xFF; l == 1 || l == 2 {
			return width{fixed: int(l)}, nil
		}
		return width{}, fmt.Errorf("unknown ENUM packlen=%d", meta&0xFF)
	case mysql.MYSQL_TYPE_SET:
		return width{fixed: int(meta & 0xFF)}, nil
	case mysql.MYSQL_TYPE_BLOB, mysql.MYSQL_TYPE_GEOMETRY, mysql.MYSQL_TYPE_VECTOR, mysql.MYSQL_TYPE_JSON:
		if meta < 1 || meta > 4 {
			return width{}, fmt.Errorf("invalid blob packlen = %d", meta)
		}
		return width{prefix: int(meta)}, nil
	case mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_VAR_STRING:
		length = int(meta)
		fallthrough
	case mysql.MYSQL_TYPE_STRING:
		if length < 256 {
			return width{prefix: 1}, nil
		}
		return width{prefix: 2}, nil
	}
	return width{}, fmt.Errorf("unsupport type %d in binlog and don't know how to handle", tp)
}

// decimalSize is the bytes of a DECIMAL(precision, scale) in MySQL's binary decimal format.
func decimalSize(precision, scale int) int {
	compressed := [...]int{0, 1, 1, 2, 2, 3, 3, 4, 4, 4}
	integral := precision - scale
	return integral/9*4 + compressed[integral%9] + scale/9*4 + compressed[scale%9]
}

// layout cuts one table's row images and extracts their keys without decoding the values: most
// images of a backlog are superseded by a later one for the same key, and only the survivors are
// worth decoding.
type layout struct {
	widths     []width
	key        []bool // key columns
	utf8Key    []bool // key columns whose strings the answer sends as text, so must be UTF-8
	nullBytes  int
	keyColumns []int // the key columns in table order, as a key holds them
	keyAt      []int // the request's key columns' places in keyColumns
	// Keys as numbers (keys.go): whether they can be, and the length of such a key as cut makes it.
	numberKeys     bool
	numberKeyBytes int
}

func newLayout(table *replication.TableMapEvent, spec tableSpec, text []bool) (*layout, error) {
	l := &layout{
		widths:    make([]width, len(table.ColumnType)),
		key:       make([]bool, len(table.ColumnType)),
		utf8Key:   make([]bool, len(table.ColumnType)),
		nullBytes: (len(table.ColumnType) + 7) / 8,
	}
	for i, tp := range table.ColumnType {
		w, err := columnWidth(tp, table.ColumnMeta[i])
		if err != nil {
			return nil, err
		}
		l.widths[i] = w
	}
	for _, k := range spec.Key {
		l.key[k] = true
		// A string's bytes follow its length; MySQL's binary JSON is no string (and is never a key).
		l.utf8Key[k] = text[k] && l.widths[k].prefix > 0 && table.ColumnType[k] != mysql.MYSQL_TYPE_JSON
	}
	place := map[int]int{}
	for i, isKey := range l.key {
		if isKey {
			place[i] = len(l.keyColumns)
			l.keyColumns = append(l.keyColumns, i)
		}
	}
	for _, k := range spec.Key {
		l.keyAt = append(l.keyAt, place[k])
	}
	l.numberKeys, l.numberKeyBytes = l.numbered()
	return l, nil
}

var errTruncated = fmt.Errorf("a row image runs past the end of its rows event")

// cut returns the length of the full row image at the start of data, and key with the image's key
// appended: per key column a null marker, then its bytes as the binlog has them (with their length
// prefix, so the concatenation is unambiguous). Two keys are equal exactly when the values are, as
// every value has one encoding.
func (l *layout) cut(data []byte, key []byte) (int, []byte, error) {
	if len(data) < l.nullBytes {
		return 0, nil, errTruncated
	}
	nulls, pos := data[:l.nullBytes], l.nullBytes
	for i, w := range l.widths {
		if nulls[i>>3]&(1<<(i&7)) != 0 {
			if l.key[i] {
				key = append(key, 0)
			}
			continue
		}
		n := w.fixed
		if w.prefix > 0 {
			if pos+w.prefix > len(data) {
				return 0, nil, errTruncated
			}
			n = w.prefix + littleEndian(data[pos:pos+w.prefix])
		}
		if n < 0 || pos+n > len(data) {
			return 0, nil, errTruncated
		}
		if l.key[i] {
			key = append(append(key, 1), data[pos:pos+n]...)
			if l.utf8Key[i] && !utf8.Valid(data[pos+w.prefix:pos+n]) {
				return 0, nil, unsupported{"a string that is not UTF-8 in a UTF-8 column"}
			}
		}
		pos += n
	}
	return pos, key, nil
}

// keyImage appends the row image of the key columns alone that key (from cut) was made of.
func (l *layout) keyImage(dst []byte, key []byte) []byte {
	nulls := len(dst)
	for range (len(l.keyColumns) + 7) / 8 {
		dst = append(dst, 0)
	}
	pos := 0
	for j, c := range l.keyColumns {
		if key[pos] == 0 {
			dst[nulls+j>>3] |= 1 << (j & 7)
			pos++
			continue
		}
		w := l.widths[c]
		n := w.fixed
		if w.prefix > 0 {
			n = w.prefix + littleEndian(key[pos+1:pos+1+w.prefix])
		}
		dst = append(dst, key[pos+1:pos+1+n]...)
		pos += 1 + n
	}
	return dst
}

func littleEndian(b []byte) int {
	switch len(b) {
	case 1:
		return int(b[0])
	case 2:
		return int(binary.LittleEndian.Uint16(b))
	case 3:
		return int(b[0]) | int(b[1])<<8 | int(b[2])<<16
	}
	return int(binary.LittleEndian.Uint32(b))
}

// fullImage is whether a rows event's column bitmap names every column (binlog_row_image=FULL).
func fullImage(bitmap []byte, columns int) bool {
	for i := 0; i < columns; i++ {
		if bitmap[i>>3]&(1<<(i&7)) == 0 {
			return false
		}
	}
	return true
}
