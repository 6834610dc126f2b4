package broker

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ktoolhq/ktool/broker/auth"
	"github.com/ktoolhq/ktool/broker/authz"
	"github.com/ktoolhq/ktool/broker/config"
	"github.com/ktoolhq/ktool/broker/coord"
	"github.com/ktoolhq/ktool/broker/coord/embedded"
	"github.com/ktoolhq/ktool/broker/coord/zkstore"
	"github.com/ktoolhq/ktool/broker/group"
	klog "github.com/ktoolhq/ktool/broker/log"
	"github.com/ktoolhq/ktool/broker/protocol"
	cq "github.com/ktoolhq/ktool/broker/quota"
	"github.com/ktoolhq/ktool/broker/replica"
	"github.com/ktoolhq/ktool/broker/txn"
	"github.com/ktoolhq/ktool/internal/zkdata"
	"github.com/ktoolhq/ktool/plugins/codec"
)

// Options configure a Broker.
type Options struct {
	Config *config.Broker
	// Connector makes coordination sessions. Nil means ZooKeeper when
	// zookeeper.connect is set, else the embedded store kept in the first log dir.
	Connector coord.Connector
	Logger    *slog.Logger
	// Codecs resolves compression codecs (the plugin catalog). Nil serves
	// the built-in codecs in process, as the catalog does without plugins.
	Codecs CodecSource
}

// Broker is one Kafka-compatible broker.
type Broker struct {
	cfg     *config.Broker
	opts    Options
	logger  *slog.Logger
	metrics *metrics

	id        int32
	clusterID string
	throttles replThrottles // repl_throttle.go
	quotas    *cq.Manager   // client_quotas.go

	listenerCfg []auth.Listener
	interBroker auth.Listener
	listeners   []*listenerState
	dialer      *auth.Dialer
	authz       *authz.Authorizer // nil: no authorizer
	sessions    sessions

	connector   coord.Connector
	embedded    *embedded.Server
	storeMu     sync.RWMutex
	store       coord.Store
	epoch       int64 // broker epoch: czxid of /brokers/ids/<id> (KIP-380)
	storeClosed bool

	locks    []*os.File
	srv      *protocol.Server
	replicas *replica.Manager
	meta     *metaCache
	ctrl     *controllerRunner
	codecs   CodecSource
	tcfg     topicConfigs
	groups   *group.Coordinator
	txns     *txn.Coordinator
	// txnMarkers sends the transaction coordinator's WriteTxnMarkers.
	txnMarkers *markerWriter
	pids       producerIDs

	fetchMaxBytes int32
	fetchSessions *fetchSessionCache
	isrNotes      *isrNotifier
	ctrlSeen      verifiedController
	ctrlToken     tokenCache
	// checkReads counts the store reads the checks of controller requests
	// made for single partitions (controller_check.go).
	checkReads   atomic.Int64
	incarnations incarnations

	ready     chan struct{}
	readyOnce sync.Once
	failed    chan error // logdir_failure.go: closed after the broker stopped itself
	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	shutOnce  sync.Once
}

