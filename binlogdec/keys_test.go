package main

import (
	"bytes"
	"testing"

	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// table: a SMALLINT, a VARCHAR(10) and an INT, keyed by (INT, SMALLINT) -- 6 bytes: numbers.
func testLayout(t *testing.T, key []int) *layout {
	table := &replication.TableMapEvent{
		ColumnCount: 3,
		ColumnType:  []byte{mysql.MYSQL_TYPE_SHORT, mysql.MYSQL_TYPE_VARCHAR, mysql.MYSQL_TYPE_LONG},
		ColumnMeta:  []uint16{0, 10, 0},
	}
	l, err := newLayout(table, tableSpec{Columns: 3, Key: key}, []bool{false, true, false})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// image: null bitmap, then the values of the columns not NULL.
func image(nulls byte, values ...[]byte) []byte {
	return append([]byte{nulls}, bytes.Join(values, nil)...)
}

func TestKeysOfFixedColumnsAreNumbersUnlessNull(t *testing.T) {
	l := testLayout(t, []int{2, 0})
	row := image(0, []byte{7, 0}, []byte{2, 'h', 'i'}, []byte{1, 2, 3, 4})
	n, key, err := l.cut(append(row, 0xEE), nil)
	if err != nil || n != len(row) {
		t.Fatalf("cut: %d, %v", n, err)
	}
	number, ok := l.number(key)
	if !ok || number != 0x0403020100_07 {
		t.Fatalf("number %x, %v", number, ok)
	}
	if got := l.keyImage(nil, key); !bytes.Equal(got, image(0, []byte{7, 0}, []byte{1, 2, 3, 4})) {
		t.Fatalf("key image %v", got)
	}
	_, withNull, err := l.cut(image(1, []byte{2, 'h', 'i'}, []byte{1, 2, 3, 4}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := l.number(withNull); ok {
		t.Fatal("a key with a NULL became a number")
	}
	if got := l.keyImage(nil, withNull); !bytes.Equal(got, image(1, []byte{1, 2, 3, 4})) {
		t.Fatalf("key image with a NULL %v", got)
	}
}

func TestStringKeysAreCheckedForUTF8(t *testing.T) {
	l := testLayout(t, []int{1})
	if l.numberKeys {
		t.Fatal("a VARCHAR key as a number")
	}
	_, key, err := l.cut(image(0, []byte{7, 0}, []byte{2, 'h', 'i'}, []byte{1, 2, 3, 4}), nil)
	if err != nil || string(key) != "\x01\x02hi" {
		t.Fatalf("key %q, %v", key, err)
	}
	if _, _, err := l.cut(image(0, []byte{7, 0}, []byte{1, 0xFF}, []byte{1, 2, 3, 4}), nil); err == nil {
		t.Fatal("a key that is not UTF-8 in a UTF-8 column")
	}
	if _, _, err := l.cut(image(0, []byte{7, 0}, []byte{9, 'h'}), nil); err != errTruncated {
		t.Fatalf("truncated image: %v", err)
	}
}

func TestDecimalSize(t *testing.T) {
	for _, c := range []struct{ precision, scale, size int }{{12, 2, 6}, {10, 0, 5}, {65, 30, 30}, {1, 1, 1}} {
		if got := decimalSize(c.precision, c.scale); got != c.size {
			t.Errorf("DECIMAL(%d,%d): %d bytes, want %d", c.precision, c.scale, got, c.size)
		}
	}
}
