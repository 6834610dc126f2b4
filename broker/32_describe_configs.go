package broker

// DescribeConfigs, key 32, v0-v4.
//
// Topic configs (overrides from /config/topics, then the broker settings they
// fall back to, then defaults) and broker settings (dynamic per broker, dynamic
// cluster default, static, default), with sources, synonyms (v1+), types and
// documentation (v3+), under Kafka's names.
//
// A topic's overrides are read from /config/topics, as Kafka's ZooKeeper mode
// does, not from this broker's cache: the cache follows config change
// notifications a moment after the change, and a describe right after an
// acknowledged alter, on any broker, must show it. The cache answers only
// while the store is unreachable.

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/broker/config"
	"github.com/ktoolhq/ktool/broker/protocol"
	"github.com/ktoolhq/ktool/internal/acl"
)

func init() { register(32, 0, 4, handleDescribeConfigs) }

const (
	resourceTopic  = kmsg.ConfigResourceTypeTopic
	resourceBroker = kmsg.ConfigResourceTypeBroker
)

func handleDescribeConfigs(b *Broker, rc *reqCtx, r kmsg.Request, respond func(protocol.Response)) {
	go describeConfigs(b, rc, r.(*kmsg.DescribeConfigsRequest), respond)
}

func describeConfigs(b *Broker, rc *reqCtx, req *kmsg.DescribeConfigsRequest, respond func(protocol.Response)) {
	ctx, cancel := context.WithTimeout(rc.ctx, 10*time.Second)
	defer cancel()
	resp := req.ResponseKind().(*kmsg.DescribeConfigsResponse)
	// A resource listed many times is described once: each answer lists every
	// config, so repeats would multiply the response.
	resources := dedupe(req.Resources, func(r kmsg.DescribeConfigsRequestResource) string {
		return fmt.Sprint(r.ResourceType, "/", r.ResourceName)
	})
	for _, res := range resources {
		out := kmsg.NewDescribeConfigsResponseResource()
		out.ResourceType, out.ResourceName = res.ResourceType, res.ResourceName
		want := func(name string) bool {
			if len(res.ConfigNames) == 0 {
				return true // null or empty: every config, as Kafka
			}
			return contains(res.ConfigNames, name)
		}
		add := func(d config.Def, v config.Value, syn []config.Value) {
			c := kmsg.NewDescribeConfigsResponseResourceConfig()
			c.Name = d.Name
			// A password is never sent back, as Kafka answers null for it.
			if !v.Null && d.Type != config.Password {
				val := v.Value
				c.Value = &val
			}
			c.Source = kmsg.ConfigSource(v.Source)
			c.IsDefault = v.Source == config.SourceDefault
			c.IsSensitive = d.Type == config.Password
			c.ReadOnly = res.ResourceType == resourceBroker && !d.Dynamic
			c.ConfigType = kmsg.ConfigType(d.Type)
			if req.IncludeDocumentation && d.Doc != "" {
				doc := d.Doc
				c.Documentation = &doc
			}
			if req.IncludeSynonyms {
				for _, s := range syn {
					cs := kmsg.NewDescribeConfigsResponseResourceConfigConfigSynonym()
					cs.Name = s.Name
					sv := s.Value
					cs.Value = &sv
					cs.Source = kmsg.ConfigSource(s.Source)
					c.ConfigSynonyms = append(c.ConfigSynonyms, cs)
				}
			}
			out.Configs = append(out.Configs, c)
		}
		if err := configAuthorized(b, rc, res.ResourceType, res.ResourceName, acl.OpDescribeConfigs); err != nil {
			out.ErrorCode = errorCode(err)
			msg := err.Error()
			out.ErrorMessage = &msg
			resp.Resources = append(resp.Resources, out)
			continue
		}
		switch res.ResourceType {
		case resourceTopic:
			if _, _, _, ok := b.meta.topic(res.ResourceName); !ok {
				out.ErrorCode = kerr.UnknownTopicOrPartition.Code
				break
			}
			overrides, err := b.storedTopicOverrides(ctx, res.ResourceName)
			if err != nil {
				overrides = b.topicOverrides(res.ResourceName)
			}
			for _, d := range config.TopicDefs {
				if !want(d.Name) {
					continue
				}
				v, syn := b.cfg.TopicValue(d.Name, overrides)
				add(d, v, syn)
			}
		case resourceBroker:
			if res.ResourceName != "" && res.ResourceName != strconv.Itoa(int(b.id)) {
				out.ErrorCode = kerr.InvalidRequest.Code
				msg := fmt.Sprintf("broker %d cannot describe the configs of broker %s; send the request to that broker", b.id, res.ResourceName)
				out.ErrorMessage = &msg
				break
			}
			for _, d := range config.BrokerDefs {
				if !want(d.Name) {
					continue
				}
				add(d, b.cfg.Get(d.Name), b.cfg.Synonyms(d.Name))
			}
		default:
			out.ErrorCode = kerr.InvalidRequest.Code
			msg := fmt.Sprintf("resource type %d is not supported", res.ResourceType)
			out.ErrorMessage = &msg
		}
		resp.Resources = append(resp.Resources, out)
	}
	respond(protocol.Response{Msg: resp})
}
