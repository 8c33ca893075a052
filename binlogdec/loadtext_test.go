package main

import (
	"math"
	"testing"
)

// The spellings pyarrow 26 gives these doubles cast to text (the integration tests compare whole
// load texts with the Python path's).
func TestArrowFloat(t *testing.T) {
	cases := map[float64]string{
		0: "0", math.Copysign(0, -1): "-0", 1: "1", 100: "100", 123456789: "123456789", 1e9: "1000000000",
		1.5e10: "1.5e+10", 123456789012: "1.23456789012e+11", 1e15: "1e+15", 1e21: "1e+21", 0.1: "0.1",
		0.0001: "0.0001", 1e-5: "0.00001", 1.23e-6: "0.00000123", 1e-7: "1e-7", 1.5e-7: "1.5e-7",
		-2.5e-10: "-2.5e-10", 123.456: "123.456", 1.7976931348623157e308: "1.7976931348623157e+308",
		5e-324: "5e-324", 12345678901234567890.0: "1.2345678901234567e+19", -1234567: "-1234567",
		float64(float32(0.1)): "0.10000000149011612",
	}
	for f, want := range cases {
		if got := string(appendArrowFloat(nil, f)); got != want {
			t.Errorf("%v: %q, want %q", f, got, want)
		}
	}
}

func TestLoadDecimal(t *testing.T) {
	cases := []struct {
		text  string
		scale int
		want  string
	}{
		{"0.50", 2, "0.50"}, {"-0.50", 2, "-0.50"}, {"5", 2, "5.00"}, {"007.1", 2, "7.10"}, {"-12", 0, "-12"},
		{"0.0000001000", 10, "0.0000001000"}, {".5", 1, "0.5"}, {"0", 0, "0"}, {"0.00", 2, "0.00"},
	}
	for _, c := range cases {
		got, err := appendLoadDecimal(nil, c.text, c.scale)
		if err != nil || string(got) != c.want {
			t.Errorf("%q scale %d: %q %v, want %q", c.text, c.scale, got, err, c.want)
		}
	}
	for _, bad := range []string{"-0.00", "1.234", "", "1e5"} {
		if _, err := appendLoadDecimal(nil, bad, 2); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestLoadEscapes(t *testing.T) {
	got := string(appendLoadEscaped(nil, "a\\b\tc\nd\x00e\r\"'"))
	if want := `a\\b\tc\nd\0e` + "\r\"'"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}

func TestLoadRow(t *testing.T) {
	spec := &renderSpec{Table: "db.t", Columns: []renderColumn{
		{Name: "i", Kind: "int"}, {Name: "u", Kind: "uint", Bits: 8}, {Name: "d", Kind: "datetime"},
		{Name: "ts", Kind: "timestamp"}, {Name: "dt", Kind: "date"}, {Name: "s", Kind: "text"}, {Name: "n", Kind: "text"},
	}}
	var l rowList
	values := []interface{}{int32(-3), int8(-1), "2024-01-02 03:04:05.000100", "1970-01-01 00:00:00", "0000-00-00", "x\ty", nil}
	if err := appendLoadRow(&l, spec, values); err != nil {
		t.Fatal(err)
	}
	want := "-3\t255\t2024-01-02 03:04:05.000100\t\\N\t\\N\tx\\ty\t\\N\n"
	if got := string(l.pieces[0]); got != want || l.rows != 1 {
		t.Errorf("%q (%d rows), want %q", got, l.rows, want)
	}
}

func TestMySQLDate(t *testing.T) {
	cases := []struct {
		text     string
		dateOnly bool
		digits   int
		want     string
	}{
		{"0000-00-00", true, 0, "0000-00-00"}, {"2024-00-10", true, 0, "2024-00-10"},
		{"0000-00-00 00:00:00", false, 6, "0000-00-00 00:00:00.000000"},
		{"2024-01-02 03:04:05.5", false, 3, "2024-01-02 03:04:05.500"},
		{"2024-01-02 03:04:05.123456", false, 0, "2024-01-02 03:04:05"},
		{"2024-01-02", false, 2, "2024-01-02 00:00:00.00"},
	}
	for _, c := range cases {
		got, err := appendMySQLDate(nil, c.text, c.dateOnly, c.digits)
		if err != nil || string(got) != c.want {
			t.Errorf("%q: %q %v, want %q", c.text, got, err, c.want)
		}
	}
	if _, err := appendMySQLDate(nil, "2024-1-02", true, 0); err == nil {
		t.Errorf("no error for a malformed date")
	}
}
