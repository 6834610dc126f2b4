package apiversions

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/ktoolhq/ktool/tools/cmdutil"
	"github.com/ktoolhq/ktool/tools/cmdutil/cmdtest"
)

func TestAPIVersionsAgainstKfake(t *testing.T) {
	c := cmdtest.Cluster(t, kfake.NumBrokers(2))
	env := cmdtest.NewEnv(t, c.ListenAddrs())
	o := &Options{Factory: env.F}
	o.Output.Format = "json"
	if err := Run(cmdtest.Ctx(t), o); err != nil {
		t.Fatal(err)
	}
	var rows []Broker
	if err := json.Unmarshal(env.Out.Bytes(), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].ID != 0 || rows[1].ID != 1 || rows[0].Endpoint != c.ListenAddrs()[0] {
		t.Fatalf("brokers: %+v", rows)
	}
	var produce *API
	for i, a := range rows[0].APIs {
		if a.Key == 0 {
			produce = &rows[0].APIs[i]
		}
	}
	if produce == nil || produce.Name != "Produce" || produce.Max < 9 || produce.Usable < 9 || produce.Usable > produce.Max {
		t.Fatalf("Produce: %+v", produce)
	}

	env.Out.Reset()
	o = &Options{Factory: env.F, Brokers: []int32{1}}
	if err := Run(cmdtest.Ctx(t), o); err != nil {
		t.Fatal(err)
	}
	if out := env.Out.String(); !strings.Contains(out, "Broker 1 (") || strings.Contains(out, "Broker 0 (") || !strings.Contains(out, "Produce") {
		t.Errorf("table for broker 1:\n%s", out)
	}
	var ee *cmdutil.ExitErr
	if err := Run(cmdtest.Ctx(t), &Options{Factory: env.F, Brokers: []int32{9}}); !errors.As(err, &ee) || ee.Code != cmdutil.ExitUsage {
		t.Errorf("unknown broker: %v", err)
	}
}