// New validates the options; Start brings the broker up.
func New(opts Options) (*Broker, error) {
	if opts.Config == nil {
		return nil, errors.New("broker: no configuration")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	b := &Broker{
		cfg: opts.Config, opts: opts, logger: opts.Logger,
		id:            opts.Config.Settings().BrokerID,
		meta:          newMetaCache(),
		ready:         make(chan struct{}),
		failed:        make(chan error, 1),
		codecs:        opts.Codecs,
		fetchMaxBytes: 55 << 20,
	}
	b.quotas = newQuotaManager(b.cfg.Settings())
	b.isrNotes = newIsrNotifier(b)
	b.fetchSessions = newFetchSessionCache(b.cfg.Settings().FetchSessionCacheSlots, b.cfg.Settings().FetchSessionEviction)
	b.metrics = newMetrics(b)
	if b.codecs == nil {
		b.codecs = codec.NewSet(codec.Builtins()...)
	}
	if err := parseListeners(b); err != nil {
		return nil, err
	}
	return b, nil
}

// ID is the broker id (known after Start when broker.id=-1).
func (b *Broker) ID() int32 { return b.id }

// Addr is the address the broker's first listener is bound to (after Start).
func (b *Broker) Addr() string {
	if len(b.listeners) == 0 {
		return ""
	}
	return b.listeners[0].ln.Addr().String()
}

// AdvertisedAddr is host:port of the first listener as clients are told.
func (b *Broker) AdvertisedAddr() string {
	if len(b.listeners) == 0 {
		return ""
	}
	l := b.listeners[0]
	return net.JoinHostPort(l.AdvertisedHost, strconv.Itoa(l.AdvertisedPort))
}

// ClusterID is the cluster's id.
func (b *Broker) ClusterID() string { return b.clusterID }

// Ready is closed once the broker is registered and has its first metadata from the controller.
func (b *Broker) Ready() <-chan struct{} { return b.ready }

// Start opens the logs, connects to the coordination store, listens, registers
// and joins controller election. It returns once the broker accepts connections;
// Ready says when it has joined the cluster.
func (b *Broker) Start(ctx context.Context) (err error) {
	b.ctx, b.cancel = context.WithCancel(context.Background())
	defer func() {
		if err != nil {
			b.cancel()
			b.closeResources()
		}
	}()
	dirs := b.cfg.Settings().LogDirs()
	for _, d := range dirs {
		f, err := lockDir(d)
		if err != nil {
			return err
		}
		b.locks = append(b.locks, f)
	}
	if err := b.setupConnector(dirs[0]); err != nil {
		return err
	}
	store, err := b.connect(ctx)
	if err != nil {
		return err
	}
	b.setStore(store)
	if err := b.resolveIdentity(ctx, dirs); err != nil {
		return err
	}
	b.logger = b.logger.With("broker", b.id)
	if err := b.setupAuthorizer(ctx); err != nil {
		return err
	}

	b.replicas = replica.NewManager(replica.Config{
		BrokerID:      b.id,
		LogDirs:       dirs,
		TopicSettings: b.topicSettings,
		Isr:           isrWriter{b},
		OnIsrChange: func(shrink bool) {
			if shrink {
				b.metrics.IsrShrinks.Inc()
			} else {
				b.metrics.IsrExpands.Inc()
			}
		},
		Logger:        b.logger,
		OnDirFailure:  b.onLogDirFailure,
		ReplicaLagMax: b.cfg.Settings().ReplicaLagTimeMax,
		FileReserve:   b.cfg.Settings().LogFdReserve,
		FileCacheSize: b.cfg.Settings().LogFdCacheSize,
		LoadThreads:   b.cfg.Settings().NumRecoveryThreadsPerDataDir * len(dirs),
		MoveRate:      func() int64 { return int64(b.cfg.Throttle().AlterLogDirsRate) },
		Fetch: replica.FetcherConfig{
			MaxWait:          b.cfg.Settings().ReplicaFetchWaitMax,
			MaxBytes:         int32(b.cfg.Settings().ReplicaFetchResponseMaxBytes),
			PartitionMaxByte: int32(b.cfg.Settings().ReplicaFetchMaxBytes),
			Backoff:          b.cfg.Settings().ReplicaFetchBackoff,
			Dial:             func(ctx context.Context, addr string) (net.Conn, error) { return b.dialer.Dial(ctx, addr) },
			Throttle:         followerThrottle{b},
		},
	})
	b.loadTopicConfigs(ctx)
	if err := b.replicas.Load(); err != nil {
		return err
	}

	if err := b.openListeners(); err != nil {
		return err
	}
	limits, idle, err := connLimits(ctx, b.cfg.Settings())
	if err != nil {
		return err
	}
	b.srv = &protocol.Server{
		Handler:        b,
		MaxRequestSize: int32(b.cfg.Settings().SocketRequestMaxBytes),
		APIKeys:        apiKeys,
		Logger:         b.logger,
		Observe:        b.metrics.observe,
		IdleTimeout:    idle,
		Limits:         limits,
		ReuseFrame:     reuseFrame,
	}
	for _, l := range b.listeners {
		b.wg.Add(1)
		go func(l *listenerState) {
			defer b.wg.Done()
			_ = b.srv.ServeWith(l.ln, protocol.ListenerConfig{RequireAuth: l.sasl != nil})
		}(l)
	}
	b.replicas.Start(b.cfg.Settings().LogRetentionCheckInterval, b.cfg.Settings().LogCleanerBackoff)

	b.groups = newGroupCoordinator(ctx, b)
	b.txns = newTxnCoordinator(ctx, b)
	if err := b.register(ctx); err != nil {
		return err
	}
	b.ctrl = newControllerRunner(b)
	b.wg.Add(3)
	go func() {
		defer b.wg.Done()
		b.isrNotes.run(b.ctx)
	}()
	go b.sessionLoop()
	go b.waitReady()
	if err := b.metrics.serve(); err != nil {
		return err
	}
	return nil
}

func (b *Broker) setupConnector(firstDir string) error {
	if b.opts.Connector != nil {
		b.connector = b.opts.Connector
		return nil
	}
	if zk := b.cfg.Settings().ZooKeeperConnect; zk != "" {
		c, err := zkstore.NewConnector(zk, b.cfg.Settings().ZooKeeperSessionTimeout, b.logger.With("component", "zookeeper"))
		if err != nil {
			return err
		}
		b.connector = c
		return nil
	}
	srv, err := embedded.Open(firstDir + "/__ktool_store")
	if err != nil {
		return fmt.Errorf("opening the embedded coordination store: %w", err)
	}
	b.embedded = srv
	b.connector = srv
	return nil
}

// connect makes a session, retrying with a clear message while the store is down.
func (b *Broker) connect(ctx context.Context) (coord.Store, error) {
	backoff := 500 * time.Millisecond
	for attempt := 1; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, b.connectTimeout())
		s, err := b.connector.Connect(cctx)
		cancel()
		if err == nil {
			return s, nil
		}
		giveUp := func() error {
			return fmt.Errorf("connecting to the coordination store (zookeeper.connect=%q): %w (last error: %v)",
				b.cfg.Settings().ZooKeeperConnect, ctx.Err(), err)
		}
		if ctx.Err() != nil {
			return nil, giveUp()
		}
		b.logger.Error("cannot reach the coordination store; retrying", "zookeeper.connect", b.cfg.Settings().ZooKeeperConnect,
			"attempt", attempt, "retry_in", backoff, "err", err)
		select {
		case <-ctx.Done():
			return nil, giveUp()
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 10*time.Second)
	}
}

