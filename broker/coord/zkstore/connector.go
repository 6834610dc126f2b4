package zkstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ktoolhq/ktool/broker/coord"
)

// Connector opens ZooKeeper sessions; it implements coord.Connector.
type Connector struct {
	connect        string
	servers        []string
	chroot         string
	sessionTimeout time.Duration
	logger         *slog.Logger
	// dial opens TCP connections to servers; tests wrap it.
	dial zk.Dialer
}

var _ coord.Connector = (*Connector)(nil)

// NewConnector parses Kafka's zookeeper.connect value. Sessions ask for
// sessionTimeout (the server bounds it to 2..20 ticks). A nil logger
// discards go-zookeeper's messages; otherwise they are logged at debug level.
func NewConnector(connect string, sessionTimeout time.Duration, logger *slog.Logger) (*Connector, error) {
	servers, chroot, err := ParseConnect(connect)
	if err != nil {
		return nil, err
	}
	if sessionTimeout <= 0 {
		return nil, fmt.Errorf("zookeeper session timeout must be positive, got %v", sessionTimeout)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Connector{
		connect:        connect,
		servers:        servers,
		chroot:         chroot,
		sessionTimeout: sessionTimeout,
		logger:         logger,
		dial:           net.DialTimeout,
	}, nil
}

// ParseConnect splits a zookeeper.connect value into host:port servers
// (port 2181 when omitted) and a chroot ("" for none).
func ParseConnect(connect string) (servers []string, chroot string, err error) {
	connect = strings.TrimSpace(connect)
	hosts := connect
	if i := strings.IndexByte(connect, '/'); i >= 0 {
		hosts, chroot = connect[:i], connect[i:]
		if err := coord.ValidatePath(chroot, false); err != nil {
			return nil, "", fmt.Errorf("zookeeper.connect %q: chroot: %w", connect, err)
		}
		if chroot == "/" {
			chroot = ""
		}
	}
	for _, h := range strings.Split(hosts, ",") {
		h = strings.TrimSpace(h)
		if h == "" {
			return nil, "", fmt.Errorf("zookeeper.connect %q: empty server", connect)
		}
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			host, port = h, "2181"
			if strings.Contains(h, ":") && !strings.HasPrefix(h, "[") {
				return nil, "", fmt.Errorf("zookeeper.connect %q: bad server %q", connect, h)
			}
		}
		if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
			return nil, "", fmt.Errorf("zookeeper.connect %q: bad port in %q", connect, h)
		}
		if host == "" {
			return nil, "", fmt.Errorf("zookeeper.connect %q: empty host in %q", connect, h)
		}
		servers = append(servers, net.JoinHostPort(strings.Trim(host, "[]"), port))
	}
	return servers, chroot, nil
}

// Connect opens a session and waits until ZooKeeper has established it,
// bounded by ctx (or by the session timeout when ctx has no deadline). The
// chroot is created if it does not exist.
func (c *Connector) Connect(ctx context.Context) (coord.Store, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.sessionTimeout)
		defer cancel()
	}
	s := &store{
		chroot:  c.chroot,
		expired: make(chan struct{}),
		ready:   make(chan struct{}),
	}
	var lastDial struct {
		sync.Mutex
		err error
	}
	s.redial = newRedial(c.sessionTimeout, func(network, addr string, timeout time.Duration) (net.Conn, error) {
		conn, err := c.dial(network, addr, timeout)
		lastDial.Lock()
		lastDial.err = err
		lastDial.Unlock()
		return conn, err
	})
	conn, _, err := zk.Connect(c.servers, c.sessionTimeout,
		zk.WithLogger(slogAdapter{c.logger}),
		zk.WithLogInfo(false),
		zk.WithHostProvider(s.redial),
		zk.WithDialer(s.redial.Dial),
		zk.WithEventCallback(s.onEvent))
	if err != nil {
		return nil, fmt.Errorf("zookeeper %s: %w", c.connect, err)
	}
	s.setConn(conn)
	select {
	case <-s.ready:
	case <-ctx.Done():
		conn.Close()
		lastDial.Lock()
		why := lastDial.err
		lastDial.Unlock()
		if why != nil {
			return nil, fmt.Errorf("zookeeper %s unreachable: %w (last attempt: %v)", c.connect, ctx.Err(), why)
		}
		return nil, fmt.Errorf("zookeeper %s: no session established: %w", c.connect, ctx.Err())
	}
	s.id = conn.SessionID()
	if c.chroot != "" {
		if err := s.ensureChroot(ctx); err != nil {
			s.Close()
			return nil, fmt.Errorf("zookeeper %s: create chroot %s: %w", c.connect, c.chroot, err)
		}
	}
	return s, nil
}

type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) Printf(format string, args ...any) {
	a.l.Debug(fmt.Sprintf(format, args...), "component", "zookeeper-client")
}

// mapErr turns go-zookeeper errors into coord errors; others pass through.
func mapErr(err error) error {
	if err == nil {
		return nil
	}
	switch {
	case errors.Is(err, zk.ErrNoNode):
		return coord.ErrNoNode
	case errors.Is(err, zk.ErrNodeExists):
		return coord.ErrNodeExists
	case errors.Is(err, zk.ErrBadVersion):
		return coord.ErrBadVersion
	case errors.Is(err, zk.ErrNotEmpty):
		return coord.ErrNotEmpty
	case errors.Is(err, zk.ErrNoChildrenForEphemerals):
		return coord.ErrNoChildrenForEphemerals
	case errors.Is(err, zk.ErrInvalidPath), errors.Is(err, zk.ErrBadArguments):
		return coord.ErrInvalidPath
	case errors.Is(err, zk.ErrSessionExpired):
		return coord.ErrSessionExpired
	case errors.Is(err, zk.ErrClosing):
		return coord.ErrClosed
	case errors.Is(err, zk.ErrConnectionClosed), errors.Is(err, zk.ErrNoServer), errors.Is(err, zk.ErrSessionMoved):
		return coord.ErrConnectionLoss
	}
	return err
}
