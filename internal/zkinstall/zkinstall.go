package zkinstall

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// MainClass runs a server from a zoo.cfg; without quorum peers in the file
// it runs standalone.
const MainClass = "org.apache.zookeeper.server.quorum.QuorumPeerMain"

// Install is a ZooKeeper server installation.
type Install struct {
	// Java is the java executable.
	Java string
	// Classpath holds the ZooKeeper jars and what they need, including a
	// logging binding that the generated configuration keeps quiet.
	Classpath []string
	// Source says where the installation was found, for messages.
	Source string
}

// Env is what discovery reads from the environment; Find uses the process
// environment.
type Env struct {
	Getenv   func(string) string
	LookPath func(string) (string, error)
}

// Find locates java and a ZooKeeper installation. The error lists every
// place that was searched.
func Find() (Install, error) {
	return Env{Getenv: os.Getenv, LookPath: exec.LookPath}.Find()
}

// Find locates java and a ZooKeeper installation using e.
func (e Env) Find() (Install, error) {
	java, err := e.java()
	if err != nil {
		return Install{}, err
	}
	var tried []string
	if home := e.Getenv("ZOOKEEPER_HOME"); home != "" {
		cp, err := distributionClasspath(home)
		if err == nil {
			return Install{Java: java, Classpath: cp, Source: "ZOOKEEPER_HOME=" + home}, nil
		}
		tried = append(tried, fmt.Sprintf("ZOOKEEPER_HOME=%s (%v)", home, err))
	}
	const debian = "/usr/share/java/zookeeper.jar"
	if _, err := os.Stat(debian); err == nil {
		// The Debian jar's manifest names its dependencies; only a logging
		// binding has to be added.
		cp := []string{debian}
		for _, binding := range []string{"/usr/share/java/slf4j-simple.jar", "/usr/share/java/slf4j-nop.jar"} {
			if _, err := os.Stat(binding); err == nil {
				cp = append(cp, binding)
				break
			}
		}
		return Install{Java: java, Classpath: cp, Source: debian}, nil
	}
	tried = append(tried, debian)
	for _, home := range []string{
		"/opt/homebrew/opt/zookeeper/libexec",
		"/usr/local/opt/zookeeper/libexec",
		"/opt/zookeeper",
		"/usr/share/zookeeper",
	} {
		cp, err := distributionClasspath(home)
		if err == nil {
			return Install{Java: java, Classpath: cp, Source: home}, nil
		}
		tried = append(tried, home)
	}
	return Install{}, fmt.Errorf("no ZooKeeper installation found (looked in %s); install the zookeeper package or set ZOOKEEPER_HOME", strings.Join(tried, ", "))
}

