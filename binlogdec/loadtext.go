package main

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Load text (follow mode, reduced, with "load" on a table): the surviving images as the text the
// JDBC sink's LOAD DATA LOCAL INFILE reads (operator/sparkcdc/sinks/jdbc/bulk_load.py tsv_chunks:
// fields separated by a tab, a newline after each row, LOAD DATA's backslash escapes, \N for
// NULL), so the caller hands the bytes to the server instead of converting and rendering every
// value in Python. The kinds are the changelog's (linelog.go); each value is spelt as Arrow casts
// its canonical value to text there (the integration tests hold the two to the same bytes); two
// kinds of its own, "mysqldate" and "mysqldatetime" (with its fractional digits as "scale"), are
// the dates a MySQL target keeps as MySQL prints them, zero dates included
// (operator/sparkcdc/mysql/zero_dates.py). A
// table's part of the batch then carries
//
//	"load": BYTES, "rows": N, "json": BYTES
//
// instead of "upserts": the load text, then the same rows as JSON (read only if the caller needs
// the values themselves), follow the batch's line, table after table. A value this cannot spell
// stops the decoder ("unsupported"): the Python reader goes on from the last batch.

// appendLoadRow renders one image's values (in column order) as a line of load text.
func appendLoadRow(l *rowList, spec *renderSpec, values []interface{}) error {
	if len(values) != len(spec.Columns) {
		return fmt.Errorf("decoded %d values of an image of %d columns", len(values), len(spec.Columns))
	}
	b := l.pieceFor()
	for i, column := range spec.Columns {
		if i > 0 {
			b = append(b, '\t')
		}
		var err error
		if b, err = appendLoadValue(b, column, values[i]); err != nil {
			return unsupported{fmt.Sprintf("column %s of %s: %v", column.Name, spec.Table, err)}
		}
	}
	l.done(append(b, '\n'))
	return nil
}

func appendLoadValue(b []byte, column renderColumn, v interface{}) ([]byte, error) {
	if v == nil {
		return append(b, `\N`...), nil
	}
	switch column.Kind {
	case "int", "uint", "uint64":
		if n, unsigned, ok := integer(v); ok {
			return appendInteger(b, column, n, unsigned), nil
		}
	case "float":
		if f, ok := decodedFloat(v); ok {
			return appendArrowFloat(b, f), nil
		}
	case "decimal", "text", "latin1", "date", "datetime", "timestamp", "mysqldate", "mysqldatetime":
		if s, ok := decodedText(v); ok {
			return appendLoadText(b, column, s)
		}
	}
	return nil, fmt.Errorf("value of Go type %T for a %s column", v, column.Kind)
}

func appendLoadText(b []byte, column renderColumn, s string) ([]byte, error) {
	switch column.Kind {
	case "decimal":
		return appendLoadDecimal(b, s, column.Scale)
	case "date", "datetime", "timestamp":
		w, zero, err := parseWallClock(s, column.Kind != "date")
		epoch := w == wallClock{year: 1970, month: 1, day: 1}
		if err != nil || zero || column.Kind == "timestamp" && epoch {
			return append(b, `\N`...), err // NULL, as the canonical value (pytime.go)
		}
		b = appendDate(b, w)
		if column.Kind == "date" {
			return b, nil
		}
		b = append(appendPadded(append(appendPadded(append(b, ' '), w.hour, 2), ':'), w.minute, 2), ':')
		b = appendPadded(b, w.second, 2)
		if w.micro != 0 {
			b = appendPadded(append(b, '.'), w.micro, 6)
		}
		return b, nil
	case "mysqldate", "mysqldatetime":
		return appendMySQLDate(b, s, column.Kind == "mysqldate", column.Scale)
	case "latin1":
		s = decodeLatin1(s)
	default:
		if !utf8.ValidString(s) {
			return nil, fmt.Errorf("a string that is not UTF-8 in a UTF-8 column")
		}
	}
	return appendLoadEscaped(b, s), nil
}

// appendLoadEscaped writes s with LOAD DATA's default escapes: backslash, tab, newline and NUL.
func appendLoadEscaped(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); i++ {
		var escaped string
		switch s[i] {
		case '\\':
			escaped = `\\`
		case '\t':
			escaped = `\t`
		case '\n':
			escaped = `\n`
		case 0:
			escaped = `\0`
		default:
			continue
		}
		b = append(append(b, s[start:i]...), escaped...)
		start = i + 1
	}
	return append(b, s[start:]...)
}

