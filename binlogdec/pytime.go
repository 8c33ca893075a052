package main

import (
	"fmt"
	"strconv"
)

// Temporal values as the changelog writes them: Python's isoformat() of the canonical date or
// datetime (operator/sparkcdc/mysql/types.py), from the text go-mysql gives ("YYYY-MM-DD",
// "YYYY-MM-DD HH:MM:SS[.f...]", TIMESTAMP in UTC). A date with a zero year, month or day is NULL
// there, as is the zero TIMESTAMP (stored as the epoch); any other date Python would refuse is an
// error here, so the caller's Python path meets it instead.

type wallClock struct {
	year, month, day, hour, minute, second, micro int
}

func parseWallClock(text string, withTime bool) (wallClock, bool, error) {
	w, zero, ok := readWallClock(text, withTime)
	if !ok {
		return w, false, fmt.Errorf("temporal text %q", text)
	}
	return w, zero, nil
}

// readWallClock is parseWallClock without the error's making (it runs for every value).
func readWallClock(text string, withTime bool) (w wallClock, zero, ok bool) {
	if len(text) < 10 || text[4] != '-' || text[7] != '-' {
		return w, false, false
	}
	fields := []*int{&w.year, &w.month, &w.day}
	for i, at := range []int{0, 5, 8} {
		width := 2
		if i == 0 {
			width = 4
		}
		if *fields[i], ok = digitsAt(text, at, width); !ok {
			return w, false, false
		}
	}
	if w.year == 0 || w.month == 0 || w.day == 0 {
		return w, true, true // a zero date: NULL
	}
	if w.month > 12 || w.day > daysIn(w.year, w.month) {
		return w, false, false
	}
	rest := text[10:]
	if !withTime {
		if rest != "" {
			return w, false, false
		}
		return w, false, true
	}
	if len(rest) < 9 || rest[0] != ' ' || rest[3] != ':' || rest[6] != ':' {
		return w, false, false
	}
	for i, field := range []*int{&w.hour, &w.minute, &w.second} {
		if *field, ok = digitsAt(rest, 1+3*i, 2); !ok {
			return w, false, false
		}
	}
	if w.hour > 23 || w.minute > 59 || w.second > 59 {
		return w, false, false
	}
	if fraction := rest[9:]; fraction != "" {
		if fraction[0] != '.' || len(fraction) < 2 || len(fraction) > 7 {
			return w, false, false
		}
		if w.micro, ok = digitsAt(fraction, 1, len(fraction)-1); !ok {
			return w, false, false
		}
		for places := len(fraction) - 1; places < 6; places++ {
			w.micro *= 10
		}
	}
	return w, false, true
}

// digitsAt reads the number of width digits at at.
func digitsAt(s string, at, width int) (int, bool) {
	if at+width > len(s) {
		return 0, false
	}
	n := 0
	for _, c := range []byte(s[at : at+width]) {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = 10*n + int(c-'0')
	}
	return n, true
}

func daysIn(year, month int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

func appendPadded(b []byte, n, width int) []byte {
	start := len(b)
	return padLeft(strconv.AppendInt(b, int64(n), 10), start, width)
}

// appendPyDate writes date.isoformat() quoted, or null for a zero date.
func appendPyDate(b []byte, text string) ([]byte, error) {
	w, zero, err := parseWallClock(text, false)
	if err != nil || zero {
		return append(b, "null"...), err
	}
	return append(appendDate(append(b, '"'), w), '"'), nil
}

func appendDate(b []byte, w wallClock) []byte {
	b = append(appendPadded(b, w.year, 4), '-')
	return appendPadded(append(appendPadded(b, w.month, 2), '-'), w.day, 2)
}

// appendPyDatetime writes datetime.isoformat() quoted ("T" between date and time, microseconds
// only when not zero, "+00:00" after a TIMESTAMP's UTC time), or null for a zero date or the zero
// TIMESTAMP.
func appendPyDatetime(b []byte, text string, utc bool) ([]byte, error) {
	w, zero, err := parseWallClock(text, true)
	if err != nil || zero {
		return append(b, "null"...), err
	}
	return appendPyWallClock(b, w, utc), nil
}

// appendPyWallClock is appendPyDatetime of the fields read from the text.
func appendPyWallClock(b []byte, w wallClock, utc bool) []byte {
	if utc && w == (wallClock{year: 1970, month: 1, day: 1}) {
		return append(b, "null"...)
	}
	b = append(appendDate(append(b, '"'), w), 'T')
	b = append(appendPadded(append(appendPadded(b, w.hour, 2), ':'), w.minute, 2), ':')
	b = appendPadded(b, w.second, 2)
	if w.micro != 0 {
		b = appendPadded(append(b, '.'), w.micro, 6)
	}
	if utc {
		b = append(b, "+00:00"...)
	}
	return append(b, '"')
}
