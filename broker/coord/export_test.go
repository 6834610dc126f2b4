package coord

import "time"

// SetNotificationExpiry shortens how old a notification must be before
// Follow purges it, for the length of a test.
func SetNotificationExpiry(d time.Duration) (restore func()) {
	old := notificationExpiry
	notificationExpiry = d
	return func() { notificationExpiry = old }
}
