package broker

// Client quotas (producer_byte_rate, consumer_byte_rate, request_percentage):
// their znodes, the cached table every broker measures requests against, and
// the KIP-219 throttling of a request over its quota (throttle_time_ms in the
// answer, and the connection muted for that time).
//
// Storage is Kafka's: /config/users/<user>, /config/users/<user>/clients/<client-id>,
// /config/clients/<client-id>, with <default> entities and names sanitized as
// Kafka's Sanitizer does, and a /config/changes notification whose entity_path is
// "users/<user>", "users/<user>/clients/<client-id>" or "clients/<client-id>".

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/config"
	"github.com/ktoolhq/ktool/broker/coord"
	"github.com/ktoolhq/ktool/broker/protocol"
	cq "github.com/ktoolhq/ktool/broker/quota"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

func newQuotaManager(s *config.Settings) *cq.Manager {
	return cq.NewManager(cq.Config{Samples: s.QuotaWindowNum, Window: s.QuotaWindowSize})
}

// quotaName is a name component as its znode spells it.
func quotaName(n cq.Name) string {
	if n.Default {
		return zkdata.DefaultConfigEntity
	}
	return zkdata.SanitizeUser(n.Name)
}

// parseQuotaName reads a znode name back.
func parseQuotaName(s string) (cq.Name, error) {
	if s == zkdata.DefaultConfigEntity {
		return cq.DefaultName(), nil
	}
	n, err := zkdata.DesanitizeUser(s)
	if err != nil {
		return cq.Name{}, err
	}
	return cq.Named(n), nil
}

// quotaEntityPath is the entity path of e under /config: users/<u>,
// users/<u>/clients/<c> or clients/<c>.
func quotaEntityPath(e cq.Entity) (kind, name string) {
	switch {
	case e.User.Set && e.Client.Set:
		return zkdata.ConfigTypeUser, quotaName(e.User) + "/" + zkdata.ConfigTypeClient + "/" + quotaName(e.Client)
	case e.User.Set:
		return zkdata.ConfigTypeUser, quotaName(e.User)
	}
	return zkdata.ConfigTypeClient, quotaName(e.Client)
}

