package replica

import (
	"fmt"
	"path/filepath"
	"regexp"

	"github.com/twmb/franz-go/pkg/kerr"
)

var legalTopic = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)

// partitionDir is tp's directory in logDir. It is checked where it is built: a
// topic name Kafka does not allow, or any result that is not a direct child of
// logDir, is refused, so no request can name a path outside log.dirs.
func partitionDir(logDir string, tp TP) (string, error) {
	if !legalTopic.MatchString(tp.Topic) || tp.Topic == "." || tp.Topic == ".." || tp.Partition < 0 {
		return "", fmt.Errorf("%w: %q partition %d cannot name a log directory", kerr.InvalidTopicException, tp.Topic, tp.Partition)
	}
	root := filepath.Clean(logDir)
	dir := filepath.Join(root, tp.String())
	if filepath.Dir(dir) != root || filepath.Base(dir) != tp.String() {
		return "", fmt.Errorf("%w: %s resolves outside %s", kerr.InvalidTopicException, tp, root)
	}
	return dir, nil
}