// appendLoadDecimal writes the text go-mysql gives a DECIMAL ([-]digits[.digits]) as Arrow casts
// the decimal to text: plain, exactly scale fractional digits, no leading zeros, no sign on zero
// (the Python path prints the rare text Arrow gives an exponent plainly, bulk_load.py). A negative
// zero, which the two spell differently, is refused, as is more precision than the scale.
func appendLoadDecimal(b []byte, text string, scale int) ([]byte, error) {
	negative := strings.HasPrefix(text, "-")
	whole, fraction, _ := strings.Cut(strings.TrimPrefix(text, "-"), ".")
	if len(fraction) > scale || whole == "" && fraction == "" || !allDigits(whole) || !allDigits(fraction) {
		return nil, fmt.Errorf("DECIMAL text %q of scale %d", text, scale)
	}
	whole = strings.TrimLeft(whole, "0")
	if whole == "" {
		whole = "0"
	}
	fraction += strings.Repeat("0", scale-len(fraction))
	if negative && whole == "0" && strings.Trim(fraction, "0") == "" {
		return nil, fmt.Errorf("DECIMAL text %q: a negative zero", text)
	}
	if negative {
		b = append(b, '-')
	}
	b = append(b, whole...)
	if scale > 0 {
		b = append(append(b, '.'), fraction...)
	}
	return b, nil
}

// appendArrowFloat writes f as Arrow casts a double to text: the shortest digits that read back
// as f, plainly for decimal exponents from -6 to 9, else as d[.ddd]e±X.
func appendArrowFloat(b []byte, f float64) []byte {
	e := strconv.FormatFloat(f, 'e', -1, 64) // [-]d[.ddd]e±XX
	mantissa, exponent, _ := strings.Cut(e, "e")
	x, _ := strconv.Atoi(exponent)
	if x < -6 || x >= 10 {
		b = append(append(b, mantissa...), 'e')
		if x >= 0 {
			b = append(b, '+')
		}
		return strconv.AppendInt(b, int64(x), 10)
	}
	if mantissa[0] == '-' {
		b, mantissa = append(b, '-'), mantissa[1:]
	}
	digits := strings.Replace(mantissa, ".", "", 1)
	point := x + 1
	switch {
	case point <= 0:
		return append(append(append(b, "0."...), strings.Repeat("0", -point)...), digits...)
	case point < len(digits):
		return append(append(append(b, digits[:point]...), '.'), digits[point:]...)
	default:
		return append(append(b, digits...), strings.Repeat("0", point-len(digits))...)
	}
}

// appendMySQLDate writes the text go-mysql gives a date (the fields as stored, zero ones included,
// TIMESTAMP in UTC) as MySQL prints it for the column: YYYY-MM-DD, and for a DATETIME or
// TIMESTAMP " hh:mm:ss" and exactly digits fractional digits (zero_dates.py zero_text).
func appendMySQLDate(b []byte, text string, dateOnly bool, digits int) ([]byte, error) {
	text = strings.TrimSpace(text)
	fields, ok := mysqlDateFields(text)
	if !ok {
		return nil, fmt.Errorf("date text %q", text)
	}
	b = append(appendPadded(append(appendPadded(b, fields[0], 4), '-'), fields[1], 2), '-')
	b = appendPadded(b, fields[2], 2)
	if dateOnly {
		return b, nil
	}
	b = append(appendPadded(append(appendPadded(append(b, ' '), fields[3], 2), ':'), fields[4], 2), ':')
	b = appendPadded(b, fields[5], 2)
	if digits > 0 {
		micros := fmt.Sprintf("%06d", fields[6])
		b = append(append(b, '.'), micros[:min(digits, 6)]...)
	}
	return b, nil
}

// mysqlDateFields reads YYYY-MM-DD[ hh:mm:ss[.f{1,6}]]: year, month, day, hour, minute, second
// and microseconds, any of them zero.
func mysqlDateFields(text string) ([7]int, bool) {
	var f [7]int
	var ok bool
	if len(text) < 10 || text[4] != '-' || text[7] != '-' {
		return f, false
	}
	for i, at := range []int{0, 5, 8} {
		width := 2
		if i == 0 {
			width = 4
		}
		if f[i], ok = digitsAt(text, at, width); !ok {
			return f, false
		}
	}
	rest := text[10:]
	if rest == "" {
		return f, true
	}
	if len(rest) < 9 || rest[0] != ' ' || rest[3] != ':' || rest[6] != ':' {
		return f, false
	}
	for i := 0; i < 3; i++ {
		if f[3+i], ok = digitsAt(rest, 1+3*i, 2); !ok {
			return f, false
		}
	}
	fraction := rest[9:]
	if fraction == "" {
		return f, true
	}
	if fraction[0] != '.' || len(fraction) < 2 || len(fraction) > 7 {
		return f, false
	}
	if f[6], ok = digitsAt(fraction, 1, len(fraction)-1); !ok {
		return f, false
	}
	for places := len(fraction) - 1; places < 6; places++ {
		f[6] *= 10
	}
	return f, true
}
