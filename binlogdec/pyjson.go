package main

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Python's spellings, for the changelog lines rendered here (linelog.go): the sink's lines are
// json.dumps(..., ensure_ascii=False, separators=(",", ":")) of canonical Python values
// (operator/sparkcdc/sinks/values.py), so every value must come out as Python writes it.

const lowerHex = "0123456789abcdef"

// appendPyString quotes s as json.dumps(s, ensure_ascii=False): only '"', '\\' and the control
// characters below 0x20 are escaped (\b \f \n \r \t by name, the rest as \u00xx); all else is kept.
func appendPyString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"':
			b = append(b, `\"`...)
		case '\\':
			b = append(b, `\\`...)
		case '\b':
			b = append(b, `\b`...)
		case '\f':
			b = append(b, `\f`...)
		case '\n':
			b = append(b, `\n`...)
		case '\r':
			b = append(b, `\r`...)
		case '\t':
			b = append(b, `\t`...)
		default:
			b = append(b, '\\', 'u', '0', '0', lowerHex[c>>4], lowerHex[c&0xF])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendPyFloat writes f as Python's repr (json.dumps writes a float so): the shortest digits that
// round-trip, in positional notation with at least one decimal ("100.0", "0.0001") when the
// decimal point falls within 16 digits left or 4 digits right of them, else as "1e-05", "1.5e+300".
func appendPyFloat(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, 1):
		return append(b, "Infinity"...)
	case math.IsInf(f, -1):
		return append(b, "-Infinity"...)
	}
	var scratch [32]byte
	e := strconv.AppendFloat(scratch[:0], f, 'e', -1, 64) // [-]d[.ddd]e±XX, the shortest round-trip digits
	at := bytes.IndexByte(e, 'e')
	mantissa, x := e[:at], 0
	for _, c := range e[at+2:] {
		x = 10*x + int(c-'0')
	}
	if e[at+1] == '-' {
		x = -x
	}
	point := x + 1 // the decimal point's place after the first digit, as Python counts it
	if point <= -4 || point > 16 {
		return append(b, e...)
	}
	if mantissa[0] == '-' {
		b, mantissa = append(b, '-'), mantissa[1:]
	}
	var digitScratch [24]byte
	digits := append(append(digitScratch[:0], mantissa[0]), mantissa[min(2, len(mantissa)):]...)
	switch {
	case point <= 0:
		b = append(b, "0."...)
		for range -point {
			b = append(b, '0')
		}
		return append(b, digits...)
	case point < len(digits):
		return append(append(append(b, digits[:point]...), '.'), digits[point:]...)
	default:
		b = append(b, digits...)
		for range point - len(digits) {
			b = append(b, '0')
		}
		return append(b, ".0"...)
	}
}

// appendPyDecimal writes, quoted, str(Decimal(text).quantize(Decimal(10) ** -scale)) for the text
// go-mysql gives a DECIMAL ([-]digits[.digits]): Python's to-scientific-string, which turns to an
// exponent ("1E-7", "0E-30") when the value's leading digit lies more than 6 places right of the
// point. Text with more fractional digits than the scale (which quantizing would round) is an error.
func appendPyDecimal(b []byte, text string, scale int) ([]byte, error) {
	negative := strings.HasPrefix(text, "-")
	whole, fraction, _ := strings.Cut(strings.TrimPrefix(text, "-"), ".")
	if len(fraction) > scale || whole == "" && fraction == "" || !allDigits(whole) || !allDigits(fraction) {
		return nil, fmt.Errorf("DECIMAL text %q of scale %d", text, scale)
	}
	digits := strings.TrimLeft(whole+fraction+strings.Repeat("0", scale-len(fraction)), "0")
	if digits == "" {
		digits = "0"
	}
	left := len(digits) - scale // the digits before the point (Python's leftdigits)
	dot := left
	if left <= -6 {
		dot = 1
	}
	b = append(b, '"')
	if negative {
		b = append(b, '-')
	}
	switch {
	case dot <= 0:
		b = append(append(append(b, "0."...), strings.Repeat("0", -dot)...), digits...)
	case dot >= len(digits):
		b = append(append(b, digits...), strings.Repeat("0", dot-len(digits))...)
	default:
		b = append(append(append(b, digits[:dot]...), '.'), digits[dot:]...)
	}
	if left != dot {
		b = append(b, 'E')
		if left-dot >= 0 {
			b = append(b, '+')
		}
		b = strconv.AppendInt(b, int64(left-dot), 10)
	}
	return append(b, '"'), nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// latin1High is what MySQL's latin1 reads 0x80..0x9F as: Windows-1252, whose five unassigned
// bytes the server maps to the C1 controls of the same number (core/charsets.py, the table every
// sparkcdc reader of latin1 bytes decodes with).
var latin1High = [32]rune{
	0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0x008D, 0x017D, 0x008F,
	0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178,
}

// decodeLatin1 is core/charsets.py's decode_mysql_latin1: from 0xA0 on, the byte is the code point.
func decodeLatin1(s string) string {
	i := 0
	for i < len(s) && s[i] < 0x80 {
		i++
	}
	if i == len(s) {
		return s
	}
	b := make([]byte, i, len(s)+len(s)/2)
	copy(b, s[:i])
	for ; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x80:
			b = append(b, c)
		case c < 0xA0:
			b = utf8.AppendRune(b, latin1High[c-0x80])
		default:
			b = utf8.AppendRune(b, rune(c))
		}
	}
	return string(b)
}
