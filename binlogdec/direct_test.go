package main

import (
	"encoding/binary"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// A column of the differential test: its binlog type, metadata and render kind, and a maker of
// its bytes in a row image (valid: a value MySQL could have written; else any bytes).
type directCase struct {
	tp    byte
	meta  uint16
	spell renderColumn
	value func(r *rand.Rand, valid bool) []byte
}

func fixedBytes(n int) func(*rand.Rand, bool) []byte {
	return func(r *rand.Rand, _ bool) []byte {
		b := make([]byte, n)
		r.Read(b)
		return b
	}
}

func textBytes(prefix int) func(*rand.Rand, bool) []byte {
	return func(r *rand.Rand, valid bool) []byte {
		text := []byte(strings.Repeat("é\"\\\n\x01ab😀", r.Intn(4)))
		if !valid {
			text = make([]byte, r.Intn(12))
			r.Read(text)
		}
		length := make([]byte, 4)
		binary.LittleEndian.PutUint32(length, uint32(len(text)))
		return append(length[:prefix], text...)
	}
}

// decimalBytes encodes a random DECIMAL(precision, scale) as MySQL's decimal2bin does (any
// bytes of its size when not valid).
func decimalBytes(precision, scale int) func(*rand.Rand, bool) []byte {
	return func(r *rand.Rand, valid bool) []byte {
		if !valid {
			return fixedBytes(decimalSize(precision, scale))(r, valid)
		}
		digits := func(n int) string {
			var b strings.Builder
			for range n {
				b.WriteByte(byte('0' + r.Intn(10)*r.Intn(2))) // zeros often
			}
			return b.String()
		}
		out := decimalFromDigits(digits(precision-scale), digits(scale))
		if r.Intn(2) == 0 {
			for i := range out {
				out[i] ^= 0xFF
			}
		}
		return out
	}
}

func temporalBytes(size int, valid func(r *rand.Rand) []byte) func(*rand.Rand, bool) []byte {
	return func(r *rand.Rand, ok bool) []byte {
		if ok {
			return valid(r)
		}
		return fixedBytes(size)(r, false)
	}
}

func datetime2Bytes(dec int) func(*rand.Rand, bool) []byte {
	return temporalBytes(5+(dec+1)/2, func(r *rand.Rand) []byte {
		year, month, day := 1000+r.Intn(9000), 1+r.Intn(12), 1+r.Intn(28)
		switch r.Intn(8) { // zero dates too
		case 0:
			year = 0
		case 1:
			month = 0
		case 2:
			day = 0
		}
		ymd := int64((year*13+month)<<5 | day)
		packed := ymd<<17 | int64(r.Intn(24)<<12|r.Intn(60)<<6|r.Intn(60)) + 0x8000000000
		b := []byte{byte(packed >> 32), 0, 0, 0, 0}
		binary.BigEndian.PutUint32(b[1:], uint32(packed))
		return append(b, fractionBytes(r, dec)...)
	})
}

func timestamp2Bytes(dec int) func(*rand.Rand, bool) []byte {
	return temporalBytes(4+(dec+1)/2, func(r *rand.Rand) []byte {
		b := binary.BigEndian.AppendUint32(nil, uint32(r.Int63n(1<<31)*int64(r.Intn(8))/7))
		return append(b, fractionBytes(r, dec)...)
	})
}

func fractionBytes(r *rand.Rand, dec int) []byte {
	unit := [...]int{1000000, 100000, 10000, 1000, 100, 10, 1}[dec]
	micro := r.Intn(1000000) / unit * unit
	switch dec {
	case 1, 2:
		return []byte{byte(micro / 10000)}
	case 3, 4:
		return binary.BigEndian.AppendUint16(nil, uint16(micro/100))
	case 5, 6:
		return []byte{byte(micro >> 16), byte(micro >> 8), byte(micro)}
	}
	return nil
}

func dateBytes(r *rand.Rand, valid bool) []byte {
	v := r.Intn(1 << 24)
	if valid {
		v = r.Intn(10000)*16*32 + r.Intn(13)*32 + r.Intn(32)
	}
	return []byte{byte(v), byte(v >> 8), byte(v >> 16)}
}

var directCases = []directCase{
	{mysql.MYSQL_TYPE_TINY, 0, renderColumn{Name: "ti", Kind: "int"}, fixedBytes(1)},
	{mysql.MYSQL_TYPE_TINY, 0, renderColumn{Name: "tiu", Kind: "uint", Bits: 8}, fixedBytes(1)},
	{mysql.MYSQL_TYPE_SHORT, 0, renderColumn{Name: "siu", Kind: "uint", Bits: 16}, fixedBytes(2)},
	{mysql.MYSQL_TYPE_INT24, 0, renderColumn{Name: "mi", Kind: "int"}, fixedBytes(3)},
	{mysql.MYSQL_TYPE_INT24, 0, renderColumn{Name: "miu", Kind: "uint", Bits: 24}, fixedBytes(3)},
	{mysql.MYSQL_TYPE_LONG, 0, renderColumn{Name: "i", Kind: "int"}, fixedBytes(4)},
	{mysql.MYSQL_TYPE_LONGLONG, 0, renderColumn{Name: "bi", Kind: "int"}, fixedBytes(8)},
	{mysql.MYSQL_TYPE_LONGLONG, 0, renderColumn{Name: "biu", Kind: "uint64"}, fixedBytes(8)},
	{mysql.MYSQL_TYPE_FLOAT, 4, renderColumn{Name: "f", Kind: "float"}, fixedBytes(4)},
	{mysql.MYSQL_TYPE_DOUBLE, 8, renderColumn{Name: "db", Kind: "float"}, fixedBytes(8)},
	{mysql.MYSQL_TYPE_NEWDECIMAL, 65<<8 | 30, renderColumn{Name: "d65", Kind: "decimal", Scale: 30}, decimalBytes(65, 30)},
	{mysql.MYSQL_TYPE_NEWDECIMAL, 10<<8 | 2, renderColumn{Name: "d10", Kind: "decimal", Scale: 2}, decimalBytes(10, 2)},
	{mysql.MYSQL_TYPE_NEWDECIMAL, 12<<8 | 0, renderColumn{Name: "d12", Kind: "decimal"}, decimalBytes(12, 0)},
	{mysql.MYSQL_TYPE_NEWDECIMAL, 20<<8 | 20, renderColumn{Name: "d20", Kind: "decimal", Scale: 20}, decimalBytes(20, 20)},
	{mysql.MYSQL_TYPE_DATE, 0, renderColumn{Name: "dte", Kind: "date"}, dateBytes},
	{mysql.MYSQL_TYPE_DATETIME2, 0, renderColumn{Name: "dtm", Kind: "datetime"}, datetime2Bytes(0)},
	{mysql.MYSQL_TYPE_DATETIME2, 3, renderColumn{Name: "dtm3", Kind: "datetime"}, datetime2Bytes(3)},
	{mysql.MYSQL_TYPE_DATETIME2, 6, renderColumn{Name: "dtm6", Kind: "datetime"}, datetime2Bytes(6)},
	{mysql.MYSQL_TYPE_TIMESTAMP2, 0, renderColumn{Name: "ts0", Kind: "timestamp"}, timestamp2Bytes(0)},
	{mysql.MYSQL_TYPE_TIMESTAMP2, 1, renderColumn{Name: "ts1", Kind: "timestamp"}, timestamp2Bytes(1)},
	{mysql.MYSQL_TYPE_TIMESTAMP2, 6, renderColumn{Name: "ts", Kind: "timestamp"}, timestamp2Bytes(6)},
	{mysql.MYSQL_TYPE_VARCHAR, 200, renderColumn{Name: "vc", Kind: "text"}, textBytes(1)},
	{mysql.MYSQL_TYPE_VARCHAR, 1000, renderColumn{Name: "vcl", Kind: "text"}, textBytes(2)},
	{mysql.MYSQL_TYPE_STRING, uint16(mysql.MYSQL_TYPE_STRING)<<8 | 40, renderColumn{Name: "ch", Kind: "text"}, textBytes(1)},
	// CHAR(255) in utf8mb4: 1,020 bytes at most, whose length's high bits sit in the type byte.
	{mysql.MYSQL_TYPE_STRING, 0xCE<<8 | 0xFC, renderColumn{Name: "ch255", Kind: "text"}, textBytes(2)},
	{mysql.MYSQL_TYPE_BLOB, 2, renderColumn{Name: "tx", Kind: "text"}, textBytes(2)},
	{mysql.MYSQL_TYPE_VARCHAR, 20, renderColumn{Name: "lat", Kind: "latin1"}, textBytes(1)},
}

// viaGoMySQL is the data of a record as linelog.go renders go-mysql's values of the image.
func viaGoMySQL(table *replication.TableMapEvent, spec *renderSpec, image []byte) (string, error) {
	e := &replication.RowsEvent{Table: table, ColumnCount: table.ColumnCount, ColumnBitmap1: []byte{0xFF, 0xFF, 0xFF, 0xFF}}
	if err := e.DecodeData(0, image); err != nil {
		return "", err
	}
	var b []byte
	for i, column := range spec.Columns {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendPyValue(append(appendPyString(b, column.Name), ':'), column, e.Rows[0][i]); err != nil {
			return "", err
		}
	}
	return string(b), nil
}

// The direct rendering is go-mysql's values' rendering wherever it renders: random images of every
// kind it reads (valid values, and any bytes), compared value by value.
func TestDirectRenderingIsGoMySQLsValuesRendering(t *testing.T) {
	// go-mysql renders a TIMESTAMP in the parser's location: the decoder's parser is set to UTC
	// (stream.go newParser); a bare RowsEvent has none and uses time.Local.
	time.Local = time.UTC
	r := rand.New(rand.NewSource(7))
	direct, total := 0, 0
	for _, dc := range directCases {
		table := &replication.TableMapEvent{ColumnCount: 1, ColumnType: []byte{dc.tp}, ColumnMeta: []uint16{dc.meta}}
		spec := &renderSpec{Table: "t", Columns: []renderColumn{dc.spell}}
		plan := newDirectPlan(table, spec)
		if plan == nil {
			t.Fatalf("%s: no direct plan", dc.spell.Name)
		}
		for n := range 3000 {
			valid := n%2 == 0
			image := append([]byte{0}, dc.value(r, valid)...)
			if n%50 == 0 {
				image = []byte{1} // NULL
			}
			want, err := viaGoMySQL(table, spec, image)
			got, ok := plan.appendData(nil, image)
			total++
			if !ok {
				// (dateBytes' "valid" dates may be impossible days, which are declined.)
				if valid && n%50 != 0 && dc.spell.Kind != "date" {
					t.Errorf("%s: a valid value % x was not rendered directly", dc.spell.Name, image)
				}
				continue
			}
			direct++
			if err != nil || string(got) != want {
				t.Fatalf("%s of % x: direct %s, go-mysql %s (%v)", dc.spell.Name, image, got, want, err)
			}
		}
	}
	if direct < total/2 {
		t.Fatalf("only %d of %d images rendered directly", direct, total)
	}
}

func TestDirectPlanOnlyForTheKindsItReads(t *testing.T) {
	plan := func(tp byte, meta uint16, kind string) *directPlan {
		table := &replication.TableMapEvent{ColumnCount: 1, ColumnType: []byte{tp}, ColumnMeta: []uint16{meta}}
		return newDirectPlan(table, &renderSpec{Table: "t", Columns: []renderColumn{{Name: "c", Kind: kind}}})
	}
	enum := uint16(mysql.MYSQL_TYPE_ENUM)<<8 | 1
	for _, refused := range []*directPlan{
		plan(mysql.MYSQL_TYPE_STRING, enum, "text"),      // an ENUM
		plan(mysql.MYSQL_TYPE_LONG, 0, "decimal"),        // a kind the type is not
		plan(mysql.MYSQL_TYPE_DATETIME, 0, "datetime"),   // the old DATETIME
		plan(mysql.MYSQL_TYPE_GEOMETRY, 4, "text"),       // not a kind's type
		plan(mysql.MYSQL_TYPE_BLOB, 5, "text"),           // a length of 5 bytes
		plan(mysql.MYSQL_TYPE_TIMESTAMP2, 0, "datetime"), // TIMESTAMP spelled without UTC
	} {
		if refused != nil {
			t.Fatalf("a direct plan for %+v", refused.columns[0])
		}
	}
	if plan(mysql.MYSQL_TYPE_BLOB, 2, "latin1") == nil {
		t.Fatal("no direct plan for a latin1 TEXT")
	}
}

func TestDecimalTextMatchesItsDigits(t *testing.T) {
	d := directColumn{tp: mysql.MYSQL_TYPE_NEWDECIMAL, meta: 10<<8 | 2, spell: renderColumn{Kind: "decimal", Scale: 2}}
	for _, c := range []struct{ text, want string }{
		{"-99999999.99", `"-99999999.99"`}, {"0.01", `"0.01"`}, {"0.00", `"0.00"`}, {"12.50", `"12.50"`},
	} {
		image := encodeDecimalText(c.text, 10, 2)
		got, n, ok := d.appendValue(nil, image)
		if !ok || n != len(image) || string(got) != c.want {
			t.Fatalf("%s: %s (%d, %v)", c.text, got, n, ok)
		}
	}
	tiny := directColumn{tp: mysql.MYSQL_TYPE_NEWDECIMAL, meta: 30<<8 | 10, spell: renderColumn{Kind: "decimal", Scale: 10}}
	for text, want := range map[string]string{"0.0000001000": `"1.000E-7"`, "0.0000000000": `"0E-10"`} {
		got, _, ok := tiny.appendValue(nil, encodeDecimalText(text, 30, 10))
		if !ok || string(got) != want {
			t.Fatalf("%s: %s, %v", text, got, ok)
		}
	}
}

// encodeDecimalText is decimalBytes for a given value's text.
func encodeDecimalText(text string, precision, scale int) []byte {
	negative := strings.HasPrefix(text, "-")
	whole, fraction, _ := strings.Cut(strings.TrimPrefix(text, "-"), ".")
	whole = strings.Repeat("0", precision-scale-len(whole)) + whole
	out := decimalFromDigits(whole, fraction)
	if negative {
		for i := range out {
			out[i] ^= 0xFF
		}
	}
	return out
}

// decimalFromDigits is MySQL's binary decimal of the digits, positive (the sign bit set).
func decimalFromDigits(whole, fraction string) []byte {
	compressed := [...]int{0, 1, 1, 2, 2, 3, 3, 4, 4, 4}
	var out []byte
	put := func(group string, size int) {
		var v uint64
		for _, c := range group {
			v = 10*v + uint64(c-'0')
		}
		for i := size - 1; i >= 0; i-- {
			out = append(out, byte(v>>(8*i)))
		}
	}
	lead := len(whole) % 9
	if lead > 0 {
		put(whole[:lead], compressed[lead])
	}
	for i := lead; i < len(whole); i += 9 {
		put(whole[i:i+9], 4)
	}
	for i := 0; i+9 <= len(fraction); i += 9 {
		put(fraction[i:i+9], 4)
	}
	if tail := len(fraction) % 9; tail > 0 {
		put(fraction[len(fraction)-tail:], compressed[tail])
	}
	out[0] ^= 0x80
	return out
}
