package ui

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/tools/cmdutil/cmdtest"
)

var csrfMeta = regexp.MustCompile(`<meta name="csrf" content="([0-9a-f]+)">`)

// session opens the console's page as a browser would and returns its
// session cookie and CSRF token.
func session(t *testing.T, c *console, auth func(*http.Request)) (*http.Cookie, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", c.url+"/", nil)
	auth(req)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := csrfMeta.FindStringSubmatch(string(b))
	if resp.StatusCode != 200 || m == nil || len(resp.Cookies()) != 1 {
		t.Fatalf("page: %d, cookies %v\n%s", resp.StatusCode, resp.Cookies(), b)
	}
	ck := resp.Cookies()[0]
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode {
		t.Fatalf("session cookie %+v is not HttpOnly and SameSite=Strict", ck)
	}
	return ck, m[1]
}

func post(t *testing.T, c *console, path, body string, mod func(*http.Request)) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", c.url+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", c.url)
	mod(req)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestAuthCSRFAndHeaders(t *testing.T) {
	c := cmdtest.Cluster(t, kfake.NumBrokers(1))
	const token = "0123456789abcdef-token"
	con := startConsole(t, c.ListenAddrs(), func(o *Options) { o.TokenFile = writeSecret(t, token) })

	code, _ := con.get(t, "/api/cluster")
	if code != http.StatusUnauthorized {
		t.Fatalf("no credentials: %d, want 401", code)
	}
	resp, err := http.Get(con.url + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic ") {
		t.Fatalf("401 without a Basic challenge: %v", resp.Header)
	}
	bearer := func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }
	basic := func(r *http.Request) { r.SetBasicAuth("anyone", token) }
	wrong := func(r *http.Request) { r.SetBasicAuth("anyone", token+"x") }
	for name, auth := range map[string]func(*http.Request){"bearer": bearer, "basic": basic, "wrong": wrong} {
		req, _ := http.NewRequest("GET", con.url+"/api/cluster", nil)
		auth(req)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		want := 200
		if name == "wrong" {
			want = 401
		}
		if resp.StatusCode != want {
			t.Fatalf("%s: %d, want %d", name, resp.StatusCode, want)
		}
		if name == "bearer" {
			for _, h := range []string{"Content-Security-Policy", "X-Content-Type-Options", "X-Frame-Options"} {
				if resp.Header.Get(h) == "" {
					t.Fatalf("no %s header", h)
				}
			}
		}
	}

	// A page of another site rebinding its name to 127.0.0.1 is refused.
	req, _ := http.NewRequest("GET", con.url+"/api/cluster", nil)
	bearer(req)
	req.Host = "attacker.example:80"
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusMisdirectedRequest {
		t.Fatalf("foreign Host: %v %v", resp, err)
	}

	ck, csrf := session(t, con, bearer)
	body := `{"topic":"made-by-post","partitions":2,"replication_factor":1}`
	good := func(r *http.Request) { bearer(r); r.AddCookie(ck); r.Header.Set(csrfHeader, csrf) }
	for name, mod := range map[string]func(*http.Request){
		"no token":       func(r *http.Request) { bearer(r); r.AddCookie(ck) },
		"wrong token":    func(r *http.Request) { bearer(r); r.AddCookie(ck); r.Header.Set(csrfHeader, strings.Repeat("0", 64)) },
		"no cookie":      func(r *http.Request) { bearer(r); r.Header.Set(csrfHeader, csrf) },
		"foreign origin": func(r *http.Request) { good(r); r.Header.Set("Origin", "http://attacker.example") },
		"no origin":      func(r *http.Request) { good(r); r.Header.Del("Origin") },
		"form post":      func(r *http.Request) { good(r); r.Header.Set("Content-Type", "text/plain") },
	} {
		if code, out := post(t, con, "/api/actions/create-topic", body, mod); code != http.StatusForbidden {
			t.Fatalf("%s: %d %s, want 403", name, code, out)
		}
	}
	if code, out := post(t, con, "/api/actions/create-topic", body, good); code != 200 {
		t.Fatalf("good action: %d %s", code, out)
	}
	adm := admin(t, c.ListenAddrs())
	ts, err := adm.ListTopics(t.Context(), "made-by-post")
	if err != nil || ts["made-by-post"].Err != nil || len(ts["made-by-post"].Partitions) != 2 {
		t.Fatalf("the topic the action made: %v %+v", err, ts)
	}
	if code, out := post(t, con, "/api/actions/create-topic", strings.Repeat(" ", maxActionBody+1)+body, good); code != http.StatusBadRequest {
		t.Fatalf("oversized body: %d %s", code, out)
	}
}

