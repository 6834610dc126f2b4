// Package uitest drives `ktool ui` (tools/ui) against in-process ktool
// clusters (broker/brokertest): the seed's walk-through in headless Chromium
// with chromedp, and the console's cost with many partitions. The console's
// own tests in tools/ui run against franz-go's kfake.
package uitest
