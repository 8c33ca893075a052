package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/go-mysql-org/go-mysql/mysql"
)

// gtidPosition is a MariaDB GTID position (the last GTID of every replication domain) kept up to
// date along a followed stream, as the Python reader keeps it (mysql/binlog/stream.py
// _GtidPosition): the caller then need not ask the server for each batch's end
// (BINLOG_GTID_POS, which reads the binlog file from its start). Unknown at the start (no
// "startGtid"), it stays unknown: the caller asks the server then, as before.
type gtidPosition struct {
	known   bool
	domains map[uint32]string
	text    string
}

func newGTIDPosition(start string) *gtidPosition {
	g := &gtidPosition{domains: map[uint32]string{}}
	for _, part := range strings.FieldsFunc(start, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' }) {
		domain, _, _ := strings.Cut(part, "-")
		d, err := strconv.ParseUint(domain, 10, 32)
		if err != nil {
			return &gtidPosition{domains: map[uint32]string{}} // not a GTID position: unknown
		}
		g.domains[uint32(d)] = part
		g.known = true
	}
	g.render()
	return g
}

// add records the GTID of a transaction that begins.
func (g *gtidPosition) add(gtid mysql.MariadbGTID) {
	if !g.known {
		return
	}
	g.domains[gtid.DomainID] = fmt.Sprintf("%d-%d-%d", gtid.DomainID, gtid.ServerID, gtid.SequenceNumber)
	g.render()
}

// render orders the domains as the Python reader does: by number, joined by commas.
func (g *gtidPosition) render() {
	keys := make([]uint32, 0, len(g.domains))
	for d := range g.domains {
		keys = append(keys, d)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	parts := make([]string, len(keys))
	for i, d := range keys {
		parts[i] = g.domains[d]
	}
	g.text = strings.Join(parts, ",")
}

// at is p with the position's GTID (none where it is unknown).
func (g *gtidPosition) at(p position) position {
	if g.known {
		p.GTID = g.text
	}
	return p
}