// readQuotaConfigs reads every quota entity's stored config.
func (b *Broker) readQuotaConfigs(ctx context.Context) (map[cq.Entity]map[string]string, error) {
	s := b.Store()
	out := map[cq.Entity]map[string]string{}
	read := func(e cq.Entity) error {
		kind, name := quotaEntityPath(e)
		data, _, err := s.Get(ctx, zkdata.ConfigEntityPath(kind, name))
		if errors.Is(err, coord.ErrNoNode) {
			return nil
		}
		if err != nil {
			return err
		}
		m, err := zkdata.DecodeConfig(data)
		if err != nil {
			b.logger.Warn("unreadable quota config", "entity", e.String(), "err", err)
			return nil
		}
		out[e] = m
		return nil
	}
	children := func(path string) ([]string, error) {
		names, _, err := s.Children(ctx, path)
		if errors.Is(err, coord.ErrNoNode) {
			return nil, nil
		}
		return names, err
	}
	users, err := children(zkdata.ConfigUsersPath)
	if err != nil {
		return nil, err
	}
	for _, un := range users {
		u, err := parseQuotaName(un)
		if err != nil {
			continue
		}
		if err := read(cq.Entity{User: u}); err != nil {
			return nil, err
		}
		clients, err := children(zkdata.ConfigUsersPath + "/" + un + "/" + zkdata.ConfigTypeClient)
		if err != nil {
			return nil, err
		}
		for _, cn := range clients {
			if c, err := parseQuotaName(cn); err == nil {
				if err := read(cq.Entity{User: u, Client: c}); err != nil {
					return nil, err
				}
			}
		}
	}
	clients, err := children(zkdata.ConfigClientsPath)
	if err != nil {
		return nil, err
	}
	for _, cn := range clients {
		if c, err := parseQuotaName(cn); err == nil {
			if err := read(cq.Entity{Client: c}); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// quotaTable turns stored configs into a table; an entity with an unreadable
// quota value keeps its other values.
func (b *Broker) quotaTable(configs map[cq.Entity]map[string]string) *cq.Table {
	m := map[cq.Entity]cq.Values{}
	for e, c := range configs {
		v := cq.Values{}
		for key, s := range c {
			one, err := cq.ParseValues(map[string]string{key: s})
			if err != nil {
				b.logger.Warn("ignoring a quota", "entity", e.String(), "err", err)
				continue
			}
			for k, f := range one {
				v[k] = f
			}
		}
		m[e] = v
	}
	return cq.NewTable(m)
}

// loadQuotas reads every quota and replaces the table requests are measured
// against. Quota changes are rare, so a change reloads them all.
func (b *Broker) loadQuotas(ctx context.Context) {
	configs, err := b.readQuotaConfigs(ctx)
	if err != nil {
		b.logger.Warn("reading client quotas", "err", err)
		return
	}
	b.quotas.SetTable(b.quotaTable(configs))
}

// updateQuotaConfig changes an entity's stored config with f, conditionally on
// its version so concurrent changes (SCRAM credentials share /config/users/<u>)
// are not lost, then leaves a config change notification for every broker and
// applies it here at once.
func (b *Broker) updateQuotaConfig(ctx context.Context, e cq.Entity, f func(map[string]string)) error {
	kind, name := quotaEntityPath(e)
	path := zkdata.ConfigEntityPath(kind, name)
	for attempt := 0; attempt < 10; attempt++ {
		s := b.Store()
		data, st, err := s.Get(ctx, path)
		exists := err == nil
		if err != nil && !errors.Is(err, coord.ErrNoNode) {
			return err
		}
		m := map[string]string{}
		if exists {
			if m, err = zkdata.DecodeConfig(data); err != nil {
				return err
			}
		}
		f(m)
		switch {
		case !exists && len(m) == 0:
			return nil
		case !exists:
			_, err = s.CreateAll(ctx, path, zkdata.EncodeConfig(m), coord.Persistent)
		case len(m) == 0:
			// A user znode may hold the user's client-id entities: it then stays, empty.
			if err = s.Delete(ctx, path, st.Version); errors.Is(err, coord.ErrNotEmpty) {
				_, err = s.Set(ctx, path, zkdata.EncodeConfig(m), st.Version)
			}
		default:
			_, err = s.Set(ctx, path, zkdata.EncodeConfig(m), st.Version)
		}
		if errors.Is(err, coord.ErrBadVersion) || errors.Is(err, coord.ErrNodeExists) || errors.Is(err, coord.ErrNoNode) {
			continue // raced with another change: read again
		}
		if err != nil {
			return err
		}
		if _, err := s.CreateAll(ctx, zkdata.ConfigChangePath(), zkdata.EncodeConfigChange(kind+"/"+name), coord.PersistentSequential); err != nil {
			return err
		}
		b.loadQuotas(ctx)
		return nil
	}
	return fmt.Errorf("%s: too many concurrent changes", e)
}

// quotaUser is the user name quotas know a request's principal by.
func (rc *reqCtx) quotaUser() string { return rc.identity.Principal.Name }

// recordBytes measures n bytes of kind k for the request's client and returns
// the throttle time, muting the connection for it (KIP-219).
func (b *Broker) recordBytes(rc *reqCtx, k cq.Kind, n int64) time.Duration {
	if !b.quotas.Active() {
		return 0
	}
	d := b.quotas.Record(k, rc.quotaUser(), rc.header.ClientID, float64(n), time.Now())
	if d > 0 {
		rc.conn.Mute(d)
	}
	return d
}

// requestQuotaExempt are the requests request_percentage never throttles, as
// Kafka exempts them: the controller's, ApiVersions and authentication.
var requestQuotaExempt = interBroker

// withRequestQuota measures the handler's own time (not the time an answer waits
// for replication or data) against request_percentage, and puts the larger of
// that throttle time and the handler's own into the answer.
func (b *Broker) withRequestQuota(rc *reqCtx, req kmsg.Request, a api, respond func(protocol.Response)) {
	if f, ok := req.(*kmsg.FetchRequest); ok && f.ReplicaID >= 0 {
		a.handle(b, rc, req, respond)
		return
	}
	var (
		mu       sync.Mutex
		handled  bool
		throttle time.Duration
		held     *protocol.Response
	)
	send := func(r protocol.Response) {
		if throttle > 0 {
			ms := int32(throttle / time.Millisecond)
			if r.Msg != nil {
				raiseThrottle(r.Msg, ms)
			}
			if late := r.Late; late != nil {
				r.Late = func() kmsg.Response {
					m := late()
					raiseThrottle(m, ms)
					return m
				}
			}
		}
		respond(r)
	}
	start := time.Now()
	a.handle(b, rc, req, func(r protocol.Response) {
		mu.Lock()
		if !handled {
			held = &r
			mu.Unlock()
			return
		}
		mu.Unlock()
		send(r)
	})
	now := time.Now()
	// Kafka's unit: percent of one thread, recorded as percent-seconds.
	d := b.quotas.Record(cq.Request, rc.quotaUser(), rc.header.ClientID, float64(now.Sub(start))/float64(time.Second)*100, now)
	if d > 0 {
		rc.conn.Mute(d)
	}
	mu.Lock()
	handled, throttle = true, d
	r := held
	mu.Unlock()
	if r != nil {
		send(*r)
	}
}

// quotaCollector reports each measured client rate at scrape time: the rate,
// its bound, and the throttle time given so far, labelled by quota and by the
// user and client id the rate is kept for (empty when the quota that applies
// is shared by all of a user's clients, or by all users of a client id).
type quotaCollector struct{ b *Broker }

var (
	descQuotaRate     = prometheus.NewDesc("ktool_quota_rate", "Measured rate of a client quota (bytes/s, or percent of a request thread), over quota.window.num windows.", []string{"quota", "user", "client_id"}, nil)
	descQuotaBound    = prometheus.NewDesc("ktool_quota_bound", "The quota the rate is measured against.", []string{"quota", "user", "client_id"}, nil)
	descQuotaThrottle = prometheus.NewDesc("ktool_quota_throttle_seconds_total", "Throttle time given to the clients of this rate (KIP-219 mutes).", []string{"quota", "user", "client_id"}, nil)
)

func (c quotaCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descQuotaRate
	ch <- descQuotaBound
	ch <- descQuotaThrottle
}

func (c quotaCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.b.quotas.Stats(time.Now()) {
		labels := []string{s.Kind.String(), s.User, s.Client}
		ch <- prometheus.MustNewConstMetric(descQuotaRate, prometheus.GaugeValue, s.Rate, labels...)
		ch <- prometheus.MustNewConstMetric(descQuotaBound, prometheus.GaugeValue, s.Bound, labels...)
		ch <- prometheus.MustNewConstMetric(descQuotaThrottle, prometheus.CounterValue, s.Throttle.Seconds(), labels...)
	}
}

// raiseThrottle puts at least ms into an answer's throttle_time_ms.
func raiseThrottle(m kmsg.Response, ms int32) {
	if t, ok := m.(interface {
		kmsg.ThrottleResponse
		kmsg.SetThrottleResponse
	}); ok {
		cur, _ := t.Throttle()
		t.SetThrottle(max(cur, ms))
	}
}
