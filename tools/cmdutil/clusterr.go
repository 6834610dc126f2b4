package cmdutil

import (
	"errors"
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
)

// ClusterError explains a failed request: what was being done, which
// bootstrap brokers were asked, and what to check. Errors the cluster itself
// returned (a *kerr.Error) are passed on with their Kafka name.
func (f *Factory) ClusterError(doing string, err error) error {
	if err == nil {
		return nil
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return fmt.Errorf("%s: %w", doing, err)
	}
	brokers, berr := f.Brokers()
	if berr != nil {
		return fmt.Errorf("%s: %w", doing, err)
	}
	return fmt.Errorf("%s: %w (asked brokers %s; check that they run and that --brokers, KTOOL_BROKERS or the profile point at them)",
		doing, err, strings.Join(brokers, ","))
}