func (e Env) java() (string, error) {
	if home := e.Getenv("JAVA_HOME"); home != "" {
		p := filepath.Join(home, "bin", "java")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	p, err := e.LookPath("java")
	if err != nil {
		return "", fmt.Errorf("ZooKeeper needs java: none in JAVA_HOME or PATH: %w", err)
	}
	return p, nil
}

// distributionClasspath is the classpath of an Apache release layout: the
// jars in home/lib (3.5 and later) and home itself (3.4).
func distributionClasspath(home string) ([]string, error) {
	var jars []string
	for _, dir := range []string{filepath.Join(home, "lib"), home} {
		found, err := filepath.Glob(filepath.Join(dir, "*.jar"))
		if err != nil {
			return nil, err
		}
		jars = append(jars, found...)
	}
	sort.Strings(jars)
	for _, j := range jars {
		base := filepath.Base(j)
		if strings.HasPrefix(base, "zookeeper-") && !strings.HasPrefix(base, "zookeeper-jute") || base == "zookeeper.jar" {
			return jars, nil
		}
	}
	return nil, errors.New("no zookeeper jar")
}

// Config is one server: standalone, or one node of an ensemble when
// Ensemble is set.
type Config struct {
	// Dir holds zoo.cfg, the logging configuration and the data.
	Dir string
	// Port is the client port.
	Port int
	// Host is the address the client port is bound on; 127.0.0.1 when empty.
	Host string
	// TickTime is ZooKeeper's time unit (default 2s); sessions may time out
	// between 2 and 20 ticks.
	TickTime time.Duration
	// Ensemble lists every node of the ensemble, this one included (its ID
	// is MyID); empty for a standalone server.
	Ensemble []Peer
	MyID     int
}

// Peer is one node of an ensemble, as its server.N line of zoo.cfg says:
// the address its peers reach it on, the port followers talk to the leader
// on and the port of leader election.
type Peer struct {
	ID           int
	Host         string
	QuorumPort   int
	ElectionPort int
}

// ensembleLines are zoo.cfg's quorum settings and server.N lines, and checks
// the ensemble.
func (cfg Config) ensembleLines() (string, error) {
	if len(cfg.Ensemble) == 0 {
		return "", nil
	}
	var b strings.Builder
	// initLimit and syncLimit count ticks: with short test ticks a follower
	// still gets a few seconds to sync.
	b.WriteString("initLimit=20\nsyncLimit=10\n")
	mine := false
	seen := map[int]bool{}
	for _, p := range cfg.Ensemble {
		if p.ID < 1 || p.ID > 255 || seen[p.ID] {
			return "", fmt.Errorf("zookeeper: ensemble node id %d: want distinct ids 1..255", p.ID)
		}
		seen[p.ID] = true
		for _, port := range []int{p.QuorumPort, p.ElectionPort} {
			if port <= 0 || port > 65535 {
				return "", fmt.Errorf("zookeeper: ensemble node %d: invalid port %d", p.ID, port)
			}
		}
		if p.Host == "" || strings.ContainsAny(p.Host, " :\n=") {
			return "", fmt.Errorf("zookeeper: ensemble node %d: invalid host %q", p.ID, p.Host)
		}
		mine = mine || p.ID == cfg.MyID
		fmt.Fprintf(&b, "server.%d=%s:%d:%d\n", p.ID, p.Host, p.QuorumPort, p.ElectionPort)
	}
	if !mine {
		return "", fmt.Errorf("zookeeper: myid %d is not in the ensemble", cfg.MyID)
	}
	return b.String(), nil
}

// Command writes cfg's files into cfg.Dir and returns the command running
// the server in the foreground, with its admin server off, its log at WARN,
// and on Linux killed when the calling process dies.
func (in Install) Command(ctx context.Context, cfg Config) (*exec.Cmd, error) {
	if cfg.Port <= 0 || cfg.Port > 65535 {
		return nil, fmt.Errorf("zookeeper: invalid port %d", cfg.Port)
	}
	tick := cfg.TickTime
	if tick <= 0 {
		tick = 2 * time.Second
	}
	host := cfg.Host
	if host == "" {
		host = "127.0.0.1"
	}
	if strings.ContainsAny(host, " \n=") {
		return nil, fmt.Errorf("zookeeper: invalid host %q", host)
	}
	quorum, err := cfg.ensembleLines()
	if err != nil {
		return nil, err
	}
	dataDir := filepath.Join(cfg.Dir, "data")
	if err := os.MkdirAll(dataDir, 0o755); err != nil {
		return nil, err
	}
	if quorum != "" {
		if err := os.WriteFile(filepath.Join(dataDir, "myid"), []byte(strconv.Itoa(cfg.MyID)+"\n"), 0o644); err != nil {
			return nil, err
		}
	}
	zooCfg := fmt.Sprintf(`tickTime=%d
dataDir=%s
clientPort=%d
clientPortAddress=%s
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,stat,mntr
maxClientCnxns=0
autopurge.purgeInterval=1
%s`, tick.Milliseconds(), dataDir, cfg.Port, host, quorum)
	cfgPath := filepath.Join(cfg.Dir, "zoo.cfg")
	if err := os.WriteFile(cfgPath, []byte(zooCfg), 0o644); err != nil {
		return nil, err
	}
	log4j := filepath.Join(cfg.Dir, "log4j.properties")
	if err := os.WriteFile(log4j, []byte("log4j.rootLogger=WARN, CONSOLE\nlog4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender\nlog4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout\nlog4j.appender.CONSOLE.layout.ConversionPattern=%d{ISO8601} %-5p %c{1} - %m%n\n"), 0o644); err != nil {
		return nil, err
	}
	logback := filepath.Join(cfg.Dir, "logback.xml")
	if err := os.WriteFile(logback, []byte(`<configuration>
  <appender name="CONSOLE" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%d{ISO8601} %-5level %logger{0} - %msg%n</pattern></encoder>
  </appender>
  <root level="WARN"><appender-ref ref="CONSOLE"/></root>
</configuration>
`), 0o644); err != nil {
		return nil, err
	}
	args := []string{
		"-Xmx256m",
		"-XX:+UseSerialGC",
		"-XX:TieredStopAtLevel=1",
		"-Dzookeeper.admin.enableServer=false",
		"-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
		"-Dlog4j.configuration=file:" + log4j,
		"-Dlogback.configurationFile=" + logback,
		"-cp", strings.Join(in.Classpath, string(os.PathListSeparator)),
		MainClass, cfgPath,
	}
	cmd := exec.CommandContext(ctx, in.Java, args...)
	cmd.Dir = cfg.Dir
	cmd.SysProcAttr = sysProcAttr()
	return cmd, nil
}
