package brokerproc

import (
	"fmt"
	"strconv"
	"strings"
)

// Ready is what a broker's ready line says.
type Ready struct {
	ID         int32
	Addr       string // the listener, host:port
	Advertised string // the address published to clients
	ClusterID  string
	Mode       string // "standalone (embedded coordination store)" or "ZooKeeper <connect>"
}

const (
	readyPrefix     = "ktool broker "
	readyListening  = " ready: listening on "
	readyAdvertised = ", advertised as "
	readyCluster    = ", cluster "
)

// ReadyLine is the line `ktool broker start` prints on stdout once the broker
// serves requests, without the newline.
func ReadyLine(r Ready) string {
	return fmt.Sprintf("%s%d%s%s%s%s%s%s, %s", readyPrefix, r.ID, readyListening, r.Addr,
		readyAdvertised, r.Advertised, readyCluster, r.ClusterID, r.Mode)
}

// ParseReady reads a line written by ReadyLine.
func ParseReady(line string) (Ready, bool) {
	rest, ok := strings.CutPrefix(line, readyPrefix)
	if !ok {
		return Ready{}, false
	}
	id, rest, ok := strings.Cut(rest, readyListening)
	if !ok {
		return Ready{}, false
	}
	n, err := strconv.ParseInt(id, 10, 32)
	if err != nil {
		return Ready{}, false
	}
	r := Ready{ID: int32(n)}
	if r.Addr, rest, ok = strings.Cut(rest, readyAdvertised); !ok {
		return Ready{}, false
	}
	if r.Advertised, rest, ok = strings.Cut(rest, readyCluster); !ok {
		return Ready{}, false
	}
	// A cluster id is base64url; the mode may hold commas (a ZooKeeper ensemble).
	if r.ClusterID, r.Mode, ok = strings.Cut(rest, ", "); !ok {
		return Ready{}, false
	}
	return r, true
}
