package broker

// A failed log dir (KIP-112). The replica manager takes the dir's partitions
// offline; the broker then tells the controller by leaving a log dir event
// notification, /log_dir_event_notification/log_dir_event_<seq> holding
// {"version":1,"broker":N,"event":1} as a Kafka broker does (on either store).
// The controller asks this broker about each of its partitions (LeaderAndIsr),
// learns from the KAFKA_STORAGE_ERROR answers which replicas are offline,
// elects other leaders from the ISR and lists the replicas in
// offline_replicas. With no dir left, the broker stops: it shuts down as on
// SIGTERM (controlled shutdown first, so leaders move at once) and Failed
// says why.

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/ktoolhq/ktool/broker/coord"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

// ErrAllLogDirsFailed is what Failed carries when every log dir failed.
var ErrAllLogDirsFailed = errors.New("every log dir has failed")

// Failed yields an error, then closes, when the broker stopped itself; it
// never yields while the broker runs.
func (b *Broker) Failed() <-chan error { return b.failed }

func (b *Broker) onLogDirFailure(dir string, online int) {
	if online == 0 {
		b.logger.Error("shutting down: every log dir has failed", "log_dirs", strings.Join(b.cfg.Settings().LogDirs(), ","))
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := b.Shutdown(ctx); err != nil {
				b.logger.Warn("shutdown after every log dir failed", "err", err)
			}
			b.failed <- ErrAllLogDirsFailed
			close(b.failed)
		}()
		return
	}
	go b.notifyLogDirFailure(dir)
}

// notifyLogDirFailure writes the notification, retrying until it is written
// or the broker stops: the controller has no other way to learn of it.
func (b *Broker) notifyLogDirFailure(dir string) {
	for delay := 100 * time.Millisecond; ; delay = min(2*delay, 5*time.Second) {
		ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
		_, err := b.Store().Create(ctx, zkdata.LogDirEventPath(), zkdata.EncodeLogDirEvent(b.id), coord.PersistentSequential)
		cancel()
		if err == nil {
			b.logger.Info("told the controller of the failed log dir", "dir", dir)
			return
		}
		b.logger.Warn("log dir event notification not written; retrying", "dir", dir, "err", err)
		select {
		case <-b.ctx.Done():
			return
		case <-time.After(delay):
		}
	}
}
