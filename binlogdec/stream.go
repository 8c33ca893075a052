package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/go-mysql-org/go-mysql/client"
	"github.com/go-mysql-org/go-mysql/mysql"
	"github.com/go-mysql-org/go-mysql/replication"
)

// newParser is a go-mysql parser configured as the syncer's would be for this decoder: values as
// text (no time.Time, no decimal.Decimal), TIMESTAMP rendered in UTC.
func newParser(flavor string) *replication.BinlogParser {
	p := replication.NewBinlogParser()
	p.SetFlavor(flavor)
	p.SetTimestampStringLocation(time.UTC)
	return p
}

// reader parses the events a raw-mode syncer hands over. Rows events get only their header decoded:
// the rows are cut from the body by the table's layout (image.go) instead of decoded value by value.
type reader struct {
	parser *replication.BinlogParser
	body   []byte // the rows of the rows event parsed last
	format []byte // the format description event in force
}

func newReader(flavor string) *reader {
	r := &reader{parser: newParser(flavor)}
	r.parser.SetRowsEventDecodeFunc(func(e *replication.RowsEvent, data []byte) error {
		pos, err := e.DecodeHeader(data)
		if err != nil {
			return err
		}
		r.body = data[pos:]
		return nil
	})
	return r
}

// rows returns the rows of the rows event just parsed, decompressed if MariaDB compressed them.
func (r *reader) rows(ev *replication.BinlogEvent) ([]byte, error) {
	switch ev.Header.EventType {
	case replication.MARIADB_WRITE_ROWS_COMPRESSED_EVENT_V1,
		replication.MARIADB_UPDATE_ROWS_COMPRESSED_EVENT_V1,
		replication.MARIADB_DELETE_ROWS_COMPRESSED_EVENT_V1:
		return mysql.DecompressMariadbData(r.body)
	case replication.PARTIAL_UPDATE_ROWS_EVENT:
		return nil, unsupported{"a partial JSON update (binlog_row_value_options)"}
	}
	return r.body, nil
}

func isBoundary(ev *replication.BinlogEvent) (bool, error) {
	switch e := ev.Event.(type) {
	case *replication.XIDEvent:
		return true, nil
	case *replication.QueryEvent:
		head := strings.ToUpper(strings.TrimSpace(string(e.Query)))
		if strings.HasPrefix(head, "BEGIN") || withinTransaction(head) {
			return false, nil
		}
		if strings.HasPrefix(head, "COMMIT") || strings.HasPrefix(head, "XA") {
			return true, nil
		}
		return false, unsupported{"a DDL statement inside the range"}
	}
	return false, nil
}

func startSync(req request) (*replication.BinlogSyncer, *replication.BinlogStreamer, error) {
	cfg, err := syncerConfig(req)
	if err != nil {
		return nil, nil, err
	}
	syncer, streamer, err := syncFrom(cfg, req.Start)
	if err != nil && req.TLS.Mode == "preferred" && noServerTLS(err) {
		cfg.TLSConfig = nil
		syncer, streamer, err = syncFrom(cfg, req.Start)
	}
	if err != nil {
		addr := net.JoinHostPort(req.Host, strconv.Itoa(int(req.Port)))
		return nil, nil, tlsFailure(err, req.TLS.Mode, addr)
	}
	return syncer, streamer, nil
}

func syncFrom(cfg replication.BinlogSyncerConfig, start position) (*replication.BinlogSyncer, *replication.BinlogStreamer, error) {
	syncer := replication.NewBinlogSyncer(cfg)
	streamer, err := syncer.StartSync(mysql.Position{Name: start.File, Pos: start.Pos})
	if err != nil {
		syncer.Close()
		return nil, nil, err
	}
	return syncer, streamer, nil
}

