package topic

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// CreateOptions are the inputs of `ktool topic create`.
type CreateOptions struct {
	Factory *cmdutil.Factory

	Topic             string
	Partitions        int32
	ReplicationFactor int16
	Configs           []string
	ReplicaAssignment string
	IfNotExists       bool
	ValidateOnly      bool
}

// NewCreateCommand returns `ktool topic create`.
func NewCreateCommand(f *cmdutil.Factory, runF func(context.Context, *CreateOptions) error) *cobra.Command {
	opts := &CreateOptions{Factory: f}
	cmd := &cobra.Command{
		Use:   "create TOPIC",
		Short: "Create a topic",
		Long: `Create a topic. Without --partitions and --replication-factor the broker's
defaults (num.partitions, default.replication.factor) apply. --replica-assignment
lists each partition's replicas, partitions separated by commas and replicas by
colons; the first replica of each partition is its preferred leader.`,
		Example: `  ktool topic create orders --partitions 6 --replication-factor 3
  ktool topic create orders --config retention.ms=86400000 --config cleanup.policy=compact
  ktool topic create orders --replica-assignment "1:2,2:3,3:1"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Topic = args[0]
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runCreate(cmd.Context(), opts)
		},
	}
	fl := cmd.Flags()
	fl.Int32VarP(&opts.Partitions, "partitions", "p", -1, "number of partitions (-1: the broker's num.partitions)")
	fl.Int16VarP(&opts.ReplicationFactor, "replication-factor", "r", -1, "replicas per partition (-1: the broker's default.replication.factor)")
	fl.StringArrayVarP(&opts.Configs, "config", "c", nil, "topic config key=value (repeatable)")
	fl.StringVar(&opts.ReplicaAssignment, "replica-assignment", "", `replicas per partition, e.g. "1:2,2:3" (partition 0 on 1 and 2, partition 1 on 2 and 3)`)
	fl.BoolVar(&opts.IfNotExists, "if-not-exists", false, "succeed quietly when the topic exists")
	fl.BoolVar(&opts.ValidateOnly, "validate-only", false, "ask the cluster to validate the request without creating the topic")
	return cmd
}

// ParseAssignment parses kafka-topics.sh's --replica-assignment syntax.
func ParseAssignment(s string) ([][]int32, error) {
	var out [][]int32
	for i, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return nil, fmt.Errorf("partition %d has no replicas in %q", i, s)
		}
		var replicas []int32
		for _, r := range strings.Split(part, ":") {
			id, err := strconv.ParseInt(strings.TrimSpace(r), 10, 32)
			if err != nil || id < 0 {
				return nil, fmt.Errorf("replica %q of partition %d is not a broker id", r, i)
			}
			for _, seen := range replicas {
				if seen == int32(id) {
					return nil, fmt.Errorf("partition %d lists broker %d twice", i, id)
				}
			}
			replicas = append(replicas, int32(id))
		}
		if len(out) > 0 && len(replicas) != len(out[0]) {
			return nil, fmt.Errorf("partition %d has %d replicas but partition 0 has %d; all partitions need the same replication factor",
				i, len(replicas), len(out[0]))
		}
		out = append(out, replicas)
	}
	return out, nil
}

// ParseConfigs parses repeated key=value flags.
func ParseConfigs(kvs []string) (map[string]string, error) {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("config %q is not key=value", kv)
		}
		out[k] = v
	}
	return out, nil
}

func (o *CreateOptions) request() (*kmsg.CreateTopicsRequest, error) {
	configs, err := ParseConfigs(o.Configs)
	if err != nil {
		return nil, cmdutil.UsageError(err)
	}
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = int32(o.Factory.ClientTimeout.Milliseconds())
	req.ValidateOnly = o.ValidateOnly
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic = o.Topic
	rt.NumPartitions = o.Partitions
	rt.ReplicationFactor = o.ReplicationFactor
	if o.ReplicaAssignment != "" {
		if o.Partitions != -1 || o.ReplicationFactor != -1 {
			return nil, cmdutil.Usagef("--replica-assignment already says the partitions and replicas; drop --partitions and --replication-factor")
		}
		asg, err := ParseAssignment(o.ReplicaAssignment)
		if err != nil {
			return nil, cmdutil.UsageError(fmt.Errorf("--replica-assignment: %w", err))
		}
		for i, replicas := range asg {
			ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
			ra.Partition = int32(i)
			ra.Replicas = replicas
			rt.ReplicaAssignment = append(rt.ReplicaAssignment, ra)
		}
	}
	for k, v := range configs {
		c := kmsg.NewCreateTopicsRequestTopicConfig()
		c.Name = k
		c.Value = kmsg.StringPtr(v)
		rt.Configs = append(rt.Configs, c)
	}
	req.Topics = append(req.Topics, rt)
	return req, nil
}

func runCreate(ctx context.Context, o *CreateOptions) error {
	req, err := o.request()
	if err != nil {
		return err
	}
	cl, err := o.Factory.Client()
	if err != nil {
		return err
	}
	defer cl.Close()
	rctx, cancel := o.Factory.RequestContext(ctx)
	defer cancel()
	resp, err := req.RequestWith(rctx, cl)
	if err != nil {
		return o.Factory.ClusterError(fmt.Sprintf("creating topic %q", o.Topic), err)
	}
	if len(resp.Topics) != 1 {
		return fmt.Errorf("creating topic %q: the cluster answered for %d topics", o.Topic, len(resp.Topics))
	}
	t := resp.Topics[0]
	if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
		if errors.Is(err, kerr.TopicAlreadyExists) && o.IfNotExists {
			return nil
		}
		msg := ""
		if t.ErrorMessage != nil {
			msg = *t.ErrorMessage
		}
		return fmt.Errorf("creating topic %q: %w", o.Topic, cmdutil.WithMessage(err, msg))
	}
	verb := "Created"
	if o.ValidateOnly {
		verb = "Validated (not created)"
	}
	if t.NumPartitions < 0 { // responses before v5 do not say
		_, err = fmt.Fprintf(o.Factory.IO.Out, "%s topic %s.\n", verb, o.Topic)
		return err
	}
	_, err = fmt.Fprintf(o.Factory.IO.Out, "%s topic %s with %d partitions and replication factor %d.\n",
		verb, o.Topic, t.NumPartitions, t.ReplicationFactor)
	return err
}
