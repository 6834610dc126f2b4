package broker

// IncrementalAlterConfigs, key 44, v0-v1 (KIP-339).
//
// Changes single settings of a topic or broker: SET, DELETE (back to the
// default), APPEND and SUBTRACT for list settings. Stored and propagated like
// AlterConfigs.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/config"
	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/internal/acl"
)

func init() { register(44, 0, 1, handleIncrementalAlterConfigs) }

func handleIncrementalAlterConfigs(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	req := r.(*kmsg.IncrementalAlterConfigsRequest)
	resp := req.ResponseKind().(*kmsg.IncrementalAlterConfigsResponse)
	go func() {
		ctx, cancel := context.WithTimeout(rc.ctx, 30*time.Second)
		defer cancel()
		key := func(r kmsg.IncrementalAlterConfigsRequestResource) string {
			return fmt.Sprint(r.ResourceType, "/", r.ResourceName)
		}
		dups := duplicates(req.Resources, key)
		for _, res := range dedupe(req.Resources, key) {
			out := kmsg.NewIncrementalAlterConfigsResponseResource()
			out.ResourceType, out.ResourceName = res.ResourceType, res.ResourceName
			var err error
			if dups[key(res)] > 1 {
				err = fmt.Errorf("%w: resource %s is listed more than once", kerr.InvalidRequest, res.ResourceName)
			} else if err = configAuthorized(b, rc, res.ResourceType, res.ResourceName, acl.OpAlterConfigs); err == nil {
				err = b.incrementalAlter(ctx, res, req.ValidateOnly)
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

func (b *Broker) incrementalAlter(ctx context.Context, res kmsg.IncrementalAlterConfigsRequestResource, validateOnly bool) error {
	m, err := b.currentOverrides(ctx, res.ResourceType, res.ResourceName)
	if err != nil {
		return err
	}
	for _, c := range res.Configs {
		val := ""
		if c.Value != nil {
			val = *c.Value
		}
		isList := false
		if d, ok := config.LookupTopic(c.Name); ok && res.ResourceType == resourceTopic {
			isList = d.Type == config.List
		} else if d, ok := config.LookupBroker(c.Name); ok {
			isList = d.Type == config.List
		}
		switch c.Op {
		case kmsg.IncrementalAlterConfigOpSet:
			m[c.Name] = val
		case kmsg.IncrementalAlterConfigOpDelete:
			delete(m, c.Name)
		case kmsg.IncrementalAlterConfigOpAppend, kmsg.IncrementalAlterConfigOpSubtract:
			if !isList {
				return fmt.Errorf("%w: %s is not a list; APPEND and SUBTRACT need a list config", kerr.InvalidConfig, c.Name)
			}
			cur := config.SplitList(m[c.Name])
			if _, ok := m[c.Name]; !ok && res.ResourceType == resourceTopic {
				v, _ := b.cfg.TopicValue(c.Name, nil)
				cur = config.SplitList(v.Value)
			}
			for _, item := range config.SplitList(val) {
				if c.Op == kmsg.IncrementalAlterConfigOpAppend && !slices.Contains(cur, item) {
					cur = append(cur, item)
				}
				if c.Op == kmsg.IncrementalAlterConfigOpSubtract {
					cur = slices.DeleteFunc(cur, func(x string) bool { return x == item })
				}
			}
			m[c.Name] = strings.Join(cur, ",")
		default:
			return fmt.Errorf("%w: unknown operation %d for %s", kerr.InvalidRequest, c.Op, c.Name)
		}
	}
	return b.alterConfigs(ctx, res.ResourceType, res.ResourceName, m, validateOnly)
}
