package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ClusterError explains a failed request: what was being done, which
// bootstrap brokers were asked, and what to check. Errors the cluster itself
// returned (a *kerr.Error, or any answer that was not a failure to reach it)
// are passed on as they are: the hint to check --brokers only helps when the
// brokers did not answer.
func (f *Factory) ClusterError(doing string, err error) error {
	if err == nil {
		return nil
	}
	var ke *kerr.Error
	if errors.As(err, &ke) || !unreachable(err) {
		return fmt.Errorf("%s: %w", doing, err)
	}
	brokers, berr := f.Brokers()
	if berr != nil {
		return fmt.Errorf("%s: %w", doing, err)
	}
	return fmt.Errorf("%s: %w (asked brokers %s; check that they run and that --brokers, KTOOL_BROKERS or the profile point at them)",
		doing, err, strings.Join(brokers, ","))
}

// WithMessage joins a Kafka error code's error with the message the broker
// sent beside it. Brokers often repeat the error's own text in the message
// (ktool's did, "INVALID_TOPIC_EXCEPTION: …: INVALID_TOPIC_EXCEPTION: …"), so
// what err already says is said once.
func WithMessage(err error, msg string) error {
	if err == nil {
		return nil
	}
	msg = strings.TrimSpace(msg)
	text := err.Error()
	var ke *kerr.Error
	if errors.As(err, &ke) {
		for _, p := range []string{text, ke.Message} {
			msg = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(msg, p), ":"))
		}
		if msg == ke.Description {
			msg = ""
		}
	}
	if msg == "" || strings.Contains(text, msg) {
		return err
	}
	return fmt.Errorf("%w: %s", err, msg)
}

// unreachable reports whether err says the brokers could not be reached or
// did not answer in time, rather than answering with an error.
func unreachable(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	for _, target := range []error{context.DeadlineExceeded, io.EOF, io.ErrUnexpectedEOF,
		syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.EHOSTUNREACH, syscall.ENETUNREACH} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}
