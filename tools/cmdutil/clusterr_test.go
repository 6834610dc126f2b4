package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
)

func TestWithMessageSaysTheErrorOnce(t *testing.T) {
	for _, tc := range []struct {
		msg, want string
	}{
		{"", kerr.InvalidTopicException.Error()},
		{kerr.InvalidTopicException.Error(), kerr.InvalidTopicException.Error()},
		{kerr.InvalidTopicException.Error() + ": topic name \"a b\" has a space",
			kerr.InvalidTopicException.Error() + ": topic name \"a b\" has a space"},
		{"INVALID_TOPIC_EXCEPTION: name too long", kerr.InvalidTopicException.Error() + ": name too long"},
		{"name too long", kerr.InvalidTopicException.Error() + ": name too long"},
	} {
		got := WithMessage(kerr.InvalidTopicException, tc.msg)
		if got.Error() != tc.want {
			t.Errorf("WithMessage(%q) = %q, want %q", tc.msg, got, tc.want)
		}
		if !errors.Is(got, kerr.InvalidTopicException) {
			t.Errorf("WithMessage(%q) lost the Kafka error", tc.msg)
		}
		if n := strings.Count(got.Error(), "INVALID_TOPIC_EXCEPTION"); n != 1 {
			t.Errorf("WithMessage(%q) names the error %d times: %q", tc.msg, n, got)
		}
	}
	if WithMessage(nil, "x") != nil {
		t.Error("WithMessage(nil) is not nil")
	}
}

func TestClusterErrorHintsAtBrokersOnlyWhenUnreachable(t *testing.T) {
	f := &Factory{BrokersFlag: []string{"h1:9092"}}
	const hint = "check that they run"
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	for _, tc := range []struct {
		err  error
		hint bool
	}{
		{fmt.Errorf("unable to dial: %w", dial), true},
		{context.DeadlineExceeded, true},
		{kerr.PolicyViolation, false},
		{errors.New("broker is too old; the broker has already indicated it will not know how to handle the request"), false},
	} {
		got := f.ClusterError("creating topic", tc.err).Error()
		if strings.Contains(got, hint) != tc.hint {
			t.Errorf("ClusterError(%v) = %q; hint wanted: %v", tc.err, got, tc.hint)
		}
	}
}
