package broker

// InitProducerId, key 22, v0-v4.
//
// Hands idempotent producers a producer id and epoch. Ids come in blocks of 1000
// reserved in /latest_producer_id_block with a conditional write, as Kafka does,
// so they are unique across brokers and restarts. A producer that re-initialises
// with its id and epoch (v3+, KIP-360) gets the epoch bumped. With a transactional
// id the transaction coordinator answers (broker/txn): TransactionalId WRITE is
// required, the epoch is bumped and an older producer fenced, a pending transaction
// finished first; PRODUCER_FENCED is INVALID_PRODUCER_EPOCH below v4 (KIP-588).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/coord"
	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/internal/acl"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

func init() { register(22, 0, 4, handleInitProducerID) }

func handleInitProducerID(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.InitProducerIDRequest)
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	if req.TransactionalID != nil {
		initTransactional(b, rc, req, resp, respond)
		return
	}
	// Authorization (KIP-679): IDEMPOTENT_WRITE on the cluster, or WRITE on
	// some topic.
	if !rc.allowedCluster(b, acl.OpIdempotentWrite) && !rc.allowedAny(b, acl.OpWrite, acl.ResourceTopic) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		respond(protocol.Response{Msg: resp})
		return
	}
	if req.GetVersion() >= 3 && req.ProducerID >= 0 && req.ProducerEpoch >= 0 {
		// Epoch bump for a producer that lost track of its sequences (KIP-360).
		if req.ProducerEpoch < 32767 {
			resp.ProducerID, resp.ProducerEpoch = req.ProducerID, req.ProducerEpoch+1
			respond(protocol.Response{Msg: resp})
			return
		}
	}
	go func() {
		id, err := b.pids.next(rc.ctx, b)
		if err != nil {
			resp.ErrorCode = errorCode(err)
			if resp.ErrorCode == kerr.UnknownServerError.Code {
				resp.ErrorCode = kerr.CoordinatorNotAvailable.Code
			}
			b.logger.Warn("producer id allocation failed", "err", err)
		} else {
			resp.ProducerID, resp.ProducerEpoch = id, 0
		}
		respond(protocol.Response{Msg: resp})
	}()
}

// producerIDs hands out ids from a block reserved in the store.
type producerIDs struct {
	mu        sync.Mutex
	nextID    int64
	blockLast int64
}

const producerIDBlockSize = 1000

type producerIDBlock struct {
	Version    int    `json:"version"`
	Broker     int32  `json:"broker"`
	BlockStart string `json:"block_start"`
	BlockEnd   string `json:"block_end"`
}

func (p *producerIDs) next(ctx context.Context, b *Broker) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.blockLast == 0 || p.nextID > p.blockLast {
		start, err := reserveProducerIDBlock(ctx, b)
		if err != nil {
			return -1, err
		}
		p.nextID, p.blockLast = start, start+producerIDBlockSize-1
	}
	id := p.nextID
	p.nextID++
	return id, nil
}

func reserveProducerIDBlock(ctx context.Context, b *Broker) (int64, error) {
	s := b.Store()
	for attempt := 0; attempt < 10; attempt++ {
		data, st, err := s.Get(ctx, zkdata.LatestProducerIDBlockPath)
		start := int64(0)
		version := int32(-1)
		switch {
		case err == nil && len(data) > 0:
			var blk producerIDBlock
			if err := json.Unmarshal(data, &blk); err != nil {
				return -1, fmt.Errorf("unreadable %s: %w", zkdata.LatestProducerIDBlockPath, err)
			}
			end, err := strconv.ParseInt(blk.BlockEnd, 10, 64)
			if err != nil {
				return -1, fmt.Errorf("unreadable %s: %w", zkdata.LatestProducerIDBlockPath, err)
			}
			start, version = end+1, st.Version
		case err == nil:
			version = st.Version
		case errors.Is(err, coord.ErrNoNode):
		default:
			return -1, err
		}
		blk := producerIDBlock{Version: 1, Broker: b.id, BlockStart: strconv.FormatInt(start, 10),
			BlockEnd: strconv.FormatInt(start+producerIDBlockSize-1, 10)}
		enc, _ := json.Marshal(blk)
		if version < 0 {
			_, err = s.CreateAll(ctx, zkdata.LatestProducerIDBlockPath, enc, coord.Persistent)
		} else {
			_, err = s.Set(ctx, zkdata.LatestProducerIDBlockPath, enc, version)
		}
		if err == nil {
			return start, nil
		}
		if !errors.Is(err, coord.ErrBadVersion) && !errors.Is(err, coord.ErrNodeExists) {
			return -1, err
		}
	}
	return -1, errors.New("could not reserve a producer id block: too much contention")
}
