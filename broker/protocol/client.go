package protocol

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Client is a minimal Kafka protocol client for broker-to-broker traffic
// (controller requests, follower fetches): one connection, one request at a time,
// redialed after any failure.
type Client struct {
	Addr     string
	ClientID string
	// MaxResponse bounds a response frame.
	MaxResponse int32
	// Dial connects (and authenticates, on a secured listener); nil dials TCP.
	Dial func(ctx context.Context, addr string) (net.Conn, error)

	mu   sync.Mutex
	conn net.Conn
	br   *bufio.Reader
	corr int32
}

// Request sends req at the version set on it (or its max version when it is 0
// and the caller wants that: set it explicitly) and reads the response.
func (c *Client) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		dial := c.Dial
		if dial == nil {
			var d net.Dialer
			dial = func(ctx context.Context, addr string) (net.Conn, error) { return d.DialContext(ctx, "tcp", addr) }
		}
		conn, err := dial(ctx, c.Addr)
		if err != nil {
			return nil, fmt.Errorf("dialing %s: %w", c.Addr, err)
		}
		c.conn, c.br = conn, bufio.NewReaderSize(conn, 64<<10)
	}
	resp, err := c.roundTrip(ctx, req)
	if err != nil {
		c.conn.Close()
		c.conn = nil
	}
	return resp, err
}

func (c *Client) roundTrip(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(30 * time.Second)
	}
	conn := c.conn // the field may be cleared once this round trip fails
	_ = conn.SetDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) })
	defer stop()

	c.corr++
	buf := make([]byte, 4, 256)
	buf = kbin.AppendInt16(buf, req.Key())
	buf = kbin.AppendInt16(buf, req.GetVersion())
	buf = kbin.AppendInt32(buf, c.corr)
	id := c.ClientID
	buf = kbin.AppendNullableString(buf, &id)
	if req.IsFlexible() {
		buf = append(buf, 0)
	}
	buf = req.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	if _, err := conn.Write(buf); err != nil {
		return nil, err
	}
	max := c.MaxResponse
	if max <= 0 {
		max = 1 << 30
	}
	frame, err := ReadFrame(c.br, max)
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("reading %s response from %s: %w", kmsg.NameForKey(req.Key()), c.Addr, err)
	}
	if len(frame) < 4 {
		return nil, fmt.Errorf("short %s response from %s", kmsg.NameForKey(req.Key()), c.Addr)
	}
	if got := int32(binary.BigEndian.Uint32(frame)); got != c.corr {
		return nil, fmt.Errorf("response correlation id %d, want %d", got, c.corr)
	}
	body := frame[4:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() && req.Key() != 18 {
		rd := kbin.Reader{Src: body}
		skipTags(&rd)
		if err := rd.Complete(); err != nil {
			return nil, err
		}
		body = rd.Src
	}
	if err := resp.ReadFrom(body); err != nil {
		return nil, fmt.Errorf("decoding %s response from %s: %w", kmsg.NameForKey(req.Key()), c.Addr, err)
	}
	return resp, nil
}

// Close closes the connection.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return nil
	}
	err := c.conn.Close()
	c.conn = nil
	return err
}
