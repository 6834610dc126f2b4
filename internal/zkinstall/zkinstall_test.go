package zkinstall

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func fakeEnv(vars map[string]string, java string) Env {
	return Env{
		Getenv: func(k string) string { return vars[k] },
		LookPath: func(string) (string, error) {
			if java == "" {
				return "", errors.New("not found")
			}
			return java, nil
		},
	}
}

func TestFindZookeeperHome(t *testing.T) {
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, j := range []string{"lib/zookeeper-3.8.4.jar", "lib/zookeeper-jute-3.8.4.jar", "lib/netty-handler.jar"} {
		if err := os.WriteFile(filepath.Join(home, j), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	in, err := fakeEnv(map[string]string{"ZOOKEEPER_HOME": home}, "/bin/java").Find()
	if err != nil {
		t.Fatal(err)
	}
	if in.Java != "/bin/java" || len(in.Classpath) != 3 || !strings.Contains(in.Source, home) {
		t.Fatalf("%+v", in)
	}
}

func TestFindWithoutJava(t *testing.T) {
	_, err := fakeEnv(nil, "").Find()
	if err == nil || !strings.Contains(err.Error(), "java") {
		t.Fatalf("error %v", err)
	}
}

func TestFindRejectsHomeWithoutJar(t *testing.T) {
	home := t.TempDir()
	in, err := fakeEnv(map[string]string{"ZOOKEEPER_HOME": home}, "/bin/java").Find()
	if err == nil && in.Source == "ZOOKEEPER_HOME="+home {
		t.Fatalf("accepted an empty ZOOKEEPER_HOME: %+v", in)
	}
	if err != nil && !strings.Contains(err.Error(), home) {
		t.Fatalf("error does not name the empty home: %v", err)
	}
}

func TestCommandWritesConfig(t *testing.T) {
	dir := t.TempDir()
	in := Install{Java: "/bin/java", Classpath: []string{"/a.jar", "/b.jar"}}
	cmd, err := in.Command(context.Background(), Config{Dir: dir, Port: 12345})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "zoo.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"clientPort=12345", "tickTime=2000", "admin.enableServer=false", "clientPortAddress=127.0.0.1"} {
		if !strings.Contains(string(cfg), want) {
			t.Errorf("zoo.cfg lacks %q:\n%s", want, cfg)
		}
	}
	args := strings.Join(cmd.Args, " ")
	if !strings.Contains(args, "-cp /a.jar"+string(os.PathListSeparator)+"/b.jar") || !strings.HasSuffix(args, MainClass+" "+filepath.Join(dir, "zoo.cfg")) {
		t.Fatalf("args %s", args)
	}
	if _, err := in.Command(context.Background(), Config{Dir: dir}); err == nil {
		t.Fatal("accepted port 0")
	}
}

func TestCommandWritesEnsemble(t *testing.T) {
	dir := t.TempDir()
	in := Install{Java: "/bin/java", Classpath: []string{"/a.jar"}}
	peers := []Peer{{1, "10.0.0.1", 2888, 3888}, {2, "10.0.0.2", 2888, 3888}, {3, "10.0.0.3", 2888, 3888}}
	if _, err := in.Command(context.Background(), Config{Dir: dir, Port: 2181, Host: "10.0.0.2", Ensemble: peers, MyID: 2}); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(filepath.Join(dir, "zoo.cfg"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"clientPortAddress=10.0.0.2", "server.1=10.0.0.1:2888:3888", "server.3=10.0.0.3:2888:3888", "initLimit="} {
		if !strings.Contains(string(cfg), want) {
			t.Errorf("zoo.cfg lacks %q:\n%s", want, cfg)
		}
	}
	if myid, err := os.ReadFile(filepath.Join(dir, "data", "myid")); err != nil || string(myid) != "2\n" {
		t.Fatalf("myid %q %v", myid, err)
	}
	for name, cfg := range map[string]Config{
		"myid not listed": {Dir: dir, Port: 2181, Ensemble: peers, MyID: 4},
		"duplicate id":    {Dir: dir, Port: 2181, Ensemble: append(peers, peers[0]), MyID: 1},
		"bad host":        {Dir: dir, Port: 2181, Ensemble: []Peer{{1, "a b", 2888, 3888}}, MyID: 1},
		"bad port":        {Dir: dir, Port: 2181, Ensemble: []Peer{{1, "h", 0, 3888}}, MyID: 1},
	} {
		if _, err := in.Command(context.Background(), cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
