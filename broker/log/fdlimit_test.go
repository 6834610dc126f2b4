package log

import (
	"strings"
	"testing"
)

func TestPlanFiles(t *testing.T) {
	for _, c := range []struct {
		limit                        uint64
		partitions, reserve, setting int
		wantCache                    int
		wantErr                      []string
	}{
		{limit: 20000, partitions: 10000, reserve: 1024, wantCache: 4488},
		{limit: 20000, partitions: 0, reserve: 1024, wantCache: 9488},
		{limit: 20000, partitions: 10000, reserve: 1024, setting: 100, wantCache: 100},
		{limit: 1200, partitions: 100, reserve: 1024, wantCache: MinFileCache},
		{limit: 11088, partitions: 10000, reserve: 1024, wantCache: MinFileCache},
		{limit: 11087, partitions: 10000, reserve: 1024,
			wantErr: []string{"open-file limit is 11087", "needs at least 11088", "10000 partitions", "ulimit -n 11088", "LimitNOFILE=11088"}},
		{limit: 20000, partitions: 10000, reserve: 1024, setting: 9000,
			wantErr: []string{"needs at least 20024", "9000 for inactive segments"}},
	} {
		b, err := planFiles(c.limit, c.limit, c.partitions, c.reserve, c.setting)
		if c.wantErr != nil {
			if err == nil {
				t.Fatalf("%+v: no error", c)
			}
			for _, w := range c.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("%+v: error %q lacks %q", c, err, w)
				}
			}
			continue
		}
		if err != nil || b.CacheSize != c.wantCache {
			t.Fatalf("%+v: cache %d, %v; want %d", c, b.CacheSize, err, c.wantCache)
		}
	}
}
