package broker

// ControlledShutdown, key 7, v2-v3 (inter-broker, sent to the controller).
//
// A broker about to stop asks the controller to move its leaderships to other ISR
// members and to take it out of ISRs, so clients see only retriable errors. The
// answer lists the partitions it still leads; the broker retries a few times
// (controlled.shutdown.max.retries) before stopping anyway. The request must carry
// the broker's epoch as the store has it (the czxid of its registration), so nobody
// but that broker's current incarnation can shut it down; v1, without an epoch,
// is not served.

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/protocol"
)

func init() { register(7, 2, 3, handleControlledShutdown) }

func handleControlledShutdown(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.ControlledShutdownRequest)
	resp := req.ResponseKind().(*kmsg.ControlledShutdownResponse)
	c := b.ctrl.active()
	if c == nil {
		resp.ErrorCode = kerr.NotController.Code
		respond(protocol.Response{Msg: resp})
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(rc.ctx, 30*time.Second)
		defer cancel()
		if err := b.verifyRegistration(ctx, req.BrokerID, req.BrokerEpoch); err != nil {
			b.logger.Warn("refusing a controlled shutdown request", "broker", req.BrokerID,
				"remote", rc.conn.RemoteAddr().String(), "err", err)
			resp.ErrorCode = errorCode(err)
			respond(protocol.Response{Msg: resp})
			return
		}
		remaining, err := c.ControlledShutdown(ctx, req.BrokerID, req.BrokerEpoch)
		if err != nil {
			resp.ErrorCode = errorCode(err)
		}
		for _, tp := range remaining {
			p := kmsg.NewControlledShutdownResponsePartitionsRemaining()
			p.Topic, p.Partition = tp.Topic, tp.Partition
			resp.PartitionsRemaining = append(resp.PartitionsRemaining, p)
		}
		respond(protocol.Response{Msg: resp})
	}()
}

// controlledShutdown asks the controller to move this broker's leaderships away.
func (b *Broker) controlledShutdown(ctx context.Context) {
	if len(b.meta.liveBrokers()) <= 1 {
		return // nobody to hand leadership to
	}
	retries := b.cfg.Settings().ControlledShutdownTries
	backoff := b.cfg.Settings().ControlledShutdownBackoff
	for attempt := 0; attempt <= retries && ctx.Err() == nil; attempt++ {
		ctrlID := b.meta.controllerID()
		if addr, ok := b.interBrokerAddr(ctrlID); ok {
			cl := b.interBrokerClient(addr, "ktool-controlled-shutdown")
			req := kmsg.NewPtrControlledShutdownRequest()
			req.SetVersion(3)
			req.BrokerID = b.id
			req.BrokerEpoch = b.brokerEpoch()
			rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			raw, err := cl.Request(rctx, req)
			cancel()
			cl.Close()
			if err == nil {
				resp := raw.(*kmsg.ControlledShutdownResponse)
				if resp.ErrorCode == 0 && len(resp.PartitionsRemaining) == 0 {
					b.logger.Info("controlled shutdown complete: leaderships moved")
					return
				}
				b.logger.Warn("controlled shutdown incomplete", "error", kerr.ErrorForCode(resp.ErrorCode),
					"partitions_still_led", len(resp.PartitionsRemaining))
			} else {
				b.logger.Warn("controlled shutdown request failed", "controller", ctrlID, "err", err)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
	}
}
