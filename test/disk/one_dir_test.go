package disk

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/ktoolhq/ktool/internal/brokerproc"
	"github.com/ktoolhq/ktool/internal/brokerproc/proctest"
	"github.com/ktoolhq/ktool/internal/disktest"
)

// TestOneDirFull: a standalone broker with two log dirs, the second a small
// tmpfs. Filling the tmpfs takes that dir offline and only it: the broker
// stays up, its partition there answers KAFKA_STORAGE_ERROR, the partition of
// the other dir keeps taking writes, and `ktool log-dirs describe` shows the
// failed dir (and exits 1).
func TestOneDirFull(t *testing.T) {
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	healthy, small := t.TempDir(), disktest.Tmpfs(t, "2m")
	b := proctest.Broker(t, brokerproc.Spec{Bin: ktoolBin, ID: 1, Dir: healthy,
		Args: []string{"--log-dirs", healthy + "," + small}}, 20*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const topic = "half"
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	// One partition in each dir (the least-loaded dir takes the next one).
	dirs, err := kadm.NewClient(cl).DescribeBrokerLogDirs(ctx, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	var full, other int32 = -1, -1
	for p := range dirs[small].Topics[topic] {
		full = p
	}
	for p := range dirs[healthy].Topics[topic] {
		other = p
	}
	if full < 0 || other < 0 {
		t.Fatalf("placement: %+v, want one partition in each dir", dirs)
	}
	value := make([]byte, 16<<10)
	var failedAt int
	for i := 0; ; i++ {
		if i == 1000 {
			t.Fatal("1000 records of 16 KiB fit in a 2 MiB tmpfs")
		}
		rand.Read(value)
		code, err := produceTo(ctx, cl, topic, full, nil, value)
		if err != nil {
			t.Fatal(err)
		}
		if code == kerr.KafkaStorageError.Code {
			failedAt = i
			break
		}
		if code != 0 {
			t.Fatalf("produce %d: %v", i, kerr.ErrorForCode(code))
		}
	}
	t.Logf("the tmpfs filled after %d records of 16 KiB", failedAt)
	if code, err := produceTo(ctx, cl, topic, full, nil, value); err != nil || code != kerr.KafkaStorageError.Code {
		t.Fatalf("produce to the partition of the failed dir: %v %v, want KAFKA_STORAGE_ERROR", err, kerr.ErrorForCode(code))
	}
	if code, err := produceTo(ctx, cl, topic, other, nil, value); err != nil || code != 0 {
		t.Fatalf("produce to the partition of the healthy dir: %v %v", err, kerr.ErrorForCode(code))
	}
	if !b.Running() {
		t.Fatal("the broker stopped with one of its two dirs still online")
	}

	cmd := exec.CommandContext(ctx, ktoolBin, "log-dirs", "describe", "--brokers", b.Addr(), "-o", "json")
	out, err := cmd.Output()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Errorf("log-dirs describe with a failed dir: %v, want exit status 1", err)
	}
	var rows []struct {
		Dirs []struct {
			Path     string
			Error    string
			Replicas []struct{ Partition int32 }
			Usable   int64 `json:"usable_bytes"`
		}
	}
	if err := json.Unmarshal(out, &rows); err != nil || len(rows) != 1 || len(rows[0].Dirs) != 2 {
		t.Fatalf("log-dirs describe -o json: %v\n%s", err, out)
	}
	for _, d := range rows[0].Dirs {
		switch filepath.Clean(d.Path) {
		case small:
			if !strings.Contains(d.Error, "KAFKA_STORAGE_ERROR") || len(d.Replicas) != 0 {
				t.Errorf("the full dir is described as %+v, want KAFKA_STORAGE_ERROR and no replicas", d)
			}
		case healthy:
			if d.Error != "" || len(d.Replicas) != 1 || d.Replicas[0].Partition != other || d.Usable <= 0 {
				t.Errorf("the healthy dir is described as %+v", d)
			}
		default:
			t.Errorf("unexpected dir %s", d.Path)
		}
	}
	table, _ := exec.CommandContext(ctx, ktoolBin, "log-dirs", "describe", "--brokers", b.Addr()).Output()
	if !strings.Contains(string(table), "offline: KAFKA_STORAGE_ERROR") {
		t.Errorf("the table does not show the failed dir:\n%s", table)
	}
	t.Logf("ktool log-dirs describe:\n%s", table)
}

// produceTo is produce for partition p.
func produceTo(ctx context.Context, cl *kgo.Client, topic string, p int32, key, value []byte) (int16, error) {
	code, err := produceRaw(ctx, cl, topic, p, key, value)
	if err != nil {
		return 0, fmt.Errorf("produce to %s-%d: %w", topic, p, err)
	}
	return code, nil
}