func syncerConfig(req request) (replication.BinlogSyncerConfig, error) {
	tlsCfg, err := tlsConfig(req.TLS, req.Host)
	if err != nil {
		return replication.BinlogSyncerConfig{}, err
	}
	cfg := replication.BinlogSyncerConfig{
		TLSConfig:               tlsCfg,
		ServerID:                req.ServerID,
		Flavor:                  req.Flavor,
		Host:                    req.Host,
		Port:                    req.Port,
		User:                    req.User,
		Password:                req.Password,
		TimestampStringLocation: time.UTC,
		MaxReconnectAttempts:    1,
		DisableRetrySync:        true,
		// The syncer only frames events; they are parsed here, where rows events are cut, not decoded.
		RawModeEnabled: true,
		Logger:         slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if req.ExpectServerID != 0 {
		// On the replication connection itself, before it registers: a failover behind the
		// source's address is refused, never read as if the positions were the old server's.
		cfg.Option = func(c *client.Conn) error { return checkServerID(c, req.ExpectServerID) }
	}
	if req.Follow != nil && req.Follow.HeartbeatSeconds > 0 {
		// A followed stream can be idle for long: the source's heartbeats keep the connection
		// alive, and a read that sees none for three periods fails instead of hanging.
		period := time.Duration(req.Follow.HeartbeatSeconds) * time.Second
		cfg.HeartbeatPeriod = period
		cfg.ReadTimeout = 3 * period
	}
	return cfg, nil
}

func checkServerID(c *client.Conn, want uint32) error {
	r, err := c.Execute("SELECT @@GLOBAL.server_id")
	if err != nil {
		return err
	}
	got, err := r.GetUint(0, 0)
	if err != nil {
		return err
	}
	if uint32(got) != want {
		return fmt.Errorf("the source is now server_id %d, not server_id %d", got, want)
	}
	return nil
}

// decoding is the state of reading one range: the requested tables and the table maps in force.
type decoding struct {
	file   string // the binlog file read (its rotations: the caller's)
	log    bool   // every change, not the last image per key (changelog.go)
	tables map[string]*reduced
	maps   map[*replication.TableMapEvent]*tableMap
	reader *reader
	events int
}

func (d *decoding) table(schema, table []byte) *reduced {
	return d.tables[string(schema)+"\x00"+string(table)]
}

// onEvent handles one parsed event other than a boundary.
func (d *decoding) onEvent(ev *replication.BinlogEvent) error {
	switch e := ev.Event.(type) {
	case *replication.FormatDescriptionEvent:
		d.reader.format = ev.RawData
	case *replication.TransactionPayloadEvent:
		// MySQL's binlog_transaction_compression: rows inside a compressed payload.
		return unsupported{"a compressed transaction payload"}
	case *replication.TableMapEvent:
		if t := d.table(e.Schema, e.Table); t != nil {
			m, err := t.tableMap(e, d.reader.format, ev.RawData)
			if err != nil {
				return err
			}
			d.maps[e] = m
		}
	case *replication.RowsEvent:
		err := d.onRows(ev, e)
		if e.Flags&replication.RowsEventStmtEndFlag != 0 {
			// The parser forgets its table maps here too: later rows events come with new ones.
			clear(d.maps)
		}
		return err
	}
	return nil
}

func (d *decoding) onRows(ev *replication.BinlogEvent, e *replication.RowsEvent) error {
	t := d.table(e.Table.Schema, e.Table.Table)
	if t == nil {
		return nil
	}
	if int(e.ColumnCount) != t.spec.Columns {
		return unsupported{fmt.Sprintf("%s.%s has %d columns in the binlog, %d in its definition",
			e.Table.Schema, e.Table.Table, e.ColumnCount, t.spec.Columns)}
	}
	m := d.maps[e.Table]
	if m == nil { // its table map named other columns (tableMap): written under another definition
		return unsupported{fmt.Sprintf("%s.%s was written with other columns than its definition",
			e.Table.Schema, e.Table.Table)}
	}
	body, err := d.reader.rows(ev)
	if err != nil {
		return err
	}
	n, err := t.apply(e, m, body, eventAt{file: d.file, pos: ev.Header.LogPos, ts: ev.Header.Timestamp})
	d.events += n
	return err
}

func newDecoding(req request) *decoding {
	d := &decoding{maps: map[*replication.TableMapEvent]*tableMap{}, reader: newReader(req.Flavor), file: req.Start.File}
	d.log = req.Follow != nil && req.Follow.Changes
	d.reset(req.Tables)
	return d
}

// reset forgets what was reduced so far (a batch was answered); the table maps in force stay.
func (d *decoding) reset(specs []tableSpec) {
	answered := d.tables
	d.tables = map[string]*reduced{}
	for _, t := range specs {
		key := t.DB + "\x00" + t.Table
		r := newReduced(t, d.log)
		if done := answered[key]; done != nil {
			// The answered batch's changes are written: their slice holds the next batch's, which
			// is about as long, instead of growing again from nothing.
			clear(done.changes)
			r.changes = done.changes[:0]
		}
		d.tables[key] = r
	}
	d.events = 0
}

func decode(req request) (map[string]*reduced, int, error) {
	d := newDecoding(req)
	syncer, streamer, err := startSync(req)
	if err != nil {
		return nil, 0, err
	}
	defer syncer.Close()
	file := req.Start.File
	ctx := context.Background()
	for {
		raw, err := streamer.GetEvent(ctx)
		if err != nil {
			return nil, 0, err
		}
		ev, err := d.reader.parser.Parse(raw.RawData)
		if err != nil {
			return nil, 0, err
		}
		if rotate, ok := ev.Event.(*replication.RotateEvent); ok {
			file = string(rotate.NextLogName)
			d.file = file
			continue
		}
		if err := d.onEvent(ev); err != nil {
			return nil, 0, err
		}
		if _, ok := ev.Event.(*replication.RowsEvent); ok {
			continue
		}
		boundary, err := isBoundary(ev)
		if err != nil {
			return nil, 0, err
		}
		if ev.Header.LogPos == 0 || file != req.Stop.File {
			continue
		}
		if ev.Header.LogPos > req.Stop.Pos {
			return nil, 0, fmt.Errorf("passed the range end %s:%d without a commit there", req.Stop.File, req.Stop.Pos)
		}
		if boundary && ev.Header.LogPos == req.Stop.Pos {
			return d.tables, d.events, nil
		}
	}
}
