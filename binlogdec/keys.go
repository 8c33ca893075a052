package main

// keyIndex finds a table's entry by key. A key of fixed-width columns that fit in 8 bytes, none of
// them NULL (an integer primary key, say), is kept as a number: a smaller and faster map than one of
// strings, and no string allocated per key. Any other key is kept as cut made it.
type keyIndex struct {
	numbers map[uint64]int
	strings map[string]int
}

func newKeyIndex() keyIndex {
	return keyIndex{numbers: map[uint64]int{}, strings: map[string]int{}}
}

// find returns the entry of key (as cut made it, with l), or false.
func (x *keyIndex) find(l *layout, key []byte) (int, bool) {
	if n, ok := l.number(key); ok {
		i, found := x.numbers[n]
		return i, found
	}
	i, found := x.strings[string(key)]
	return i, found
}

func (x *keyIndex) add(l *layout, key []byte, i int) {
	if n, ok := l.number(key); ok {
		x.numbers[n] = i
		return
	}
	x.strings[string(key)] = i
}

// numbered is whether the layout's keys can be numbers: fixed-width key columns, at most 8 bytes
// together; and the length of such a key as cut makes it when no column is NULL (a marker per
// column and the bytes). A key with a NULL is shorter: no fixed width is 0.
func (l *layout) numbered() (bool, int) {
	bytes := 0
	for _, c := range l.keyColumns {
		w := l.widths[c]
		if w.prefix > 0 || w.fixed == 0 {
			return false, 0
		}
		bytes += w.fixed
	}
	return bytes <= 8, bytes + len(l.keyColumns)
}

// number packs a key as cut makes it into a number, if the layout allows and no column is NULL.
func (l *layout) number(key []byte) (uint64, bool) {
	if !l.numberKeys || len(key) != l.numberKeyBytes {
		return 0, false
	}
	var n uint64
	shift, pos := 0, 0
	for _, c := range l.keyColumns {
		pos++ // the marker
		for end := pos + l.widths[c].fixed; pos < end; pos++ {
			n |= uint64(key[pos]) << shift
			shift += 8
		}
	}
	return n, true
}
