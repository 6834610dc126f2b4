// Package plugin implements `ktool plugin list|verify`, which show and check
// the assignor and codec plugins ktool finds, and the hidden
// `ktool __plugin serve KIND NAME` through which the ktool binary serves its
// own built-in plugins.
package plugin