func TestReadOnlyOffersNoAction(t *testing.T) {
	c := cmdtest.Cluster(t, kfake.NumBrokers(1))
	con := startConsole(t, c.ListenAddrs(), func(o *Options) { o.ReadOnly = true })
	none := func(*http.Request) {}
	ck, csrf := session(t, con, none)
	code, out := post(t, con, "/api/actions/create-topic", `{"topic":"nope","partitions":1,"replication_factor":1}`,
		func(r *http.Request) { r.AddCookie(ck); r.Header.Set(csrfHeader, csrf) })
	if code != http.StatusForbidden || !strings.Contains(out, "read-only") {
		t.Fatalf("read-only action: %d %s", code, out)
	}
	_, page := con.get(t, "/")
	contains(t, "read-only page", page, `data-readonly="true"`)
}

func TestBrowseIsBoundedAndEscaped(t *testing.T) {
	c := cmdtest.Cluster(t, kfake.NumBrokers(1))
	adm := admin(t, c.ListenAddrs())
	if _, err := adm.CreateTopic(t.Context(), 1, 1, nil, "hostile"); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", browseShowBytes+100)
	produce(t, c.ListenAddrs(),
		&kgo.Record{Topic: "hostile", Key: []byte("<script>alert(1)</script>"), Value: []byte(`{"a":"</pre><img src=x onerror=alert(1)>"}`)},
		&kgo.Record{Topic: "hostile", Value: []byte{0, 1, 2, 0xff}},
		&kgo.Record{Topic: "hostile", Value: []byte(big), Headers: []kgo.RecordHeader{{Key: "h", Value: []byte("v")}}})
	con := startConsole(t, c.ListenAddrs(), nil)

	code, out := con.get(t, "/api/messages?topic=hostile&partition=0&offset=0&limit=100000")
	if code != 200 {
		t.Fatalf("%d %s", code, out)
	}
	if strings.Contains(out, "<script>") || strings.Contains(out, "<img") {
		t.Fatalf("raw markup in the JSON answer: %s", out)
	}
	var d struct {
		Records []shownRecord `json:"records"`
		Limit   int           `json:"limit"`
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	if d.Limit != browseMaxLimit || len(d.Records) != 3 {
		t.Fatalf("limit %d, %d records", d.Limit, len(d.Records))
	}
	if v := d.Records[0].Value; v.Kind != "json" || !strings.Contains(v.Text, "\n  \"a\"") {
		t.Fatalf("JSON not pretty-printed: %+v", v)
	}
	if v := d.Records[1].Value; v.Kind != "hex" || !strings.Contains(v.Text, "00 01 02 ff") {
		t.Fatalf("binary not hex: %+v", v)
	}
	if v := d.Records[2].Value; !v.Truncated || len(v.Text) != browseShowBytes || v.Size != len(big) {
		t.Fatalf("big value not cut: truncated=%v len=%d size=%d", v.Truncated, len(v.Text), v.Size)
	}
	code, out = con.get(t, "/api/messages?topic=hostile&partition=0&offset=0&filter=onerror&format=jsonl")
	if code != 200 || strings.Count(out, "\n") != 1 || !strings.Contains(out, `"offset":0`) {
		t.Fatalf("filtered export: %d %q", code, out)
	}
	for _, bad := range []string{
		"topic=../x&partition=0", "topic=hostile&partition=-1", "topic=hostile&partition=0&filter=" + strings.Repeat("a", filterMaxLen+1),
		"topic=hostile&partition=0&mode=html",
	} {
		if code, out := con.get(t, "/api/messages?"+bad); code != http.StatusBadRequest {
			t.Fatalf("%s: %d %s", bad, code, out)
		}
	}
}

func admin(t *testing.T, brokers []string) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

func TestEventStreamsAreBounded(t *testing.T) {
	c := cmdtest.Cluster(t, kfake.NumBrokers(1))
	con := startConsole(t, c.ListenAddrs(), nil)
	open := func() *http.Response {
		resp, err := http.Get(con.url + "/api/events")
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	for range maxStreams {
		resp := open()
		defer resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("stream: %d %v", resp.StatusCode, resp.Header)
		}
		buf := make([]byte, 64)
		if _, err := resp.Body.Read(buf); err != nil {
			t.Fatal(err)
		}
	}
	resp := open()
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("stream %d: %d, want 503", maxStreams+1, resp.StatusCode)
	}
}
