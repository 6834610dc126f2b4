package uitest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/broker/brokertest"
	"github.com/ktoolhq/ktool/tools/cmdutil"
)

// browser starts a headless Chromium for the test. Without one the test
// skips loudly, or fails when CI=true.
func browser(t *testing.T) context.Context {
	t.Helper()
	var path string
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true requires Chromium for the browser tests of ktool ui (Debian package chromium; scripts/test.sh installs it as root)")
		}
		t.Skipf("\n\n*** SKIPPING %s: no chromium on PATH, the browser tests of ktool ui did NOT run ***\n\n", t.Name())
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1360, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancelTime(); cancelCtx(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting chromium %s: %v", path, err)
	}
	return ctx
}

// page drives one browser tab in a test.
type page struct {
	t      *testing.T
	ctx    context.Context
	base   string
	shots  string
	nshots int
}

func newPage(t *testing.T, base string) *page {
	dir := os.Getenv("KTOOL_UI_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return &page{t: t, ctx: browser(t), base: base, shots: dir}
}

func (p *page) run(actions ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	if err := chromedp.Do(p.ctx, actions...); err != nil {
		p.t.Fatalf("browser: %v\npage text:\n%s", err, p.text())
	}
}

func (p *page) open(path string) {
	p.t.Helper()
	p.run(chromedp.Navigate(p.base + path))
}

func (p *page) text() string {
	ctx, cancel := context.WithTimeout(p.ctx, 5*time.Second)
	defer cancel()
	s, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	return s
}

// eval returns the value of a JavaScript expression.
func eval[T any](p *page, expr string) T {
	p.t.Helper()
	v, err := chromedp.Run(p.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		p.t.Fatalf("evaluating %s: %v", expr, err)
	}
	return v
}

// waitJS polls a JavaScript condition until it holds or the deadline passes.
func (p *page) waitJS(what string, deadline time.Duration, expr string) {
	p.t.Helper()
	end := time.Now().Add(deadline)
	for {
		ok, err := chromedp.Run(p.ctx, chromedp.Evaluate[bool](`(() => { try { return !!(`+expr+`); } catch (e) { return false; } })()`))
		if err == nil && ok {
			return
		}
		if time.Now().After(end) {
			p.t.Fatalf("%s: not within %v (%v)\npage text:\n%s", what, deadline, err, p.text())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// click clicks the element sel names. The live pages re-render while they
// are clicked; a node replaced between finding and clicking it ("Could not
// find node with given id", seen once in CI on the ZooKeeper page) is looked
// up again, for at most 10 s.
func (p *page) click(sel string) {
	p.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := chromedp.Do(p.ctx, chromedp.Click(chromedp.CSS(sel)))
		if err == nil {
			return
		}
		if !strings.Contains(err.Error(), "Could not find node") || time.Now().After(deadline) {
			p.t.Fatalf("browser: clicking %s: %v\npage text:\n%s", sel, err, p.text())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (p *page) screenshot(name string) string {
	p.t.Helper()
	png, err := chromedp.Run(p.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		p.t.Fatalf("screenshot: %v", err)
	}
	p.nshots++
	path := filepath.Join(p.shots, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		p.t.Fatal(err)
	}
	p.t.Logf("screenshot %s", path)
	return path
}

// partitionsJS reads the topic page's partition table as
// [[partition, leader, isr, osr, ar], ...].
const partitionsJS = `[...document.querySelectorAll('#partitions tbody tr')].map(r => [
	r.querySelector('.c-partition').textContent, r.querySelector('.c-leader').textContent,
	r.querySelector('.c-isr').textContent, r.querySelector('.c-osr').textContent,
	[...r.querySelectorAll('.c-ar .rep')].map(x => x.textContent.replace('★', '')).join(',')])`

func describeTest(t *testing.T, adm *kadm.Client) [][]string {
	t.Helper()
	m, err := cmdutil.Metadata(t.Context(), adm, "test")
	if err != nil {
		t.Fatal(err)
	}
	var rows [][]string
	live := map[int32]bool{}
	for _, b := range m.Brokers {
		live[b.NodeID] = true
	}
	for _, pd := range m.Topics["test"].Partitions.Sorted() {
		osr := []string{}
		for _, r := range pd.Replicas {
			if !slices.Contains(pd.ISR, r) {
				osr = append(osr, strconv.Itoa(int(r)))
			}
		}
		leader := strconv.Itoa(int(pd.Leader))
		if pd.Leader < 0 || !live[pd.Leader] {
			leader = "none"
		}
		o := strings.Join(osr, ",")
		if o == "" {
			o = "–"
		}
		rows = append(rows, []string{strconv.Itoa(int(pd.Partition)), leader, join(pd.ISR), o, join(pd.Replicas)})
	}
	return rows
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func join(xs []int32) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(int(x))
	}
	return strings.Join(s, ",")
}

// TestBrowserWalkthrough replays the seed's walk-through in a real browser on
// an in-process cluster: the cluster page, the topic list, the message browser
// with hostile records, the group lag view with an offset reset, then on the
// topic page a broker killed and its replicas leaving the ISR live, the broker
// back, and a preferred election run from the page.
func TestBrowserWalkthrough(t *testing.T) {
	p := newPage(t, "")
	c := brokertest.NewCluster(t, 3)
	adm := c.Admin()
	ctx := t.Context()
	if _, err := adm.CreateTopic(ctx, 3, 3, nil, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateTopic(ctx, 1, 1, map[string]*string{"retention.ms": kadm.StringPtr("3600000")}, "other"); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for i := range 20 {
		recs = append(recs, &kgo.Record{Topic: "test", Partition: 0, Key: []byte("k" + strconv.Itoa(i)),
			Value: []byte(fmt.Sprintf(`{"order":%d,"item":"widget"}`, i))})
	}
	recs = append(recs, &kgo.Record{Topic: "test", Partition: 0, Key: []byte(`<img src=x onerror="window.pwned=1">`),
		Value: []byte(`<script>window.pwned=1</script>`), Headers: []kgo.RecordHeader{{Key: "trace", Value: []byte("<b>bold</b>")}}})
	produce(t, c, recs...)
	lagging := kadm.Offsets{}
	lagging.Add(kadm.Offset{Topic: "test", Partition: 0, At: 5, LeaderEpoch: -1})
	if _, err := adm.CommitOffsets(ctx, "lagging", lagging); err != nil {
		t.Fatal(err)
	}

	con := startConsole(t, c.Addrs(), nil)
	p.base = con.url

	// Cluster page: the three brokers and the controller the metadata names.
	m, err := cmdutil.Metadata(ctx, adm)
	if err != nil {
		t.Fatal(err)
	}
	p.open("/")
	p.waitJS("three brokers up", 10*time.Second, `document.querySelectorAll('#broker-table tbody tr').length === 3 &&
		[...document.querySelectorAll('#broker-table td.status')].every(td => td.textContent === 'up')`)
	for _, b := range m.Brokers {
		ep := fmt.Sprintf("%s:%d", b.Host, b.Port)
		p.waitJS("broker "+ep, 2*time.Second, fmt.Sprintf(`document.querySelector('#broker-table tr[data-broker="%d"]').textContent.includes(%q)`, b.NodeID, ep))
	}
	p.waitJS("controller", 2*time.Second, fmt.Sprintf(`document.querySelector('#card-controller .value').textContent === 'broker %d'`, m.Controller))

	// Topics page: the list, then the filter.
	p.open("/topics")
	p.waitJS("topic list", 10*time.Second, `document.querySelector('tr[data-topic="test"] .c-partitions').textContent === '3' &&
		document.querySelector('tr[data-topic="test"] .c-rf').textContent === '3' && document.querySelector('tr[data-topic="other"]')`)
	p.waitJS("override listed", 15*time.Second, `document.querySelector('tr[data-topic="other"] .c-overrides').textContent.includes('retention.ms=3600000')`)
	p.run(chromedp.SendKeys(chromedp.CSS("#topic-filter"), "tes"))
	p.waitJS("filtered list", 5*time.Second, `document.querySelectorAll('#topic-table tbody tr').length === 1 && document.querySelector('tr[data-topic="test"]')`)

	// Messages: pretty JSON, and hostile records shown as text, never run.
	p.open("/messages?topic=test&partition=0")
	p.waitJS("records", 10*time.Second, `document.querySelectorAll('#message-table tbody tr').length === 21`)
	p.waitJS("pretty JSON", time.Second, `document.querySelector('tr[data-offset="3"] .c-value pre').textContent === '{\n  "order": 3,\n  "item": "widget"\n}'`)
	p.waitJS("hostile record shown as text", time.Second, `document.querySelector('tr[data-offset="20"] .c-key').textContent.includes('<img src=x') &&
		document.querySelector('tr[data-offset="20"] .c-headers').textContent.includes('<b>bold</b>')`)
	// The one <b> is the label of the header's name that the page itself makes.
	if n := eval[int](p, `document.querySelectorAll('#app img, #app script, #app b').length`); n != 1 {
		t.Fatalf("record contents became markup: %d elements", n)
	}
	if eval[bool](p, `window.pwned === 1`) {
		t.Fatal("a record's contents ran as script")
	}
	p.run(chromedp.SetValue(chromedp.CSS("#m-filter"), "order\":7"))
	p.click("#m-browse")
	p.waitJS("filtered records", 10*time.Second, `document.querySelectorAll('#message-table tbody tr').length === 1 && document.querySelector('tr[data-offset="7"]')`)

	// A live consumer group: its member and assignment, its lag caught up.
	app, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.ConsumerGroup("app"), kgo.ConsumeTopics("test"),
		kgo.ClientID("ui-test-consumer"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AutoCommitInterval(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	actx, stopApp := context.WithCancel(ctx)
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		for actx.Err() == nil {
			app.PollFetches(actx)
		}
	}()
	p.open("/groups")
	p.waitJS("group app listed", 20*time.Second, `document.querySelector('tr[data-group="app"] .c-state').textContent === 'Stable' &&
		document.querySelector('tr[data-group="app"] .c-members').textContent === '1' && document.querySelector('tr[data-group="lagging"]')`)
	p.open("/groups/app")
	p.waitJS("member and assignment", 10*time.Second, `document.querySelector('#member-table').textContent.includes('ui-test-consumer') &&
		document.querySelector('#member-table').textContent.includes('test [0,1,2]')`)
	p.waitJS("caught up", 20*time.Second, `document.querySelector('#card-total-lag .value').textContent === '0' &&
		document.querySelector('tr[data-tp="test-0"] .c-committed').textContent === '21'`)
	stopApp()
	<-polled
	app.Close()

	// Group lag view: lag per partition, growing as records arrive, charted.
	p.open("/groups/lagging")
	p.waitJS("lag", 10*time.Second, `document.querySelector('tr[data-tp="test-0"] .c-lag').textContent === '16'`)
	for i := range 4 {
		more := make([]*kgo.Record, 10*(i+1))
		for j := range more {
			more[j] = &kgo.Record{Topic: "test", Partition: 0, Value: []byte(`{"more":true}`)}
		}
		produce(t, c, more...)
		want := 16 + 10*(i+1)*(i+2)/2
		p.waitJS("lag grows live", 10*time.Second, fmt.Sprintf(`document.querySelector('tr[data-tp="test-0"] .c-lag').textContent === '%d'`, want))
	}
	p.waitJS("lag chart", 5*time.Second, `document.querySelector('#lag-chart polyline').getAttribute('points').split(' ').length >= 5`)
	p.screenshot("group-lag")

	// Reset offsets: a dry run shows the plan, confirming applies it.
	p.click("#reset-offsets")
	p.run(chromedp.SetValue(chromedp.CSS("#rs-to"), "latest"))
	p.click("#modal-confirm")
	p.waitJS("dry-run plan", 10*time.Second, `document.querySelector('#reset-plan tbody tr .c-new') && document.querySelector('#reset-plan .c-new').textContent === '121'`)
	if got := committed(t, adm, "lagging"); got != 5 {
		t.Fatalf("the dry run committed: offset %d", got)
	}
	p.click("#modal-confirm")
	p.waitJS("lag after reset", 10*time.Second, `document.querySelector('tr[data-tp="test-0"] .c-lag').textContent === '0'`)
	if got := committed(t, adm, "lagging"); got != 121 {
		t.Fatalf("committed offset after the reset: %d, want 121", got)
	}

	// Without --zookeeper the page says how to get it (TestBrowserSIGKILL
	// browses a real one).
	p.open("/zookeeper")
	p.waitJS("no ZooKeeper", 10*time.Second, `document.querySelector('#zk-controller').textContent.includes('--zookeeper')`)

	// The seed's experiment: kill a broker and watch the topic page.
	p.open("/topics/test")
	p.waitJS("partition rows", 10*time.Second, `document.querySelectorAll('#partitions tbody tr').length === 3`)
	want := describeTest(t, adm)
	p.waitJS("rows match the metadata", 5*time.Second, fmt.Sprintf(`JSON.stringify(%s) === %q`, partitionsJS, mustJSON(want)))
	eval[string](p, `window.sameDocument = 'yes'`)
	c.Kill(0)
	p.waitJS("broker 0 leaves every ISR and leads nothing", 20*time.Second, `(() => { const rows = `+partitionsJS+`;
		return rows.length === 3 && rows.every(r => !r[2].split(',').includes('0') && r[3] === '0' && r[1] !== '0' && r[1] !== 'none'); })()`)
	if eval[string](p, `window.sameDocument`) != "yes" {
		t.Fatal("the page was reloaded")
	}
	p.waitJS("page matches the metadata", 5*time.Second, fmt.Sprintf(`JSON.stringify(%s) === %q`, partitionsJS, mustJSON(describeTest(t, adm))))
	p.screenshot("topic-isr-osr")

	// The cluster page says the same: broker 0 down, every partition under-replicated.
	all, err := cmdutil.Metadata(ctx, adm)
	if err != nil {
		t.Fatal(err)
	}
	urp := 0
	for _, td := range all.Topics {
		for _, pd := range td.Partitions {
			if len(pd.ISR) < len(pd.Replicas) {
				urp++
			}
		}
	}
	p.open("/")
	p.waitJS("broker 0 down on the cluster page", 10*time.Second, fmt.Sprintf(`document.querySelector('#broker-table tr[data-broker="0"] td.status').textContent === 'down' &&
		document.querySelector('#card-brokers-up .value').textContent === '2 / 3' &&
		document.querySelector('#card-under-replicated .value').textContent === '%d' &&
		document.querySelectorAll('#health-table tbody tr').length === %d`, urp, urp))
	p.open("/topics/test")

	c.Restart(0)
	p.waitJS("broker 0 back in every ISR", 30*time.Second, `(() => { const rows = `+partitionsJS+`;
		return rows.length === 3 && rows.every(r => r[2].split(',').includes('0') && r[3] === '–'); })()`)
	p.waitJS("a non-preferred leader is highlighted", 5*time.Second, `document.querySelector('#partitions td.c-leader.nonpref')`)

	// Preferred election from the page, behind its confirmation.
	p.click("#elect-topic")
	p.waitJS("confirmation", 2*time.Second, `!document.getElementById('modal').hidden`)
	p.click("#modal-confirm")
	p.waitJS("preferred leaders back", 20*time.Second, `(() => { const rows = `+partitionsJS+`;
		return rows.length === 3 && rows.every(r => r[1] === r[4].split(',')[0]) && !document.querySelector('#partitions td.c-leader.nonpref'); })()`)
	brokertest.Eventually(t, 10*time.Second, func() error {
		for _, r := range describeTest(t, adm) {
			if r[1] != strings.Split(r[4], ",")[0] {
				return fmt.Errorf("partition %s led by %s, preferred %s", r[0], r[1], r[4])
			}
		}
		return nil
	})
}

func committed(t *testing.T, adm *kadm.Client, group string) int64 {
	t.Helper()
	offsets, err := adm.FetchOffsets(t.Context(), group)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := offsets.Lookup("test", 0)
	if !ok {
		return -1
	}
	return o.At
}
