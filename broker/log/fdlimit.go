package log

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// MinFileCache is the least number of idle descriptors of inactive segments
// a broker keeps: below it reads of old segments open a file each time.
const MinFileCache = 64

// FileBudget is how a broker process spends its open-file limit: one
// descriptor per hosted partition (its active segment), a reserve for
// sockets and every other file, and the rest, up to half, for inactive
// segments (FileCache).
type FileBudget struct {
	Limit      uint64 // soft RLIMIT_NOFILE, after raising it to the hard limit
	Hard       uint64
	Partitions int
	Reserve    int
	CacheSize  int
}

// Need is the smallest limit that holds the budget's partitions.
func (b FileBudget) Need() uint64 {
	return uint64(b.Partitions) + uint64(b.Reserve) + uint64(max(b.CacheSize, MinFileCache))
}

// PlanFiles raises the soft open-file limit to the hard one (as Kafka's
// start scripts advise) and checks that it holds partitions active segments,
// reserve other descriptors and the segment cache: cacheSize when positive,
// else half of what is left, at least MinFileCache. The error says the
// limit, the need and how to raise it.
func PlanFiles(partitions, reserve, cacheSize int) (FileBudget, error) {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err != nil {
		return FileBudget{}, fmt.Errorf("reading the open-file limit: %w", err)
	}
	if rl.Cur < rl.Max {
		raised := unix.Rlimit{Cur: rl.Max, Max: rl.Max}
		if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &raised); err == nil {
			rl = raised
		}
	}
	return planFiles(rl.Cur, rl.Max, partitions, reserve, cacheSize)
}

func planFiles(limit, hard uint64, partitions, reserve, cacheSize int) (FileBudget, error) {
	b := FileBudget{Limit: limit, Hard: hard, Partitions: partitions, Reserve: reserve, CacheSize: cacheSize}
	need := b.Need()
	if limit < need {
		return b, fmt.Errorf("the open-file limit is %d (hard limit %d), and this broker needs at least %d: "+
			"%d partitions (one descriptor each for its active segment) + %d reserved for sockets and other files (log.fd.reserve) + %d for inactive segments (log.fd.cache.size, at least %d); "+
			"raise the limit to %d or more (ulimit -n %d in the shell that starts the broker, LimitNOFILE=%d in its systemd unit, or nofile in /etc/security/limits.conf) "+
			"or host fewer partitions on this broker",
			limit, hard, need, partitions, reserve, max(cacheSize, MinFileCache), MinFileCache, need, need, need)
	}
	if cacheSize <= 0 {
		spare := (limit - uint64(partitions) - uint64(reserve)) / 2
		b.CacheSize = int(max(min(spare, 1<<20), MinFileCache))
	}
	return b, nil
}