func (b *Broker) connectTimeout() time.Duration {
	if v := b.cfg.Settings().ZooKeeperConnectionTimeout; v > 0 {
		return v
	}
	return b.cfg.Settings().ZooKeeperSessionTimeout
}

func (b *Broker) setStore(s coord.Store) {
	b.storeMu.Lock()
	b.store, b.storeClosed = s, false
	b.storeMu.Unlock()
}

// Store is the current coordination session.
func (b *Broker) Store() coord.Store {
	b.storeMu.RLock()
	defer b.storeMu.RUnlock()
	return b.store
}

func (b *Broker) brokerEpoch() int64 {
	b.storeMu.RLock()
	defer b.storeMu.RUnlock()
	return b.epoch
}

// resolveIdentity settles the cluster id and broker id, checking meta.properties.
func (b *Broker) resolveIdentity(ctx context.Context, dirs []string) error {
	s := b.Store()
	cid, err := b.clusterIDFromStore(ctx, s)
	if err != nil {
		return err
	}
	b.clusterID = cid
	var saved *metaProperties
	for _, d := range dirs {
		m, err := readMetaProperties(d)
		if err != nil {
			return err
		}
		if m == nil {
			continue
		}
		if m.ClusterID != "" && m.ClusterID != cid {
			return fmt.Errorf("log dir %s belongs to cluster %s but the coordination store holds cluster %s; "+
				"point the broker at the right ZooKeeper (and chroot) or use an empty log dir", d, m.ClusterID, cid)
		}
		if saved != nil && saved.BrokerID != m.BrokerID {
			return fmt.Errorf("log dirs disagree on broker.id (%d vs %d)", saved.BrokerID, m.BrokerID)
		}
		saved = m
	}
	switch {
	case b.id >= 0 && saved != nil && saved.BrokerID != b.id:
		return fmt.Errorf("broker.id=%d but the log dirs belong to broker %d (meta.properties)", b.id, saved.BrokerID)
	case b.id < 0 && saved != nil:
		b.id = saved.BrokerID
	case b.id < 0:
		id, err := b.generateBrokerID(ctx, s)
		if err != nil {
			return err
		}
		b.id = id
	}
	for _, d := range dirs {
		if err := writeMetaProperties(d, metaProperties{BrokerID: b.id, ClusterID: cid}); err != nil {
			return fmt.Errorf("writing meta.properties: %w", err)
		}
	}
	return nil
}

func (b *Broker) clusterIDFromStore(ctx context.Context, s coord.Store) (string, error) {
	data, _, err := s.Get(ctx, zkdata.ClusterIDPath)
	if err == nil {
		return zkdata.DecodeClusterID(data)
	}
	if !errors.Is(err, coord.ErrNoNode) {
		return "", fmt.Errorf("reading the cluster id: %w", err)
	}
	id := b.cfg.Settings().ClusterID
	if id == "" {
		var raw [16]byte
		_, _ = rand.Read(raw[:])
		id = base64.RawURLEncoding.EncodeToString(raw[:])
	}
	if _, err := s.CreateAll(ctx, zkdata.ClusterIDPath, zkdata.EncodeClusterID(id), coord.Persistent); err != nil {
		if errors.Is(err, coord.ErrNodeExists) {
			return b.clusterIDFromStore(ctx, s)
		}
		return "", fmt.Errorf("creating the cluster id: %w", err)
	}
	return id, nil
}

