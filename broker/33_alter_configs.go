package broker

// AlterConfigs, key 33, v0-v2.
//
// Replaces the whole set of overrides of a topic, or of a broker's dynamic
// settings (resource name "" is the cluster-wide default), in /config and notifies
// every broker through /config/changes. validate_only checks without writing.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/config"
	"github.com/ktoolhq/ktool/broker/coord"
	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/internal/acl"
	"github.com/ktoolhq/ktool/internal/zkdata"
)

func init() { register(33, 0, 2, handleAlterConfigs) }

func handleAlterConfigs(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.AlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.AlterConfigsResponse)
	go func() {
		ctx, cancel := context.WithTimeout(rc.ctx, 30*time.Second)
		defer cancel()
		key := func(r kmsg.AlterConfigsRequestResource) string {
			return fmt.Sprint(r.ResourceType, "/", r.ResourceName)
		}
		dups := duplicates(req.Resources, key)
		for _, res := range dedupe(req.Resources, key) {
			out := kmsg.NewAlterConfigsResponseResource()
			out.ResourceType, out.ResourceName = res.ResourceType, res.ResourceName
			m := map[string]string{}
			for _, c := range res.Configs {
				if c.Value != nil {
					m[c.Name] = *c.Value
				}
			}
			var err error
			switch {
			case dups[key(res)] > 1:
				err = fmt.Errorf("%w: resource %s is listed more than once", kerr.InvalidRequest, res.ResourceName)
			default:
				if err = configAuthorized(b, rc, res.ResourceType, res.ResourceName, acl.OpAlterConfigs); err == nil {
					err = b.alterConfigs(ctx, res.ResourceType, res.ResourceName, m, req.ValidateOnly)
				}
			}
			if err != nil {
				out.ErrorCode = errorCode(err)
				msg := err.Error()
				out.ErrorMessage = &msg
			}
			resp.Resources = append(resp.Resources, out)
		}
		respond(protocol.Response{Msg: resp})
	}()
}

// alterConfigs validates and stores a resource's complete override set.
func (b *Broker) alterConfigs(ctx context.Context, typ kmsg.ConfigResourceType, name string, m map[string]string, validateOnly bool) error {
	switch typ {
	case resourceTopic:
		if _, _, _, ok := b.meta.topic(name); !ok {
			return kerr.UnknownTopicOrPartition
		}
		if err := config.ValidateTopicConfigs(m); err != nil {
			return fmt.Errorf("%w: %v", kerr.InvalidConfig, err)
		}
		if validateOnly {
			return nil
		}
		return b.writeConfig(ctx, zkdata.ConfigTypeTopic, name, m)
	case resourceBroker:
		entity := name
		if name == "" {
			entity = zkdata.DefaultConfigEntity
		} else if _, err := strconv.Atoi(name); err != nil {
			return fmt.Errorf("%w: broker resource name %q is not a broker id", kerr.InvalidRequest, name)
		}
		for k, v := range m {
			d, ok := config.LookupBroker(k)
			if !ok {
				return fmt.Errorf("%w: unknown broker config %q", kerr.InvalidConfig, k)
			}
			if !d.Dynamic {
				return fmt.Errorf("%w: %s cannot be changed at run time; set it in server.properties", kerr.InvalidConfig, k)
			}
			if err := d.Check(v); err != nil {
				return fmt.Errorf("%w: %v", kerr.InvalidConfig, err)
			}
		}
		if validateOnly {
			return nil
		}
		return b.writeConfig(ctx, zkdata.ConfigTypeBroker, entity, m)
	}
	return fmt.Errorf("%w: resource type %d is not supported", kerr.InvalidRequest, typ)
}

// currentOverrides returns the stored overrides of a resource (for incremental changes).
func (b *Broker) currentOverrides(ctx context.Context, typ kmsg.ConfigResourceType, name string) (map[string]string, error) {
	kind, entity := zkdata.ConfigTypeTopic, name
	if typ == resourceBroker {
		kind = zkdata.ConfigTypeBroker
		if name == "" {
			entity = zkdata.DefaultConfigEntity
		}
	}
	data, _, err := b.Store().Get(ctx, zkdata.ConfigEntityPath(kind, entity))
	if errors.Is(err, coord.ErrNoNode) {
		return map[string]string{}, nil
	}
	if err != nil {
		// Never write back a partial set: that would erase the other overrides.
		return nil, fmt.Errorf("reading the current configs of %s/%s: %w", kind, entity, err)
	}
	return zkdata.DecodeConfig(data)
}
