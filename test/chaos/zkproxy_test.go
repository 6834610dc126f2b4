package chaos

import (
	"errors"
	"io"
	"net"
	"sync"
)

// zkProxy stands between one broker and ZooKeeper, so that the broker alone
// can be cut from ZooKeeper while it still talks to clients and the other
// brokers: in blackhole mode the connections stay open but nothing passes
// either way (as when packets are silently dropped), in reset mode every
// connection is reset and new ones are refused at once (as when the network
// answers with RST).
type zkProxy struct {
	ln     net.Listener
	target string

	mu    sync.Mutex
	mode  proxyMode
	conns map[net.Conn]struct{}
	gate  *sync.Cond // broadcast when the mode changes
	done  bool
}

type proxyMode int

const (
	proxyPass proxyMode = iota
	proxyBlackhole
	proxyReset
)

func (m proxyMode) String() string {
	return [...]string{"pass", "blackhole", "reset"}[m]
}

func newZkProxy(target string) (*zkProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &zkProxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.gate = sync.NewCond(&p.mu)
	go p.serve()
	return p, nil
}

func (p *zkProxy) addr() string { return p.ln.Addr().String() }

// set switches the mode; reset closes every open connection with an RST.
func (p *zkProxy) set(m proxyMode) {
	p.mu.Lock()
	p.mode = m
	var doomed []net.Conn
	if m == proxyReset {
		for c := range p.conns {
			doomed = append(doomed, c)
		}
	}
	p.gate.Broadcast()
	p.mu.Unlock()
	for _, c := range doomed {
		resetConn(c)
	}
}

func (p *zkProxy) close() {
	p.mu.Lock()
	p.done = true
	var all []net.Conn
	for c := range p.conns {
		all = append(all, c)
	}
	p.gate.Broadcast()
	p.mu.Unlock()
	p.ln.Close()
	for _, c := range all {
		c.Close()
	}
}

// resetConn closes c so that the peer gets an RST, not a FIN.
func resetConn(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	c.Close()
}

func (p *zkProxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *zkProxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

func (p *zkProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		mode := p.mode
		p.mu.Unlock()
		if mode == proxyReset {
			resetConn(c)
			continue
		}
		go p.handle(c)
	}
}

func (p *zkProxy) handle(c net.Conn) {
	if !p.track(c) {
		c.Close()
		return
	}
	defer p.untrack(c)
	// A connection accepted while blackholed waits, unanswered, for the cut
	// to end.
	if !p.waitPass() {
		resetConn(c)
		return
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		resetConn(c)
		return
	}
	if !p.track(up) {
		up.Close()
		c.Close()
		return
	}
	defer p.untrack(up)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); p.pipe(up, c) }()
	go func() { defer wg.Done(); p.pipe(c, up) }()
	wg.Wait()
}

// waitPass blocks while the proxy blackholes and reports whether traffic may
// pass (false once closed or reset).
func (p *zkProxy) waitPass() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.mode == proxyBlackhole && !p.done {
		p.gate.Wait()
	}
	return p.mode == proxyPass && !p.done
}

// pipe copies src to dst; bytes read while blackholed are held until the cut
// ends, as a network that drops packets makes the sender retransmit them.
func (p *zkProxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.waitPass() {
				resetConn(dst)
				resetConn(src)
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				resetConn(dst)
			}
			return
		}
	}
}
