package main

import (
	"strconv"
	"testing"
)

type pyCase struct{ in, want string }

type decimalCase struct {
	text  string
	scale int
	want  string
}

// The spellings against Python's own (pyjson_cases_test.go: json.dumps of the canonical values).
func TestPythonSpellings(t *testing.T) {
	for _, c := range pyFloats {
		f, err := strconv.ParseFloat(c.in, 64)
		if err != nil {
			t.Fatal(err)
		}
		if got := string(appendPyFloat(nil, f)); got != c.want {
			t.Errorf("float %s: %s, Python %s", c.in, got, c.want)
		}
	}
	for _, c := range pyDecimals {
		got, err := appendPyDecimal(nil, c.text, c.scale)
		if err != nil || string(got) != c.want {
			t.Errorf("decimal %s (scale %d): %s %v, Python %s", c.text, c.scale, got, err, c.want)
		}
	}
	for _, c := range pyStrings {
		if got := string(appendPyString(nil, c.in)); got != c.want {
			t.Errorf("string %q: %s, Python %s", c.in, got, c.want)
		}
	}
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	if got := decodeLatin1(string(all)); got != pyLatin1 {
		t.Errorf("latin1: %q, Python %q", got, pyLatin1)
	}
	if _, err := appendPyDecimal(nil, "1.234", 2); err == nil {
		t.Error("a DECIMAL text with more digits than its scale was spelled")
	}
}

func TestTemporalSpellings(t *testing.T) {
	cases := []struct {
		text, kind, want string
	}{
		{"2024-02-29", "date", `"2024-02-29"`},
		{"0000-00-00", "date", "null"},
		{"2024-00-10", "date", "null"},
		{"0999-01-01 00:00:00", "datetime", `"0999-01-01T00:00:00"`},
		{"2024-02-29 12:00:00.500000", "datetime", `"2024-02-29T12:00:00.500000"`},
		{"2024-02-29 12:00:00.000000", "datetime", `"2024-02-29T12:00:00"`},
		{"2024-02-29 12:00:00.5", "datetime", `"2024-02-29T12:00:00.500000"`},
		{"0000-00-00 00:00:00", "datetime", "null"},
		{"1970-01-01 00:00:00", "timestamp", "null"},
		{"1970-01-01 00:00:00.000001", "timestamp", `"1970-01-01T00:00:00.000001+00:00"`},
		{"2038-01-19 03:14:07.999999", "timestamp", `"2038-01-19T03:14:07.999999+00:00"`},
	}
	for _, c := range cases {
		got, err := appendPyText(nil, renderColumn{Kind: c.kind}, c.text)
		if err != nil || string(got) != c.want {
			t.Errorf("%s %q: %s %v, want %s", c.kind, c.text, got, err, c.want)
		}
	}
	for _, bad := range []string{"2023-02-29 00:00:00", "2024-01-01 24:00:00", "2024-13-01 00:00:00", "2024-01-01T00:00:00"} {
		if got, err := appendPyText(nil, renderColumn{Kind: "datetime"}, bad); err == nil {
			t.Errorf("%q spelled %s: Python refuses it", bad, got)
		}
	}
}
