package cli

import (
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/ktoolhq/ktool/broker/brokertest"
	"github.com/ktoolhq/ktool/tools/cmdutil/cmdtest"
	"github.com/ktoolhq/ktool/tools/quota"
)

// ktool quota set, list (with filters and -o json/yaml/table) and delete,
// against a ktool cluster on both stores and against franz-go's kfake, which
// serves DescribeClientQuotas and AlterClientQuotas too.
func TestQuotaCommand(t *testing.T) {
	servers := map[string]func(t *testing.T) []string{
		"kfake": func(t *testing.T) []string { return cmdtest.Cluster(t, kfake.NumBrokers(1)).ListenAddrs() },
	}
	for _, store := range brokertest.Stores {
		servers["ktool-"+string(store)] = func(t *testing.T) []string {
			return brokertest.NewCluster(t, 1, brokertest.WithStore(store)).Addrs()
		}
	}
	for name, start := range servers {
		t.Run(name, func(t *testing.T) {
			env := cmdtest.NewEnv(t, start(t))
			q := func(out any, args ...string) error {
				t.Helper()
				return run(t, env, quota.NewCommand(env.F), out, args...)
			}
			must := func(args ...string) {
				t.Helper()
				if err := q(nil, args...); err != nil {
					t.Fatalf("%v: %v", args, err)
				}
			}
			must("set", "--user", "alice", "--producer-byte-rate", "1048576", "--consumer-byte-rate", "2097152")
			must("set", "--user", "alice", "--client-id", "app", "--request-percentage", "25.5")
			must("set", "--default-user", "--producer-byte-rate", "4096")
			must("set", "--client-id", "app", "--producer-byte-rate", "8192")
			must("set", "--default-client-id", "--consumer-byte-rate", "1024")
			if err := q(nil, "set", "--client-id", "dry", "--producer-byte-rate", "1", "--dry-run"); err != nil || !strings.Contains(env.Out.String(), "Would set") {
				t.Fatalf("dry run: %v %s", err, env.Out)
			}

			var all []quota.Quota
			if err := q(&all, "list", "-o", "json"); err != nil {
				t.Fatal(err)
			}
			want := []quota.Quota{
				{Entity: quota.Entity{ClientDefault: true}, Values: map[string]float64{"consumer_byte_rate": 1024}},
				{Entity: quota.Entity{ClientID: "app"}, Values: map[string]float64{"producer_byte_rate": 8192}},
				{Entity: quota.Entity{UserDefault: true}, Values: map[string]float64{"producer_byte_rate": 4096}},
				{Entity: quota.Entity{User: "alice"}, Values: map[string]float64{"producer_byte_rate": 1048576, "consumer_byte_rate": 2097152}},
				{Entity: quota.Entity{User: "alice", ClientID: "app"}, Values: map[string]float64{"request_percentage": 25.5}},
			}
			if !reflect.DeepEqual(all, want) {
				t.Fatalf("list:\n got %+v\nwant %+v", all, want)
			}
			var alice []quota.Quota
			if err := q(&alice, "list", "--user", "alice", "--strict", "-o", "json"); err != nil || len(alice) != 1 || alice[0].User != "alice" || alice[0].ClientID != "" {
				t.Fatalf("strict alice: %v %+v", err, alice)
			}
			if err := q(&alice, "list", "--user", "alice", "-o", "json"); err != nil || len(alice) != 2 {
				t.Fatalf("alice: %v %+v", err, alice)
			}
			if err := q(nil, "list", "--user", "alice", "-o", "yaml"); err != nil || !strings.Contains(env.Out.String(), "user: alice") {
				t.Fatalf("yaml: %v %s", err, env.Out)
			}
			if err := q(nil, "list"); err != nil || !strings.Contains(env.Out.String(), "<default>") || !strings.Contains(env.Out.String(), "request_percentage") {
				t.Fatalf("table: %v\n%s", err, env.Out)
			}

			must("delete", "--user", "alice", "--quota", "consumer_byte_rate")
			must("delete", "--client-id", "app")
			var after []quota.Quota
			if err := q(&after, "list", "-o", "json"); err != nil {
				t.Fatal(err)
			}
			if len(after) != 4 || after[2].User != "alice" || !reflect.DeepEqual(after[2].Values, map[string]float64{"producer_byte_rate": 1048576}) {
				t.Fatalf("after delete: %+v", after)
			}

			for _, bad := range [][]string{
				{"set", "--producer-byte-rate", "1"},
				{"set", "--user", "a"},
				{"set", "--user", "a", "--default-user", "--producer-byte-rate", "1"},
				{"set", "--user", "a", "--producer-byte-rate", "0"},
				{"delete", "--user", "a", "--quota", "bogus"},
			} {
				if err := q(nil, bad...); err == nil {
					t.Errorf("%v accepted", bad)
				}
			}
		})
	}
}
