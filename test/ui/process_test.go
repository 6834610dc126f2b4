package uitest

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/internal/brokerproc"
	"github.com/ktoolhq/ktool/internal/brokerproc/proctest"
	"github.com/ktoolhq/ktool/internal/testbin"
	"github.com/ktoolhq/ktool/internal/zkdata"
	"github.com/ktoolhq/ktool/tools/cmdutil"
	"github.com/ktoolhq/ktool/tools/controller"
	"github.com/ktoolhq/ktool/tools/ui"
	"github.com/ktoolhq/ktool/tools/zk"
)

// sessionTimeout is the brokers' zookeeper.session.timeout.ms in
// TestBrowserSIGKILL: a broker killed with SIGKILL is noticed when its
// ZooKeeper session expires.
const sessionTimeout = 6 * time.Second

// TestBrowserSIGKILL is the seed's experiment on real processes: three
// `ktool broker start` processes on a real ZooKeeper, the controller killed
// with SIGKILL while the topic page is open; its replicas must leave the ISR
// and new leaders appear on the page, without a reload, within the session
// timeout plus a few seconds. The ZooKeeper page then shows the new controller
// and the bumped /controller_epoch.
func TestBrowserSIGKILL(t *testing.T) {
	p := newPage(t, "")
	bin, cleanup, err := testbin.Build()
	t.Cleanup(cleanup)
	if err != nil {
		t.Fatal(err)
	}
	pc := proctest.Cluster(t, brokerproc.ClusterSpec{Bin: bin, N: 3, InMemoryLogs: true, Overrides: []string{
		fmt.Sprintf("zookeeper.session.timeout.ms=%d", sessionTimeout.Milliseconds()), "replica.lag.time.max.ms=3000",
		"offsets.topic.replication.factor=3", "group.initial.rebalance.delay.ms=0",
	}}, "/kafka", 0)
	cl, err := kgo.NewClient(kgo.SeedBrokers(pc.Addrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	adm := kadm.NewClient(cl)
	ctx := t.Context()
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, "test"); err != nil {
		t.Fatal(err)
	}
	con := startConsole(t, pc.Addrs(), func(o *ui.Options) { o.Zookeeper = pc.ZooKeeper() })
	p.base = con.url

	p.open("/topics/test")
	p.waitJS("every partition fully in sync", 30*time.Second, `(() => { const rows = `+partitionsJS+`;
		return rows.length === 3 && rows.every(r => r[2].split(',').length === 3 && r[3] === '–'); })()`)
	zc, err := zk.Dial(ctx, pc.ZooKeeper())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(zc.Close)
	before, err := controller.ReadZK(ctx, zc)
	if err != nil {
		t.Fatal(err)
	}
	victim := before.BrokerID
	m, err := cmdutil.Metadata(ctx, adm, "test")
	if err != nil {
		t.Fatal(err)
	}
	led := 0
	for _, pd := range m.Topics["test"].Partitions {
		if pd.Leader == victim {
			led++
		}
	}
	eval[string](p, `window.sameDocument = 'yes'`)
	killed := time.Now()
	if err := pc.Broker(victim).Kill(); err != nil {
		t.Fatal(err)
	}
	p.waitJS(fmt.Sprintf("SIGKILLed controller %d leaves every ISR and leads nothing", victim), sessionTimeout+10*time.Second,
		fmt.Sprintf(`(() => { const rows = `+partitionsJS+`; const v = '%d';
		return rows.length === 3 && rows.every(r => !r[2].split(',').includes(v) && r[3] === v && r[1] !== v && r[1] !== 'none'); })()`, victim))
	t.Logf("broker %d (controller, leader of %d partitions) killed with SIGKILL: the page showed it out of every ISR after %v (session timeout %v)",
		victim, led, time.Since(killed).Round(100*time.Millisecond), sessionTimeout)
	if eval[string](p, `window.sameDocument`) != "yes" {
		t.Fatal("the page was reloaded")
	}
	brokertestEventually(t, 10*time.Second, func() error {
		if got, want := eval[string](p, `JSON.stringify(`+partitionsJS+`)`), mustJSON(describeTest(t, adm)); got != want {
			return fmt.Errorf("page %s, metadata %s", got, want)
		}
		return nil
	})

	after, err := controller.ReadZK(ctx, zc)
	if err != nil {
		t.Fatal(err)
	}
	if after.BrokerID == victim || after.BrokerID < 0 || after.Epoch <= before.Epoch {
		t.Fatalf("controller %+v after %+v", after, before)
	}
	p.open("/zookeeper")
	p.waitJS("the new controller and epoch from ZooKeeper", 10*time.Second, fmt.Sprintf(`document.querySelector('#card-zk-broker .value').textContent === '%d' &&
		document.querySelector('#card-zk-epoch .value').textContent === '%d'`, after.BrokerID, after.Epoch))
	p.click(`#znode-children a[href="/zookeeper?path=%2Fbrokers"]`)
	p.waitJS("znode /brokers", 10*time.Second, `document.querySelector('#znode-path').textContent === '/brokers' &&
		[...document.querySelectorAll('#znode-children a')].some(a => a.textContent === 'ids')`)
	p.click(`#znode-children a[href="/zookeeper?path=%2Fbrokers%2Fids"]`)
	live := []string{}
	for _, id := range pc.IDs() {
		if id != victim {
			live = append(live, fmt.Sprint(id))
		}
	}
	slices.Sort(live)
	p.waitJS("the live brokers' znodes", 10*time.Second, fmt.Sprintf(`JSON.stringify([...document.querySelectorAll('#znode-children a')].map(a => a.textContent)) === %q`, mustJSON(live)))
	p.click(fmt.Sprintf(`#znode-children a[href="/zookeeper?path=%%2Fbrokers%%2Fids%%2F%s"]`, live[0]))
	p.waitJS("a broker's registration decoded", 10*time.Second, fmt.Sprintf(`document.querySelector('#znode-data').textContent.includes('"PLAINTEXT://%s"') &&
		document.querySelector('#znode-stat').textContent.includes('ephemeral_owner')`, pc.Broker(mustAtoi(live[0])).Addr()))

	// The controller token is the one znode the console does not show: it
	// lets whoever holds it speak as the controller to the brokers.
	data, _, err := zc.Get(ctx, zkdata.ControllerTokenPath)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := zkdata.DecodeControllerToken(data)
	if err != nil {
		t.Fatal(err)
	}
	code, body := con.get(t, "/api/zookeeper?path="+zkdata.ControllerTokenPath)
	if secret := base64.StdEncoding.EncodeToString(tok.Token); code != 200 || strings.Contains(body, secret) || !strings.Contains(body, "not shown") {
		t.Fatalf("GET /api/zookeeper of the token: %d %s", code, body)
	}
}

func mustAtoi(s string) int32 {
	var n int32
	if _, err := fmt.Sscan(s, &n); err != nil {
		panic(err)
	}
	return n
}

// brokertestEventually polls f until it returns nil or the deadline passes.
func brokertestEventually(t *testing.T, d time.Duration, f func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	for {
		err := f()
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("not within %v: %v", d, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
