package broker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
)

// metrics are the broker's Prometheus metrics, on their own registry (no globals),
// served with /healthz and /readyz on metrics.listener.
type metrics struct {
	b    *Broker
	reg  *prometheus.Registry
	srv  *http.Server
	addr string

	requests   *prometheus.CounterVec
	latency    *prometheus.HistogramVec
	queueTime  *prometheus.HistogramVec
	bytesInC   *prometheus.CounterVec
	bytesOutC  *prometheus.CounterVec
	messagesIn *prometheus.CounterVec
	produceErr *prometheus.CounterVec
	IsrShrinks prometheus.Counter
	IsrExpands prometheus.Counter
	// fetchParts counts the partitions fetch requests and answers carry, and
	// fetches the fetches, by reader and session kind (KIP-227).
	fetchParts *prometheus.CounterVec
	fetches    *prometheus.CounterVec
}

func newMetrics(b *Broker) *metrics {
	m := &metrics{b: b, reg: prometheus.NewRegistry()}
	m.requests = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "ktool", Subsystem: "broker",
		Name: "requests_total", Help: "Requests received, by API."}, []string{"api"})
	m.latency = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "ktool", Subsystem: "broker",
		Name: "request_duration_seconds", Help: "Time from a request's arrival to its response being written, by API.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10)}, []string{"api"})
	m.queueTime = prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "ktool", Subsystem: "broker",
		Name: "request_queue_seconds", Help: "Time from a request's arrival until its handler started (waiting behind the connection's earlier requests), by API.",
		Buckets: prometheus.ExponentialBuckets(0.00001, 4, 10)}, []string{"api"})
	m.bytesInC = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "ktool", Subsystem: "broker",
		Name: "bytes_in_total", Help: "Record bytes appended by producers, by topic."}, []string{"topic"})
	m.bytesOutC = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "ktool", Subsystem: "broker",
		Name: "bytes_out_total", Help: "Record bytes sent to consumers (and followers, label replica), by topic."}, []string{"topic", "reader"})
	m.messagesIn = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "ktool", Subsystem: "broker",
		Name: "messages_in_total", Help: "Records appended by producers, by topic."}, []string{"topic"})
	m.produceErr = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "ktool", Subsystem: "broker",
		Name: "produce_errors_total", Help: "Partitions of produce requests answered with an error, by topic."}, []string{"topic"})
	m.IsrShrinks = prometheus.NewCounter(prometheus.CounterOpts{Namespace: "ktool", Subsystem: "replica",
		Name: "isr_shrinks_total", Help: "ISR shrinks written by this broker as leader."})
	m.IsrExpands = prometheus.NewCounter(prometheus.CounterOpts{Namespace: "ktool", Subsystem: "replica",
		Name: "isr_expands_total", Help: "ISR expansions written by this broker as leader."})
	m.fetchParts = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "ktool", Subsystem: "broker",
		Name: "fetch_partitions_total", Help: "Partitions listed in fetch requests (part=request) and answers (part=response), by reader (consumer, replica) and kind (full, incremental: in a fetch session)."},
		[]string{"reader", "kind", "part"})
	m.fetches = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "ktool", Subsystem: "broker",
		Name: "fetches_total", Help: "Fetch requests answered, by reader (consumer, replica) and kind (full, incremental)."},
		[]string{"reader", "kind"})
	m.reg.MustRegister(m.requests, m.latency, m.queueTime, m.bytesInC, m.bytesOutC, m.messagesIn, m.produceErr,
		m.IsrShrinks, m.IsrExpands, m.fetchParts, m.fetches, stateCollector{b}, quotaCollector{b}, fetchSessionCollector{b},
		prometheus.NewGoCollector())
	return m
}

func (m *metrics) request(key int16) { m.requests.WithLabelValues(kmsg.NameForKey(key)).Inc() }

func (m *metrics) observe(h protocol.Header, queued, total time.Duration, _ int64) {
	api := kmsg.NameForKey(h.Key)
	m.latency.WithLabelValues(api).Observe(total.Seconds())
	m.queueTime.WithLabelValues(api).Observe(queued.Seconds())
}

func (m *metrics) bytesIn(topic string, n, records int) {
	m.bytesInC.WithLabelValues(topic).Add(float64(n))
	m.messagesIn.WithLabelValues(topic).Add(float64(records))
}

func (m *metrics) produceError(topic string) { m.produceErr.WithLabelValues(topic).Inc() }

// fetchSessionUse counts one fetch: the partitions its request listed and
// those its answer lists.
func (m *metrics) fetchSessionUse(follower, incremental bool, requested, answered int) {
	reader, kind := "consumer", "full"
	if follower {
		reader = "replica"
	}
	if incremental {
		kind = "incremental"
	}
	m.fetches.WithLabelValues(reader, kind).Inc()
	m.fetchParts.WithLabelValues(reader, kind, "request").Add(float64(requested))
	m.fetchParts.WithLabelValues(reader, kind, "response").Add(float64(answered))
}

var (
	descFetchSessions     = prometheus.NewDesc("ktool_broker_fetch_sessions", "Fetch sessions (KIP-227) cached.", nil, nil)
	descFetchSessionParts = prometheus.NewDesc("ktool_broker_fetch_session_partitions", "Partitions cached over every fetch session.", nil, nil)
)

