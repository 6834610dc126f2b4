package controller

import (
	"crypto/rand"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/coord"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

// The controller token: a random secret of this controller epoch, written to
// /ktool/controller_token before the controller sends any request, and carried
// in a tagged field of the flexible LeaderAndIsr, UpdateMetadata and
// StopReplica it sends. A broker that reads the same secret from the store for
// the request's epoch believes the request without checking each partition
// state against the store (one read per partition, thousands per failover);
// a request without it, or with another, gets every check. Anyone who can read
// the store can read the token, but they can write the partition states too;
// a stranger on a Kafka listener cannot, unless the inter-broker traffic it
// carries is plaintext that it can sniff.

// TokenTag is the tag of the controller token in the top-level tagged fields
// of LeaderAndIsr (v4+), UpdateMetadata (v6+) and StopReplica (v2+). Kafka
// numbers its tags from 0 and uses none of these requests' top-level tags;
// 0x4b54 ("KT") stays clear of any it may add.
const TokenTag uint32 = 0x4b54

// writeToken makes this epoch's token and stores it, on condition that the
// controller epoch is still ours: an older controller can never replace a
// newer one's token.
func (c *Controller) writeToken() error {
	token := make([]byte, zkdata.ControllerTokenBytes)
	if _, err := rand.Read(token); err != nil {
		return fmt.Errorf("making the controller token: %w", err)
	}
	if _, err := c.store.CreateAll(c.ctx, zkdata.ControllerTokenPath, nil, coord.Persistent); err != nil && !errors.Is(err, coord.ErrNodeExists) {
		return err
	}
	data := zkdata.EncodeControllerToken(zkdata.ControllerToken{Epoch: c.epoch, Token: token})
	if err := c.store.Multi(c.ctx,
		coord.CheckOp(zkdata.ControllerEpochPath, c.epochVersion),
		coord.SetOp(zkdata.ControllerTokenPath, data, coord.AnyVersion)); err != nil {
		return fmt.Errorf("writing the controller token: %w", err)
	}
	c.token = token
	return nil
}

// withToken puts the token into a controller request's tagged fields.
func (c *Controller) withToken(tags *kmsg.Tags) { tags.Set(TokenTag, c.token) }
