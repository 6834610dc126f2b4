package assignor_test

import (
	"testing"

	"github.com/ktoolhq/ktool/assignor"
	"github.com/ktoolhq/ktool/assignor/assignortest"
)

func TestConformance(t *testing.T) {
	for _, a := range assignor.Builtins() {
		t.Run(a.Name(), func(t *testing.T) {
			t.Parallel()
			assignortest.Run(t, func() assignor.Assignor {
				b, _ := assignor.ByName(a.Name())
				return b
			})
		})
	}
}