// generateBrokerID takes a fresh id above reserved.broker.max.id from the version of
// /brokers/seqid, as Kafka does.
func (b *Broker) generateBrokerID(ctx context.Context, s coord.Store) (int32, error) {
	if _, err := s.CreateAll(ctx, "/brokers/seqid", nil, coord.Persistent); err != nil && !errors.Is(err, coord.ErrNodeExists) {
		return 0, err
	}
	st, err := s.Set(ctx, "/brokers/seqid", nil, -1)
	if err != nil {
		return 0, fmt.Errorf("generating a broker id: %w", err)
	}
	return b.cfg.Settings().ReservedBrokerMaxID + st.Version, nil
}

// register creates the ephemeral /brokers/ids/<id>. After a crash the previous
// registration lingers until its session expires; we wait for that, saying so.
func (b *Broker) register(ctx context.Context) error {
	info := zkdata.BrokerInfo{
		ID:        b.id,
		Endpoints: b.endpoints(),
		Rack:      b.cfg.Settings().Rack,
		Timestamp: time.Now(),
	}
	data := zkdata.EncodeBrokerInfo(info)
	path := zkdata.BrokerPath(b.id)
	warned := false
	for {
		s := b.Store()
		if _, err := s.CreateAll(ctx, zkdata.BrokerIDsPath, nil, coord.Persistent); err != nil && !errors.Is(err, coord.ErrNodeExists) {
			return err
		}
		_, err := s.Create(ctx, path, data, coord.Ephemeral)
		if err == nil {
			_, st, err := s.Get(ctx, path)
			if err != nil {
				return err
			}
			b.storeMu.Lock()
			b.epoch = st.Czxid
			b.storeMu.Unlock()
			b.logger.Info("registered", "path", path, "broker_epoch", st.Czxid, "endpoint", b.AdvertisedAddr())
			return nil
		}
		if !errors.Is(err, coord.ErrNodeExists) {
			return fmt.Errorf("registering %s: %w", path, err)
		}
		_, st, gerr := s.Get(ctx, path)
		if gerr == nil && st.EphemeralOwner == s.SessionID() {
			b.storeMu.Lock()
			b.epoch = st.Czxid
			b.storeMu.Unlock()
			return nil
		}
		if !warned {
			b.logger.Warn("another session holds this broker id; waiting for it to expire (a previous run that was killed?)",
				"path", path)
			warned = true
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("broker id %d is registered by another live broker: %w", b.id, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// sessionLoop re-creates the session after expiry: re-register, rejoin election.
func (b *Broker) sessionLoop() {
	defer b.wg.Done()
	b.ctrl.start(b.Store())
	b.startWatches(b.Store())
	for {
		s := b.Store()
		select {
		case <-b.ctx.Done():
			return
		case <-s.Expired():
		}
		b.logger.Warn("coordination session expired; reconnecting")
		b.ctrl.stop()
		_ = s.Close()
		for {
			ns, err := b.connect(b.ctx)
			if err != nil {
				return // shutting down
			}
			b.setStore(ns)
			if err = b.register(b.ctx); err == nil {
				break
			}
			b.logger.Error("re-registering after session expiry failed; retrying", "err", err)
			_ = ns.Close()
			select {
			case <-b.ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
		ns := b.Store()
		b.ctrl.start(ns)
		b.startWatches(ns)
	}
}

// waitReady closes Ready once the controller has told us about ourselves.
func (b *Broker) waitReady() {
	defer b.wg.Done()
	for {
		ch := b.meta.Changed()
		if _, ok := b.meta.broker(b.id); ok {
			b.readyOnce.Do(func() { close(b.ready) })
			b.logger.Info("broker ready", "listening", b.Addr(), "advertised", b.AdvertisedAddr(), "cluster_id", b.clusterID)
			return
		}
		select {
		case <-ch:
		case <-b.ctx.Done():
			return
		}
	}
}

// topicSettings resolves the log and replication settings of a topic.
func (b *Broker) topicSettings(topic string) replica.Settings {
	tc := b.cfg.Topic(b.topicOverrides(topic))
	lc := klog.DefaultConfig()
	lc.SegmentBytes = int64(tc.SegmentBytes)
	lc.SegmentMs = config.Millis(tc.SegmentRoll)
	lc.RetentionMs = config.Millis(tc.Retention)
	lc.RetentionBytes = int64(tc.RetentionBytes)
	lc.IndexIntervalBytes = int(tc.IndexIntervalBytes)
	lc.FlushIntervalMessages = tc.FlushMessages
	lc.FlushIntervalMs = config.Millis(tc.FlushInterval)
	lc.CheckpointIntervalMs = config.Millis(b.cfg.Settings().HighWatermarkCheckpointEvery)
	lc.MaxMessageBytes = int(tc.MaxMessageBytes)
	lc.DecompressRatio = b.cfg.Settings().MessageDecompressionMaxRatio
	lc.TimestampType = tc.MessageTimestampType
	lc.MessageTimestampDifferenceMaxMs = config.Millis(tc.MessageTimestampDiffMax)
	lc.CleanupPolicy = tc.CleanupPolicy
	lc.DeleteRetentionMs = config.Millis(tc.DeleteRetention)
	lc.MinCleanableDirtyRatio = tc.MinCleanableDirtyRatio
	lc.MinCompactionLagMs = config.Millis(tc.MinCompactionLag)
	lc.MaxCompactionLagMs = config.Millis(tc.MaxCompactionLag)
	lc.CleanerDedupeBufferSize = int64(b.cfg.Settings().LogCleanerDedupeBuffer)
	lc.Codecs = b.codecs
	if lc.FlushIntervalMs <= 0 {
		lc.FlushIntervalMs = math.MaxInt64
	}
	return replica.Settings{Log: lc, MinISR: tc.MinInsyncReplicas}
}

// Shutdown leaves the cluster cleanly: controlled shutdown (moving leaderships
// away), stop accepting, finish in-flight requests, flush and close every log,
// end the session. Bounded by ctx.
func (b *Broker) Shutdown(ctx context.Context) error { return b.stop(ctx, true) }

// Halt stops the broker without controlled shutdown, as if it had crashed: the
// controller learns of it only when the session ends. In-process clusters use it
// to replay the seed's "kill the broker" experiments.
func (b *Broker) Halt() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return b.stop(ctx, false)
}

func (b *Broker) stop(ctx context.Context, controlled bool) error {
	var err error
	b.shutOnce.Do(func() {
		if b.cancel == nil {
			return
		}
		if controlled && b.cfg.Settings().ControlledShutdown {
			b.controlledShutdown(ctx)
			if b.ctrl != nil {
				if c := b.ctrl.active(); c != nil {
					// The controller stopping: what its controlled shutdown decided
					// reaches the brokers before it resigns (controller.Drain).
					dctx, cancel := context.WithTimeout(ctx, min(b.cfg.Settings().ControllerSocketTimeout, 10*time.Second))
					if err := c.Drain(dctx); err != nil {
						b.logger.Warn("controller requests not all delivered before resigning", "err", err)
					}
					cancel()
				}
			}
		}
		if !controlled {
			// A crash: the session goes first, so the controller reacts at once, and
			// connections are cut rather than drained.
			b.closeStore()
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			ctx = cctx
		}
		if b.ctrl != nil {
			b.ctrl.stop()
		}
		if b.srv != nil {
			if serr := b.srv.Shutdown(ctx); serr != nil && controlled {
				b.logger.Warn("connections did not drain in time", "err", serr)
			}
		}
		b.cancel()
		b.wg.Wait()
		err = b.closeResources()
		b.logger.Info("broker stopped")
	})
	return err
}

// closeStore ends the coordination session (its ephemerals vanish).
func (b *Broker) closeStore() {
	b.storeMu.Lock()
	s, closed := b.store, b.storeClosed
	b.storeClosed = true
	b.storeMu.Unlock()
	if s != nil && !closed {
		_ = s.Close() // later calls on it fail with ErrClosed
	}
}

func (b *Broker) closeResources() error {
	var errs []error
	if b.groups != nil {
		b.groups.Close()
	}
	if b.txns != nil {
		b.txns.Close()
		b.txnMarkers.close()
	}
	if b.replicas != nil {
		errs = append(errs, b.replicas.Shutdown())
	}
	b.metrics.close()
	b.closeStore()
	if b.embedded != nil {
		errs = append(errs, b.embedded.Close())
	}
	for _, f := range b.locks {
		f.Close()
	}
	b.locks = nil
	for _, l := range b.listeners {
		l.ln.Close()
	}
	return errors.Join(errs...)
}