type fetchSessionCollector struct{ b *Broker }

func (c fetchSessionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descFetchSessions
	ch <- descFetchSessionParts
}

func (c fetchSessionCollector) Collect(ch chan<- prometheus.Metric) {
	n, parts := c.b.fetchSessions.size()
	ch <- prometheus.MustNewConstMetric(descFetchSessions, prometheus.GaugeValue, float64(n))
	ch <- prometheus.MustNewConstMetric(descFetchSessionParts, prometheus.GaugeValue, float64(parts))
}

func (m *metrics) fetched(parts []fetchPart, follower bool) {
	reader := "consumer"
	if follower {
		reader = "replica"
	}
	for _, p := range parts {
		if p.region.Len > 0 {
			m.bytesOutC.WithLabelValues(p.topic, reader).Add(float64(p.region.Len))
		}
	}
}

// serve starts the HTTP listener when metrics.listener is set.
func (m *metrics) serve() error {
	addr := m.b.cfg.Settings().MetricsListener
	if addr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("metrics.listener %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		select {
		case <-m.b.Ready():
			_, _ = w.Write([]byte("ready\n"))
		default:
			http.Error(w, "not ready: waiting for the controller's metadata", http.StatusServiceUnavailable)
		}
	})
	if m.b.cfg.Settings().MetricsPprof {
		// Off by default: a profile shows the broker's internals to
		// whoever can reach the listener, and a CPU profile costs CPU.
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	m.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	m.addr = ln.Addr().String()
	m.b.logger.Info("serving metrics", "addr", ln.Addr().String())
	go func() {
		if err := m.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.b.logger.Error("metrics listener stopped", "err", err)
		}
	}()
	return nil
}

func (m *metrics) close() {
	if m.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = m.srv.Shutdown(ctx)
	}
}

// stateCollector computes gauges from the broker's state at scrape time.
type stateCollector struct{ b *Broker }

var (
	descPartitions = prometheus.NewDesc("ktool_replica_partitions", "Partitions hosted by this broker.", nil, nil)
	descLeaders    = prometheus.NewDesc("ktool_replica_leaders", "Partitions this broker leads.", nil, nil)
	descUnderRep   = prometheus.NewDesc("ktool_replica_under_replicated_partitions", "Partitions led here whose ISR is smaller than AR.", nil, nil)
	descUnderMin   = prometheus.NewDesc("ktool_replica_under_min_isr_partitions", "Partitions led here whose ISR is below min.insync.replicas.", nil, nil)
	descOffline    = prometheus.NewDesc("ktool_cluster_offline_partitions", "Partitions without a live leader, as this broker's metadata says.", nil, nil)
	descController = prometheus.NewDesc("ktool_controller_active", "1 when this broker is the active controller.", nil, nil)
	descHW         = prometheus.NewDesc("ktool_partition_high_watermark", "High watermark of partitions led here.", []string{"topic", "partition"}, nil)
	descLEO        = prometheus.NewDesc("ktool_partition_log_end_offset", "Log end offset of partitions hosted here.", []string{"topic", "partition"}, nil)
)

func (c stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPartitions, descLeaders, descUnderRep, descUnderMin, descOffline, descController, descHW, descLEO} {
		ch <- d
	}
}

func (c stateCollector) Collect(ch chan<- prometheus.Metric) {
	b := c.b
	if b.replicas == nil {
		return
	}
	var parts, leaders, under, underMin float64
	for _, p := range b.replicas.Partitions() {
		parts++
		pid := strconv.Itoa(int(p.ID))
		ch <- prometheus.MustNewConstMetric(descLEO, prometheus.GaugeValue, float64(p.Log().LogEndOffset()), p.Topic, pid)
		st := p.State()
		if !p.IsLeader() {
			continue
		}
		leaders++
		if len(st.ISR) < len(st.Replicas) {
			under++
		}
		if len(st.ISR) < b.topicSettings(p.Topic).MinISR {
			underMin++
		}
		ch <- prometheus.MustNewConstMetric(descHW, prometheus.GaugeValue, float64(p.HighWatermark()), p.Topic, pid)
	}
	var offline float64
	for _, t := range b.meta.topicNames() {
		_, pm, _, _ := b.meta.topic(t)
		for _, p := range pm {
			if _, ok := b.meta.broker(p.Leader); p.Leader < 0 || !ok {
				offline++
			}
		}
	}
	active := 0.0
	if b.ctrl != nil && b.ctrl.isActive() {
		active = 1
	}
	ch <- prometheus.MustNewConstMetric(descPartitions, prometheus.GaugeValue, parts)
	ch <- prometheus.MustNewConstMetric(descLeaders, prometheus.GaugeValue, leaders)
	ch <- prometheus.MustNewConstMetric(descUnderRep, prometheus.GaugeValue, under)
	ch <- prometheus.MustNewConstMetric(descUnderMin, prometheus.GaugeValue, underMin)
	ch <- prometheus.MustNewConstMetric(descOffline, prometheus.GaugeValue, offline)
	ch <- prometheus.MustNewConstMetric(descController, prometheus.GaugeValue, active)
}

// MetricsAddr is where /metrics is served ("" when metrics.listener is unset).
func (b *Broker) MetricsAddr() string { return b.metrics.addr }
