package configs

import (
	"strconv"

	"github.com/spf13/cobra"

	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// The entity types, as kafka-configs.sh's --entity-type names them (singular
// and plural both work on the command line).
const (
	Topic  = "topic"
	Broker = "broker"
	User   = "user"
	Client = "client"
)

// Entity is what a config belongs to. Default selects the cluster-wide
// dynamic default (brokers) or the default quota (users, clients).
type Entity struct {
	Type    string `json:"type" yaml:"type"`
	Name    string `json:"name" yaml:"name"`
	Default bool   `json:"default,omitempty" yaml:"default,omitempty"`
}

func (e Entity) String() string {
	if e.Default {
		return "the " + e.Type + " default"
	}
	return e.Type + " " + e.Name
}

// ParseEntity reads TYPE [NAME] and --default.
func ParseEntity(args []string, def bool) (Entity, error) {
	if len(args) == 0 {
		return Entity{}, cmdutil.Usagef("name an entity type: topic, broker, user or client")
	}
	var e Entity
	switch args[0] {
	case "topic", "topics":
		e.Type = Topic
	case "broker", "brokers":
		e.Type = Broker
	case "user", "users":
		e.Type = User
	case "client", "clients", "client-id":
		e.Type = Client
	default:
		return Entity{}, cmdutil.Usagef("unknown entity type %q (want topic, broker, user or client)", args[0])
	}
	switch {
	case len(args) > 2:
		return Entity{}, cmdutil.Usagef("one entity at a time: %s NAME", e.Type)
	case def && e.Type == Topic:
		return Entity{}, cmdutil.Usagef("topics have no --default; the broker configs are their defaults (config describe broker --default)")
	case def && len(args) == 2:
		return Entity{}, cmdutil.Usagef("pass a name or --default, not both")
	case def:
		e.Default = true
	case len(args) == 1:
		return Entity{}, cmdutil.Usagef("name the %s, or pass --default", e.Type)
	default:
		e.Name = args[1]
		if e.Name == "" {
			return Entity{}, cmdutil.Usagef("empty %s name", e.Type)
		}
	}
	if e.Type == Broker && !e.Default {
		if id, err := strconv.ParseInt(e.Name, 10, 32); err != nil || id < 0 {
			return Entity{}, cmdutil.Usagef("broker %q: want a broker id", e.Name)
		}
	}
	return e, nil
}

// brokerID is the entity's broker id (ParseEntity checked it).
func (e Entity) brokerID() int32 {
	id, _ := strconv.ParseInt(e.Name, 10, 32)
	return int32(id)
}

func completeEntity(f *cmdutil.Factory) cmdutil.CompletionFunc {
	topics, brokers := cmdutil.CompleteTopics(f), cmdutil.CompleteBrokerIDs(f)
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		switch {
		case len(args) == 0:
			return []string{Topic, Broker, User, Client}, cobra.ShellCompDirectiveNoFileComp
		case len(args) == 1 && (args[0] == "topic" || args[0] == "topics"):
			return topics(cmd, nil, toComplete)
		case len(args) == 1 && (args[0] == "broker" || args[0] == "brokers"):
			return brokers(cmd, nil, toComplete)
		}
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
}

func quotaType(t string) string {
	if t == Client {
		return "client-id"
	}
	return t
}
